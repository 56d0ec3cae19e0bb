//! How an HTTP timeline drives a layer: the `http-layer` kind's driver.
//!
//! The layer under test is built over a [`TestLimiter`] (the harness's
//! model of the lesson's algorithm, which records every key it is asked
//! for) and wraps an [`Echo`] service (which counts its calls and checks
//! that each followed a `poll_ready`). Each request of a timeline goes
//! through the service its `via` names, on a fresh current-thread runtime,
//! with the [`ManualClock`] set to its instant.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;
use std::net::SocketAddr;
use tower::util::BoxCloneService;
use tower::{Service, ServiceExt};

use super::exchange::{Call, HttpTimeline, Observed, Via};
use super::{ManualClock, Policy, PolicyError, Report};
use crate::decision::{Decision, RateLimiter};
use crate::models::{Algorithm, Model};
use crate::time::Timestamp;
use crate::timeline::Config;
use crate::watchdog::progress;

/// The limiter behind the layer in the checks: the harness's model of the
/// lesson's algorithm, recording each call. Cloning it copies its state,
/// as tower's own `RateLimit` does: a layer shares its limiter through the
/// `Arc` it was given, and a copy would count apart.
pub struct TestLimiter {
    model: Mutex<Model>,
    calls: Arc<Mutex<Vec<(String, u64)>>>,
}

impl TestLimiter {
    pub fn new(algorithm: Algorithm, policy: &Policy) -> TestLimiter {
        TestLimiter {
            model: Mutex::new(algorithm.model(limiter_config(policy, algorithm))),
            calls: Arc::default(),
        }
    }

    /// Every `(key, now)` it was asked, by it and by its copies.
    pub fn calls(&self) -> Arc<Mutex<Vec<(String, u64)>>> {
        self.calls.clone()
    }
}

impl Clone for TestLimiter {
    fn clone(&self) -> Self {
        TestLimiter {
            model: Mutex::new(self.model.lock().unwrap_or_else(|p| p.into_inner()).clone()),
            calls: self.calls.clone(),
        }
    }
}

/// Lesson 10's layer is built over async limiters: the same answers,
/// decided when asked and given after one turn of the runtime, as a
/// limiter that waits on the network gives them (a layer that polls the
/// answer once, or blocks on it, does not get it).
impl crate::decision::AsyncRateLimiter for TestLimiter {
    fn check(
        &self,
        key: &str,
        now: Timestamp,
    ) -> impl std::future::Future<Output = Decision> + Send {
        let decision = RateLimiter::check(self, key, now);
        async move {
            tokio::task::yield_now().await;
            decision
        }
    }
}

impl RateLimiter for TestLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((key.to_string(), now.as_nanos()));
        self.model
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .decide(key, now.as_nanos())
    }
}

/// The limiter's configuration for a policy: a limit of its quota per its
/// window; for a token bucket, a capacity of its quota refilled over the
/// window (one token every `window / quota`). A window past `u64::MAX`
/// nanoseconds, which no test limiter is built with, saturates.
pub fn limiter_config(policy: &Policy, algorithm: Algorithm) -> Config {
    let window = u64::try_from(policy.window.as_nanos()).unwrap_or(u64::MAX);
    match algorithm {
        Algorithm::TokenBucket => Config::new(policy.quota, (window / policy.quota.max(1)).max(1)),
        _ => Config::new(policy.quota, window),
    }
}

/// What the inner service answers with.
pub const INNER_BODY: &str = "hello from the inner service\n";

/// The service behind the layer: answers 200 with headers and a body of
/// its own (among them rate-limit headers of its own, which the layer must
/// replace), and records which request it was called for. A call that no
/// `poll_ready` of the same service instance came before is recorded too:
/// a clone is not ready until it is polled.
/// Each instance answers its first `poll_ready` with `Pending` (and wakes
/// the task at once), so that a layer must pass readiness on as it comes.
#[derive(Default)]
pub struct Echo {
    ready: bool,
    polled: bool,
    log: Arc<Mutex<EchoLog>>,
}

impl Clone for Echo {
    fn clone(&self) -> Self {
        Echo {
            ready: false,
            polled: false,
            log: self.log.clone(),
        }
    }
}

#[derive(Default)]
struct EchoLog {
    /// Each call: its request's number, and the request as it arrived.
    calls: Vec<(usize, Seen)>,
    unready: usize,
}

impl Echo {
    /// How many times it (or a clone) was called.
    pub fn calls(&self) -> usize {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .calls
            .len()
    }

    /// How many of those calls no `poll_ready` of the same instance came
    /// before.
    pub fn unready_calls(&self) -> usize {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).unready
    }
}

/// The header API keys are sent in when the setup configures none, and a
/// decoy line when it configures another.
pub const DECOY_API_KEY_HEADER: &str = "x-api-key";

/// A request as a service sees it: its peer address (`ConnectInfo`), method,
/// URI and every header line.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Seen {
    peer: Option<SocketAddr>,
    method: String,
    uri: String,
    headers: Vec<(String, Vec<u8>)>,
}

impl Seen {
    pub fn of(req: &Request<Body>) -> Seen {
        Seen {
            peer: req
                .extensions()
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| *addr),
            method: req.method().to_string(),
            uri: req.uri().to_string(),
            headers: req
                .headers()
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
        }
    }
}

/// The request header that numbers each request for [`Echo`].
pub const REQUEST_ID: &str = "x-kata-request";

impl Service<Request<Body>> for Echo {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = std::future::Ready<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if !std::mem::replace(&mut self.polled, true) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.ready = true;
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let id = req
            .headers()
            .get(REQUEST_ID)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX);
        let seen = Seen::of(&req);
        let (status, retry_after) = super::model::inner_answer(
            req.headers()
                .get(super::model::INNER_ANSWER)
                .and_then(|v| v.to_str().ok()),
        );
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.calls.push((id, seen));
        if !std::mem::take(&mut self.ready) {
            log.unready += 1;
        }
        self.polled = false;
        let mut response = Response::builder().status(status);
        if let Some(seconds) = retry_after {
            response = response.header("retry-after", seconds);
        }
        for (name, value) in super::model::INNER_HEADERS {
            response = response.header(*name, *value);
        }
        let response = response
            .header("ratelimit", "\"inner\";r=99")
            .header("ratelimit-policy", "\"inner\";q=99;w=99")
            .body(Body::from(INNER_BODY))
            .expect("a valid response");
        std::future::ready(Ok(response))
    }
}

/// The service a driver hands out.
pub type Svc = BoxCloneService<Request<Body>, Response<Body>, Infallible>;

/// A learner's layer, built for one setup, with its service.
pub trait Layered: Send {
    /// The service a request goes through, as `via` says: the same service
    /// as before, a clone of it, or a new one from a clone of the layer.
    fn service(&mut self, via: Via) -> &mut Svc;
}

/// What a driver's layer is built from.
pub struct Parts {
    pub limiter: TestLimiter,
    pub policy: Policy,
    pub keys: super::KeyRule,
    pub clock: ManualClock,
    pub inner: Echo,
}

/// Builds the learner's layer and its first service; `Err` is the
/// constructor's answer.
pub type BuildLayer = fn(Parts) -> Result<Box<dyn Layered>, PolicyError>;

/// Puts the learner's layer on an axum router, for the end-to-end check.
pub type BuildRouter = fn(
    axum::Router,
    TestLimiter,
    Policy,
    super::KeyRule,
    ManualClock,
) -> Result<axum::Router, PolicyError>;

/// One implementation of lesson 07 compiled into its test binary.
#[derive(Clone, Copy)]
pub struct HttpVariant {
    pub file: &'static str,
    pub source: &'static str,
    pub build: BuildLayer,
    pub router: BuildRouter,
    /// Whether the layer is usable over a limiter that is not `Clone`.
    pub over_any_limiter: fn() -> bool,
}

impl HttpVariant {
    pub fn path(&self) -> String {
        self.file.to_string()
    }
}

/// A [`Layered`] over any layer: what the `http-layer` kind's `variant!` wraps
/// the learner's type in.
pub struct Driven {
    /// A new service from a clone of the layer.
    make: Box<dyn Fn() -> Svc + Send>,
    service: Svc,
    scratch: Option<Svc>,
}

impl Driven {
    pub fn boxed<L>(layer: L, inner: Echo) -> Box<dyn Layered>
    where
        L: tower::Layer<Echo> + Clone + Send + 'static,
        L::Service: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
            + Clone
            + Send
            + 'static,
        <L::Service as Service<Request<Body>>>::Future: Send + 'static,
    {
        let make = move || BoxCloneService::new(layer.clone().layer(inner.clone()));
        Box::new(Driven {
            service: make(),
            make: Box::new(make),
            scratch: None,
        })
    }
}

impl Layered for Driven {
    fn service(&mut self, via: Via) -> &mut Svc {
        match via {
            Via::Same => &mut self.service,
            Via::Clone => self.scratch.insert(self.service.clone()),
            Via::Layer => self.scratch.insert((self.make)()),
        }
    }
}

/// The HTTP request a call stands for (request number `i`).
pub fn request(call: &Call, api_key_header: Option<&str>, i: usize) -> Request<Body> {
    let mut req = Request::builder()
        .method(call.method.as_str())
        .uri(call.path.as_str())
        .body(Body::empty())
        .expect("a valid request");
    let headers = req.headers_mut();
    for line in &call.forwarded {
        headers.append(
            "x-forwarded-for",
            HeaderValue::from_bytes(line).expect("generated lines are valid header values"),
        );
    }
    for (name, value) in &call.other {
        headers.append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
            HeaderValue::from_str(value).expect("a valid header value"),
        );
    }
    // The key lines go under the configured header, or under `x-api-key`
    // when none is configured (where they must be ignored); with another
    // header configured, a decoy `x-api-key` line goes along.
    let name = api_key_header.unwrap_or(DECOY_API_KEY_HEADER);
    for line in &call.api_keys {
        headers.append(
            axum::http::HeaderName::from_bytes(name.as_bytes()).expect("a valid header name"),
            HeaderValue::from_bytes(line).expect("generated lines are valid header values"),
        );
    }
    if name != DECOY_API_KEY_HEADER {
        headers.append(DECOY_API_KEY_HEADER, HeaderValue::from_static("decoy"));
    }
    headers.insert(REQUEST_ID, HeaderValue::from(i));
    if let Some(peer) = call.socket() {
        req.extensions_mut().insert(ConnectInfo(peer));
    }
    req
}

/// A whole run of a timeline through one implementation.
pub struct Run {
    /// One per request.
    pub answers: Vec<Observed>,
    pub reported: Vec<super::LayerError>,
    /// Calls of the inner service no `poll_ready` came before.
    pub unready_calls: usize,
}

/// Runs a timeline through a fresh layer of `variant`. `Err` when the
/// layer refuses a valid policy.
pub fn run(
    variant: HttpVariant,
    algorithm: Algorithm,
    timeline: &HttpTimeline,
) -> Result<Run, String> {
    let algorithm = timeline.setup.rule(algorithm);
    let limiter = TestLimiter::new(algorithm, &timeline.setup.policy);
    let checks = limiter.calls();
    let clock = ManualClock::new(Timestamp::ZERO);
    let inner = Echo::default();
    let log = inner.log.clone();
    let (report, reported) = Report::collect();
    let parts = Parts {
        limiter,
        policy: timeline.setup.policy.clone(),
        keys: timeline.setup.key_rule(report),
        clock: clock.clone(),
        inner,
    };
    let mut layered = (variant.build)(parts).map_err(|e| {
        format!(
            "RateLimitLayer::new returned Err(PolicyError::{e:?}) for a valid policy ({:?})",
            timeline.setup
        )
    })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let mut answers = Vec::with_capacity(timeline.calls.len());
    for (i, call) in timeline.calls.iter().enumerate() {
        progress(i);
        // The clock reads a nanosecond early while the service gets ready,
        // and the request's instant when it is called: the limiter is asked
        // at the time of the call.
        clock.set(Timestamp::from_nanos(call.at.saturating_sub(1)));
        let before_checks = checks.lock().unwrap_or_else(|p| p.into_inner()).len();
        let req = request(call, timeline.setup.api_key_header.as_deref(), i);
        let sent = Seen::of(&req);
        let service = layered.service(call.via);
        let response = runtime.block_on(async {
            let ready: &mut Svc = service.ready().await.unwrap_or_else(|e| match e {});
            clock.set(Timestamp::from_nanos(call.at));
            let answer = ready.call(req);
            // And a nanosecond late while the answer is awaited: the work
            // of `call` is done in `call`.
            clock.set(Timestamp::from_nanos(call.at.saturating_add(1)));
            let response = answer.await.unwrap_or_else(|e| match e {});
            let (parts, body) = response.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes().to_vec())
                .unwrap_or_else(|e| format!("(the body could not be read: {e})").into_bytes());
            (parts, body)
        });
        let (parts, body) = response;
        let (inner_calls, inner_request_changed) = {
            let log = log.lock().unwrap_or_else(|p| p.into_inner());
            let mine = log.calls.iter().filter(|(id, _)| *id == i);
            let changed = mine.clone().any(|(_, seen)| *seen != sent);
            (mine.count(), changed)
        };
        let asked = checks.lock().unwrap_or_else(|p| p.into_inner())[before_checks..].to_vec();
        answers.push(Observed {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .map(|(n, v)| (n.as_str().to_string(), v.as_bytes().to_vec()))
                .collect(),
            body,
            inner_calls,
            inner_request_changed,
            checks: asked,
        });
    }
    let unready_calls = log.lock().unwrap_or_else(|p| p.into_inner()).unready;
    Ok(Run {
        answers,
        reported: reported.all(),
        unready_calls,
    })
}

/// Whether a layer type can wrap a service over a limiter that is not
/// `Clone`, found at compile time without failing the build: method
/// resolution picks [`probe::Works`] where the bounds hold (autoref-based
/// specialisation) and [`probe::Fails`] elsewhere.
pub mod probe {
    use std::convert::Infallible;
    use std::marker::PhantomData;

    use axum::body::Body;
    use axum::http::{Request, Response};
    use tower::{Layer, Service};

    use super::Echo;
    use crate::decision::{Decision, RateLimiter};
    use crate::time::Timestamp;

    /// A limiter that is not `Clone`, as none of lessons 02–06 is.
    pub struct Unclonable;

    impl RateLimiter for Unclonable {
        fn check(&self, _: &str, _: Timestamp) -> Decision {
            Decision::Allowed { remaining: 0 }
        }
    }

    impl crate::decision::AsyncRateLimiter for Unclonable {
        async fn check(&self, _: &str, _: Timestamp) -> Decision {
            Decision::Allowed { remaining: 0 }
        }
    }

    pub struct Probe<T>(PhantomData<T>);

    impl<T> Probe<T> {
        pub fn new() -> Self {
            Probe(PhantomData)
        }
    }

    impl<T> Default for Probe<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    pub trait Works {
        fn works(&self) -> bool {
            true
        }
    }

    impl<T> Works for &Probe<T>
    where
        T: Layer<Echo> + Clone + Send + Sync + 'static,
        T::Service: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
    {
    }

    pub trait Fails {
        fn works(&self) -> bool {
            false
        }
    }

    impl<T> Fails for Probe<T> {}
}
