//! Lesson 11's world in process: a script of calls and of what the server
//! answers, a driver that polls every request's future itself and moves
//! the [`ManualClock`](super::ManualClock) only when every request waits on
//! it, and the log of everything that happened, in order, which the model
//! checks ([`super::model`]) and the drawings show.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::virtual_time::{run, Stuck, Task, TaskFuture, Watch, HORIZON, MOST_STEPS};
use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Request, Response};
use tower::util::BoxCloneService;
use tower::ServiceExt;

use super::script::{Call, Reply, Script, Wait, REQUEST_ID};
use super::{ClientError, ClientPolicy, ManualClock, Timestamp, RATELIMIT, RATELIMIT_POLICY};
use crate::layer::model::expected;
use crate::layer::Policy;
use crate::models::{Algorithm, Model};

/// A client as the checks hold it: the learner's layer over an inner
/// service, boxed.
pub type Client = BoxCloneService<Request<Bytes>, Response<Bytes>, ClientError>;

/// One thing that happened, at an instant of the manual clock.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Event {
    /// The caller asks the client for a request.
    Call { request: usize, at: Timestamp },
    /// The client drew a jitter of `value` ns of at most `cap`, while
    /// request `request` was being polled.
    Draw {
        request: Option<usize>,
        at: Timestamp,
        cap: Duration,
        value: u64,
    },
    /// An attempt reached the server; `changed` says how it differs from
    /// the request the caller made, if it does.
    Send {
        request: usize,
        attempt: u32,
        at: Timestamp,
        changed: Option<String>,
    },
    /// The server's answer to an attempt.
    Answer {
        request: usize,
        attempt: u32,
        at: Timestamp,
        answer: Answer,
    },
    /// The caller got its answer from the client.
    Return {
        request: usize,
        at: Timestamp,
        outcome: Answer,
    },
    /// The caller dropped the request's future.
    Drop { request: usize, at: Timestamp },
}

/// A response's status and headers, or a failure with its message.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Answer {
    Status(u16, Vec<(String, String)>),
    Failed(String),
}

impl Answer {
    pub fn of(result: &Result<Response<Bytes>, ClientError>) -> Answer {
        match result {
            Ok(r) => Answer::Status(
                r.status().as_u16(),
                r.headers()
                    .iter()
                    .filter(|(n, _)| n.as_str() != "content-length" && n.as_str() != "date")
                    .map(|(n, v)| (n.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                    .collect(),
            ),
            Err(e) => Answer::Failed(e.0.clone()),
        }
    }

    /// The headers, as a map.
    pub fn headers(&self) -> HeaderMap {
        let mut map = HeaderMap::new();
        if let Answer::Status(_, headers) = self {
            for (n, v) in headers {
                if let (Ok(n), Ok(v)) = (
                    n.parse::<axum::http::HeaderName>(),
                    HeaderValue::from_str(v),
                ) {
                    map.append(n, v);
                }
            }
        }
        map
    }

    /// As the drawings show it: `503 retry-after: 2`, `no answer`.
    pub fn short(&self) -> String {
        match self {
            Answer::Status(s, headers) => {
                let mut out = s.to_string();
                for (n, v) in headers {
                    if matches!(n.as_str(), "retry-after" | RATELIMIT | RATELIMIT_POLICY) {
                        let _ = write!(out, ", {n}: {v}");
                    }
                }
                out
            }
            Answer::Failed(m) => format!("no answer ({m})"),
        }
    }
}

thread_local! {
    static LOG: RefCell<Option<Recorder>> = const { RefCell::new(None) };
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

#[derive(Clone)]
struct Recorder {
    events: Arc<Mutex<Vec<Event>>>,
    clock: ManualClock,
}

/// Records a jitter draw (called by [`super::Jitter::up_to`]), when a run
/// is being recorded on this thread.
pub fn note_draw(cap: Duration, value: u64) {
    LOG.with(|log| {
        if let Some(r) = log.borrow().as_ref() {
            let request = CURRENT.with(Cell::get);
            let at = r.clock.now();
            r.push(Event::Draw {
                request,
                at,
                cap,
                value,
            });
        }
    });
}

impl Recorder {
    fn push(&self, e: Event) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e);
    }
}

/// Records an event of the current run (the server's side).
pub fn note(event: Event) {
    LOG.with(|log| {
        if let Some(r) = log.borrow().as_ref() {
            r.push(event);
        }
    });
}

/// The request id a request carries.
pub fn request_id(req: &Request<Bytes>) -> Option<usize> {
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// The server the properties talk to: answers at once, by the instant and
/// the host, and keeps its limit.
#[derive(Clone)]
pub struct SimServer {
    script: Arc<Script>,
    clock: ManualClock,
    state: Arc<Mutex<ServerState>>,
}

#[derive(Default)]
struct ServerState {
    attempts: BTreeMap<usize, u32>,
    limits: BTreeMap<char, Model>,
}

impl SimServer {
    pub fn new(script: Arc<Script>, clock: ManualClock) -> SimServer {
        SimServer {
            script,
            clock,
            state: Arc::default(),
        }
    }

    fn answer(&self, req: &Request<Bytes>) -> (usize, u32, Answer) {
        let at = self.clock.now();
        let id = request_id(req).unwrap_or(usize::MAX);
        let host = req
            .uri()
            .host()
            .and_then(|h| h.chars().next())
            .unwrap_or('?');
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let attempt = {
            let n = state.attempts.entry(id).or_default();
            *n += 1;
            *n
        };
        let call = self.script.calls.get(id);
        let wall_secs = super::WALL_ORIGIN_SECS + at.as_nanos() / 1_000_000_000;
        let header_of = |w: Wait| match w {
            Wait::Secs(s) => s.to_string(),
            Wait::Date(s) => httpdate::fmt_http_date(
                std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(wall_secs + s),
            ),
            Wait::Garbage => "soon".to_string(),
        };
        let h = |pairs: &[(&str, String)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.clone()))
                .collect()
        };
        if let Some(status) = call.and_then(|c| c.answer_with) {
            return (id, attempt, Answer::Status(status, vec![]));
        }
        let phase = self
            .script
            .phases
            .iter()
            .find(|p| p.host == host && p.from <= at && at < p.until);
        let answer = match phase.map(|p| p.reply) {
            Some(Reply::Limited {
                retry_after,
                t,
                also,
            }) => {
                let mut headers = vec![];
                if let Some(w) = retry_after {
                    headers.push(("retry-after", header_of(w)));
                }
                if let Some(t) = t {
                    let also = also
                        .map(|a| format!(", \"day\";r=0;t={a}"))
                        .unwrap_or_default();
                    headers.push((
                        RATELIMIT,
                        format!("\"api\";r=0;t={t}, \"burst\";r=5;t=1{also}"),
                    ));
                }
                Answer::Status(429, h(&headers))
            }
            Some(Reply::Unavailable { retry_after }) => Answer::Status(
                503,
                h(&retry_after
                    .map(|w| vec![("retry-after", header_of(w))])
                    .unwrap_or_default()),
            ),
            Some(Reply::Status(s)) => Answer::Status(s, vec![]),
            Some(Reply::NoAnswer) => Answer::Failed("connection refused".into()),
            None => match self.script.limit {
                None => Answer::Status(200, vec![]),
                Some((quota, window)) => {
                    let policy = Policy::new("api", quota, Duration::from_secs(window));
                    let model = state.limits.entry(host).or_insert_with(|| {
                        Algorithm::TokenBucket.model(crate::layer::drive::limiter_config(
                            &policy,
                            Algorithm::TokenBucket,
                        ))
                    });
                    let e = expected(&policy, &model.decide("client", at.as_nanos()));
                    let mut headers = vec![
                        (RATELIMIT, format!("{}, \"day\";r=99999", e.ratelimit)),
                        (
                            RATELIMIT_POLICY,
                            format!("{}, \"day\";q=100000;w=86400", e.ratelimit_policy),
                        ),
                    ];
                    if let Some(r) = e.retry_after {
                        headers.insert(0, ("retry-after", r));
                    }
                    Answer::Status(e.status, h(&headers))
                }
            },
        };
        (id, attempt, answer)
    }
}

impl tower::Service<Request<Bytes>> for SimServer {
    type Response = Response<Bytes>;
    type Error = ClientError;
    type Future = TaskFuture<Result<Response<Bytes>, ClientError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    /// Decides the answer when the attempt arrives, and gives it
    /// `latency` later.
    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let at = self.clock.now();
        let (request, attempt, answer) = self.answer(&req);
        let changed = self
            .script
            .calls
            .get(request)
            .and_then(|c| changed(&c.request(request), &req));
        note(Event::Send {
            request,
            attempt,
            at,
            changed,
        });
        let clock = self.clock.clone();
        let latency = self.script.latency;
        Box::pin(async move {
            clock.sleep_until(at + latency).await;
            note(Event::Answer {
                request,
                attempt,
                at: clock.now(),
                answer: answer.clone(),
            });
            match answer {
                Answer::Status(status, headers) => {
                    let mut response = Response::new(Bytes::from_static(b"answer"));
                    *response.status_mut() =
                        axum::http::StatusCode::from_u16(status).expect("a valid status");
                    *response.headers_mut() = Answer::Status(status, headers).headers();
                    Ok(response)
                }
                Answer::Failed(m) => Err(ClientError(m)),
            }
        })
    }
}

/// How a request sent differs from the one the caller made, if it does:
/// its method, URI, headers or body.
pub fn changed(made: &Request<Bytes>, sent: &Request<Bytes>) -> Option<String> {
    if made.method() != sent.method() {
        return Some(format!(
            "its method is {}, not {}",
            sent.method(),
            made.method()
        ));
    }
    if made.uri() != sent.uri() {
        return Some(format!("its URI is {}, not {}", sent.uri(), made.uri()));
    }
    for (name, value) in made.headers() {
        if sent.headers().get(name) != Some(value) {
            return Some(format!("its {name} header is missing or changed"));
        }
    }
    (made.body() != sent.body()).then(|| "its body is not the one the caller gave".to_string())
}

/// What a run left: every event, and why it ended early, if it did.
#[derive(Clone, Debug, Default)]
pub struct Log {
    pub events: Vec<Event>,
    pub stuck: Option<String>,
}

/// What the log records of the driver's tasks, and what a client's code
/// reads while it runs (the log to write to, the request being polled).
struct Recording {
    recorder: Recorder,
}

impl Watch<Result<Response<Bytes>, ClientError>> for Recording {
    fn driving(&mut self, on: bool) {
        LOG.with(|l| *l.borrow_mut() = on.then(|| self.recorder.clone()));
    }

    fn polling(&mut self, id: Option<usize>) {
        CURRENT.with(|c| c.set(id));
    }

    fn started(&mut self, request: usize, at: Timestamp) {
        self.recorder.push(Event::Call { request, at });
    }

    fn ended(
        &mut self,
        request: usize,
        at: Timestamp,
        output: Result<Response<Bytes>, ClientError>,
    ) {
        self.recorder.push(Event::Return {
            request,
            at,
            outcome: Answer::of(&output),
        });
    }

    fn dropped(&mut self, request: usize, at: Timestamp) {
        self.recorder.push(Event::Drop { request, at });
    }
}

/// Makes `calls` through `clients` (each call through a fresh clone of its
/// client, as a server's handlers would) as tasks of the virtual-time
/// driver ([`crate::virtual_time::run`]), which moves `clock` only when no
/// request can go on and nothing is in flight (`in_flight`, counted by an
/// inner service over a real socket). Records every event.
pub async fn drive(
    clients: Vec<Client>,
    calls: Vec<Call>,
    clock: ManualClock,
    in_flight: Arc<AtomicUsize>,
) -> Log {
    let events = Arc::new(Mutex::new(vec![]));
    let mut recording = Recording {
        recorder: Recorder {
            events: events.clone(),
            clock: clock.clone(),
        },
    };
    let tasks = calls
        .iter()
        .enumerate()
        .map(|(id, call)| {
            let (client, request) = (clients[call.client].clone(), call.request(id));
            Task {
                at: call.at,
                start: Box::new(move || Box::pin(client.oneshot(request)) as TaskFuture<_>),
                drop_at: call.drop_at,
            }
        })
        .collect();
    let stuck = run(tasks, clock, in_flight, &mut recording)
        .await
        .err()
        .map(|stuck| match stuck {
            Stuck::NeverWoken(waiting) => format!(
                "{} never ended: nothing is in flight and no sleep of the clock is pending, so \
                 it waits for something that never comes (a sleep that is not the clock's, or \
                 a future that is never woken)",
                requests(&waiting)
            ),
            Stuck::PastHorizon(waiting, at) => format!(
                "{} still waited {} s after the last call, for a sleep until {at} that no \
                 answer of the script asks for",
                requests(&waiting),
                HORIZON.as_secs()
            ),
            Stuck::TooManySteps => {
                format!("the run took more than {MOST_STEPS} steps (a request that never ends?)")
            }
        });
    let events = std::mem::take(&mut *events.lock().unwrap_or_else(|p| p.into_inner()));
    Log { events, stuck }
}

fn requests(ids: &[usize]) -> String {
    let names: Vec<String> = ids.iter().map(|i| format!("#{i}")).collect();
    match names.len() {
        1 => format!("request {}", names[0]),
        _ => format!("requests {}", names.join(", ")),
    }
}

/// Runs a script in process: one client per `script.clients`, each built
/// by `build` over the sim server (client `i` with the policy's seed plus
/// `i`), on a tokio runtime of one thread
/// without timers (a client sleeps only through its clock).
pub fn run_in_process(
    script: &Script,
    build: impl Fn(ClientPolicy, ManualClock, Client) -> Result<Client, String>,
) -> Result<Log, String> {
    let clock = ManualClock::new(Timestamp::ZERO);
    let server = SimServer::new(Arc::new(script.clone()), clock.clone());
    let mut clients = vec![];
    for i in 0..script.clients.max(1) {
        let policy = ClientPolicy {
            seed: script.policy.seed.wrapping_add(i as u64),
            ..script.policy
        };
        clients.push(build(
            policy,
            clock.clone(),
            BoxCloneService::new(server.clone()),
        )?);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    // Unconstrained: the driver polls every request inside one poll of its
    // own, so tokio's cooperative budget must not turn a ready lock into a
    // wake that only comes once the driver yields.
    Ok(runtime.block_on(tokio::task::unconstrained(drive(
        clients,
        script.calls.clone(),
        clock,
        Arc::default(),
    ))))
}
