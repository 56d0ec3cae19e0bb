//! Lesson 12's world in process, on virtual time: a script of requests
//! (when each comes, its key and priority, how long the inner service takes
//! to answer and then to send its body, and when its caller drops it), a
//! slow inner service that logs when each request reaches it, the driver of
//! [`crate::virtual_time`] that sends them through a learner's layer, and
//! the log of what happened, which the model checks and the drawings show.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header::RETRY_AFTER, Request, Response};
use http_body::Frame;
use http_body_util::BodyExt;
use tower::{Service as _, ServiceExt};

use super::drive::Service;
use super::{DelayPolicy, InnerError, ManualClock, ShedPolicy, Sleep, Timestamp, KEY, PRIORITY};
use crate::virtual_time::{run, Stuck, Task, Watch, HORIZON, MOST_STEPS};

/// Which of the learner's layers a script runs through.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Under {
    /// `ConcurrencyLimitLayer::new(limit)`.
    Concurrency(usize),
    Shed(ShedPolicy),
    Delay(DelayPolicy),
}

/// One request of a script.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Req {
    pub at: Timestamp,
    /// Its `x-api-key` header (`"a"`, `"A"`, `""`…), if it has one.
    pub key: Option<&'static str>,
    /// Its `x-priority` header (`"critical"`, `" Critical "`, `"low"`…),
    /// if it has one.
    pub priority: Option<&'static str>,
    /// How long the inner service takes to answer, once it has it.
    pub latency: Duration,
    /// How long the answer's body then takes to end.
    pub body: Duration,
    /// When the caller drops it (its future, or the body it is reading).
    pub drop_at: Option<Timestamp>,
    /// The inner service fails it after its latency, with no answer.
    pub fails: bool,
    /// Its caller waits for the service to be ready, then drops the
    /// service without calling it.
    pub gives_up: bool,
    /// Its caller asks the service to be ready twice before it calls it
    /// (tower allows it: a service already ready stays ready).
    pub ready_twice: bool,
}

/// Requests through one layer.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Script {
    pub under: Under,
    pub requests: Vec<Req>,
}

/// One thing that happened to a request, at an instant of virtual time.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// The caller asks for it.
    Start { request: usize, at: Timestamp },
    /// The service was ready, and its caller dropped it without a call.
    GaveUp { request: usize, at: Timestamp },
    /// The inner service got it.
    Enter { request: usize, at: Timestamp },
    /// The caller got its answer's status and `Retry-After`.
    Headers {
        request: usize,
        at: Timestamp,
        status: u16,
        retry_after: Option<String>,
    },
    /// The caller read its answer's body to the end.
    End { request: usize, at: Timestamp },
    /// The caller got the inner service's failure: no answer.
    Failed { request: usize, at: Timestamp },
    /// The answer's body held this many bytes (the inner service's and
    /// the layers' answers hold none).
    Body {
        request: usize,
        at: Timestamp,
        bytes: usize,
    },
    /// The caller dropped it.
    Drop { request: usize, at: Timestamp },
    /// It was sent to a clone of the inner service whose `poll_ready` had
    /// not answered `Ready` (tower's services may refuse such a call).
    Unready { request: usize, at: Timestamp },
}

impl Event {
    pub fn request(&self) -> usize {
        match self {
            Event::Start { request, .. }
            | Event::GaveUp { request, .. }
            | Event::Enter { request, .. }
            | Event::Headers { request, .. }
            | Event::End { request, .. }
            | Event::Failed { request, .. }
            | Event::Body { request, .. }
            | Event::Drop { request, .. }
            | Event::Unready { request, .. } => *request,
        }
    }

    pub fn at(&self) -> Timestamp {
        match self {
            Event::Start { at, .. }
            | Event::GaveUp { at, .. }
            | Event::Enter { at, .. }
            | Event::Headers { at, .. }
            | Event::End { at, .. }
            | Event::Failed { at, .. }
            | Event::Body { at, .. }
            | Event::Drop { at, .. }
            | Event::Unready { at, .. } => *at,
        }
    }

    /// As a log shows it: `  0.250 s  #3 enters`.
    pub fn line(&self) -> String {
        let what = match self {
            Event::Start { .. } => "asks".to_string(),
            Event::GaveUp { .. } => "was ready, and its caller gave up".to_string(),
            Event::Enter { .. } => "enters the inner service".to_string(),
            Event::Headers {
                status,
                retry_after,
                ..
            } => match retry_after {
                Some(r) => format!("is answered {status}, Retry-After: {r}"),
                None => format!("is answered {status}"),
            },
            Event::End { .. } => "has read its body to the end".to_string(),
            Event::Drop { .. } => "is dropped by its caller".to_string(),
            Event::Failed { .. } => "fails: the inner service gave no answer".to_string(),
            Event::Body { bytes, .. } => format!("had {bytes} bytes of body"),
            Event::Unready { .. } => "is sent to a clone of the inner service that was never made \
                                      ready (call without its poll_ready)"
                .to_string(),
        };
        format!("{:>9}  #{} {what}", seconds(self.at()), self.request())
    }
}

/// An instant in seconds, to the microsecond: `0.250001 s`.
pub fn seconds(at: Timestamp) -> String {
    let ns = at.as_nanos();
    let micros = ns / 1_000;
    let text = format!("{}.{:06}", micros / 1_000_000, micros % 1_000_000);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// What happened in a run: its events in order, and, if it could not
/// finish, why.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub events: Vec<Event>,
    pub stuck: Option<String>,
}

impl Log {
    /// Each request's events, in order.
    pub fn of(&self, request: usize) -> Vec<Event> {
        self.events
            .iter()
            .filter(|e| e.request() == request)
            .cloned()
            .collect()
    }

    pub fn text(&self) -> String {
        let mut out = String::new();
        for e in &self.events {
            let _ = writeln!(out, "{}", e.line());
        }
        if let Some(s) = &self.stuck {
            let _ = writeln!(out, "  (stuck: {s})");
        }
        out
    }
}

/// The header the inner service finds a request's number in.
pub const REQUEST: &str = "x-request";

type Shared = Arc<Mutex<Vec<Event>>>;

fn log(events: &Shared, event: Event) {
    events.lock().unwrap_or_else(|p| p.into_inner()).push(event);
}

/// The slow inner service: logs when a request reaches it, answers 200
/// after the request's latency and ends the body after its body time.
pub struct Inner {
    clock: ManualClock,
    requests: Arc<Vec<Req>>,
    events: Shared,
    /// This clone's `poll_ready` answered `Ready` and no call used it yet.
    ready: bool,
}

/// A clone shares the log and the clock, and was not made ready: tower's
/// `poll_ready` readies the one service it is called on.
impl Clone for Inner {
    fn clone(&self) -> Self {
        Inner {
            clock: self.clock.clone(),
            requests: self.requests.clone(),
            events: self.events.clone(),
            ready: false,
        }
    }
}

impl tower::Service<Request<Body>> for Inner {
    type Response = Response<Body>;
    type Error = InnerError;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Response<Body>, InnerError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), InnerError>> {
        self.ready = true;
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let at = self.clock.now();
        let id = request
            .headers()
            .get(REQUEST)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
            .unwrap_or(usize::MAX);
        if !std::mem::take(&mut self.ready) {
            log(&self.events, Event::Unready { request: id, at });
        }
        log(&self.events, Event::Enter { request: id, at });
        let (latency, body, fails) = self
            .requests
            .get(id)
            .map_or((Duration::ZERO, Duration::ZERO, false), |r| {
                (r.latency, r.body, r.fails)
            });
        let clock = self.clock.clone();
        Box::pin(async move {
            let answered = at + latency;
            clock.sleep_until(answered).await;
            if fails {
                return Err(InnerError("the backend reset the connection".into()));
            }
            let sleep = clock.sleep_until(answered + body);
            Ok(Response::new(Body::new(SlowBody { sleep: Some(sleep) })))
        })
    }
}

/// A body that ends when its sleep does.
struct SlowBody {
    sleep: Option<Sleep>,
}

impl http_body::Body for SlowBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.sleep.as_mut() {
            Some(sleep) => match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.sleep = None;
                    Poll::Ready(None)
                }
                Poll::Pending => Poll::Pending,
            },
            None => Poll::Ready(None),
        }
    }
}

/// The request the caller sends for `r`, numbered `id`.
fn request(id: usize, r: &Req) -> Request<Body> {
    let mut builder = Request::builder().uri("/work").header(REQUEST, id);
    if let Some(k) = r.key {
        // Bytes past ASCII are allowed in a header (obs-text), not readable
        // as text.
        let value = axum::http::HeaderValue::from_bytes(k.as_bytes()).expect("a header value");
        builder = builder.header(KEY, value);
    }
    if let Some(p) = r.priority {
        builder = builder.header(PRIORITY, p);
    }
    builder.body(Body::empty()).expect("a valid request")
}

struct Starts(Shared);

impl Watch<()> for Starts {
    fn started(&mut self, id: usize, at: Timestamp) {
        log(&self.0, Event::Start { request: id, at });
    }

    fn dropped(&mut self, id: usize, at: Timestamp) {
        log(&self.0, Event::Drop { request: id, at });
    }
}

/// The layer a script is under, around `inner`, built by `build`.
pub type Build<'a> = &'a dyn Fn(Under, ManualClock, Service) -> Result<Service, String>;

/// Runs `script` through the layer `build` makes, on virtual time, and
/// returns its log. Every request's caller clones the one service.
pub fn run_script(script: &Script, build: Build<'_>) -> Result<Log, String> {
    let clock = ManualClock::new(Timestamp::ZERO);
    let events: Shared = Arc::default();
    let inner = Inner {
        clock: clock.clone(),
        requests: Arc::new(script.requests.clone()),
        events: events.clone(),
        ready: false,
    };
    let service = build(script.under, clock.clone(), Service::new(inner))?;
    let tasks = script
        .requests
        .iter()
        .enumerate()
        .map(|(id, r)| {
            let (mut service, events, clock) = (service.clone(), events.clone(), clock.clone());
            let (req, gives_up, ready_twice) = (request(id, r), r.gives_up, r.ready_twice);
            Task {
                at: r.at,
                start: Box::new(move || {
                    Box::pin(async move {
                        let Ok(service) = service.ready().await else {
                            let at = clock.now();
                            return log(&events, Event::Failed { request: id, at });
                        };
                        let Ok(service) = (if ready_twice {
                            service.ready().await
                        } else {
                            Ok(service)
                        }) else {
                            let at = clock.now();
                            return log(&events, Event::Failed { request: id, at });
                        };
                        if gives_up {
                            log(
                                &events,
                                Event::GaveUp {
                                    request: id,
                                    at: clock.now(),
                                },
                            );
                            return;
                        }
                        let Ok(response) = service.call(req).await else {
                            let at = clock.now();
                            return log(&events, Event::Failed { request: id, at });
                        };
                        log(
                            &events,
                            Event::Headers {
                                request: id,
                                at: clock.now(),
                                status: response.status().as_u16(),
                                retry_after: response
                                    .headers()
                                    .get(RETRY_AFTER)
                                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
                            },
                        );
                        let mut body = response.into_body();
                        let mut bytes = 0;
                        while let Some(Ok(frame)) = body.frame().await {
                            bytes += frame.data_ref().map_or(0, |d| d.len());
                        }
                        if bytes > 0 {
                            let at = clock.now();
                            log(
                                &events,
                                Event::Body {
                                    request: id,
                                    at,
                                    bytes,
                                },
                            );
                        }
                        log(
                            &events,
                            Event::End {
                                request: id,
                                at: clock.now(),
                            },
                        );
                    }) as _
                }),
                drop_at: r.drop_at,
            }
        })
        .collect();
    drop(service);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let mut watch = Starts(events.clone());
    let outcome = runtime.block_on(tokio::task::unconstrained(run(
        tasks,
        clock,
        Arc::default(),
        &mut watch,
    )));
    let stuck = outcome.err().map(|s| stuck_text(&s));
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|p| p.into_inner()));
    Ok(Log { events, stuck })
}

fn stuck_text(stuck: &Stuck) -> String {
    let ids = |ids: &[usize]| {
        ids.iter()
            .map(|i| format!("#{i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match stuck {
        Stuck::NeverWoken(waiting) => format!(
            "{} still wait, and nothing will ever wake them: a permit that was never given \
             back, or a waiter that was never woken",
            ids(waiting)
        ),
        Stuck::PastHorizon(waiting, at) => format!(
            "{} still wait {} after the last request came, for {at}",
            ids(waiting),
            seconds(Timestamp::ZERO + HORIZON)
        ),
        Stuck::TooManySteps => format!(
            "the run took more than {MOST_STEPS} polls: a future that wakes itself for ever"
        ),
    }
}
