//! The layers in front of a real server: an axum server on a loopback
//! port whose handler is slow (each answer's body stays open until the
//! check opens its gate), hyper's client over real connections, and what is
//! in flight counted from inside the server. Every wait is for something
//! the server or the client sees happen, bounded, never a sleep.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header::RETRY_AFTER, Request, Response};
use http_body::Frame;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::rt::TokioExecutor;
use tokio::sync::{oneshot, Notify};

use super::drive::{InflightVariant, Service};
use super::sim::REQUEST;
use super::{ShedPolicy, KEY, PRIORITY};

/// The end-to-end checks.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// A concurrency limit of 2 over real connections: a third request is
    /// let in only once a body has ended.
    Queue,
    /// A shedder (3 permits, 1 reserved, 1 per key): 429 and 503 at once
    /// with `Retry-After`, the reserved share, a permit back after a body.
    Shed,
}

/// The most a check waits for something to happen: well within the time a
/// check may take, so that a wait in vain is said as such.
const PATIENCE: Duration = Duration::from_secs(2);

#[derive(Default)]
struct State {
    /// Requests the handler got, and how many of their bodies are open.
    entered: usize,
    open: usize,
    most_open: usize,
    /// How many bodies were open inside when each call passed the layer.
    open_at_call: Vec<usize>,
    /// The layer's `poll_ready` answered `Pending`.
    waited: bool,
    /// The layer panicked inside the server, where and why.
    panicked: Option<String>,
    gates: HashMap<usize, oneshot::Sender<()>>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let r = f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
        self.changed.notify_waiters();
        r
    }

    /// Waits until `done` holds, at most [`PATIENCE`].
    async fn until(&self, what: &str, done: impl Fn(&State) -> bool) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if done(&self.state.lock().unwrap_or_else(|p| p.into_inner())) {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(format!("waited {PATIENCE:?} for {what}, in vain"));
            }
        }
    }

    fn open_gate(&self, id: usize) {
        if let Some(gate) = self.with(|s| s.gates.remove(&id)) {
            let _ = gate.send(());
        }
    }
}

/// A body that ends when its gate opens (or its sender is gone).
struct Gated {
    gate: oneshot::Receiver<()>,
    shared: Arc<Shared>,
    ended: bool,
}

impl Gated {
    fn end(&mut self) {
        if !self.ended {
            self.ended = true;
            self.shared.with(|s| s.open -= 1);
        }
    }
}

impl http_body::Body for Gated {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.ended {
            return Poll::Ready(None);
        }
        match Pin::new(&mut self.gate).poll(cx) {
            Poll::Ready(_) => {
                self.end();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Gated {
    fn drop(&mut self) {
        self.end();
    }
}

use std::future::Future;

/// The slow handler: counts what is inside and keeps each body open
/// until its gate opens.
fn handler(shared: Arc<Shared>) -> Service {
    Service::new(tower::service_fn(move |req: Request<Body>| {
        let shared = shared.clone();
        async move {
            let id = req
                .headers()
                .get(REQUEST)
                .and_then(|v| v.to_str().ok()?.parse::<usize>().ok())
                .unwrap_or(usize::MAX);
            let (tx, rx) = oneshot::channel();
            shared.with(|s| {
                s.entered += 1;
                s.open += 1;
                s.most_open = s.most_open.max(s.open);
                s.gates.insert(id, tx);
            });
            Ok(Response::new(Body::new(Gated {
                gate: rx,
                shared,
                ended: false,
            })))
        }
    }))
}

/// Outside the learner's layer: notes a `poll_ready` that waits, and how
/// many bodies are open inside when a call passes.
#[derive(Clone)]
struct Watcher {
    inner: Service,
    shared: Arc<Shared>,
}

impl tower::Service<Request<Body>> for Watcher {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        let Some(polled) = self.caught(|me| me.inner.poll_ready(cx)) else {
            return Poll::Ready(Ok(()));
        };
        if polled.is_pending() {
            self.shared.with(|s| s.waited = true);
        }
        // The handler never fails; were it to, the server answers 502.
        polled.map(|_| Ok(()))
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.shared.with(|s| {
            let open = s.open;
            s.open_at_call.push(open)
        });
        let failed = || {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = axum::http::StatusCode::BAD_GATEWAY;
            r
        };
        let Some(mut answer) = self.caught(|me| me.inner.call(req)) else {
            return Box::pin(async move { Ok(failed()) });
        };
        let mut me = self.clone();
        Box::pin(std::future::poll_fn(move |cx| {
            match me.caught(|_| answer.as_mut().poll(cx)) {
                Some(Poll::Ready(Ok(r))) => Poll::Ready(Ok(r)),
                Some(Poll::Pending) => Poll::Pending,
                Some(Poll::Ready(Err(_))) | None => Poll::Ready(Ok(failed())),
            }
        }))
    }
}

impl Watcher {
    /// `f`, whose panic (the learner's code panicking inside the server)
    /// is kept with its place for the check to report, not lost in a
    /// connection's task.
    fn caught<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> Option<R> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(self))) {
            Ok(r) => Some(r),
            Err(payload) => {
                let text = crate::watchdog::take_panic().unwrap_or_else(|| {
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "a panic".into())
                });
                self.shared.with(|s| s.panicked.get_or_insert(text).clone());
                None
            }
        }
    }
}

/// Runs a check on a runtime of its own.
pub fn run(which: Check, v: InflightVariant) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let outcome = runtime.block_on(scenario(which, v));
    runtime.shutdown_background();
    outcome
}

/// What the client saw of one request: its status and `Retry-After`.
type Seen = (u16, Option<String>);

struct Caller {
    base: String,
    hyper: Hyper<hyper_util::client::legacy::connect::HttpConnector, Body>,
}

impl Caller {
    /// Sends request `id` and returns what its answer's head said; its
    /// body is read to the end in a task of its own, which ends with it.
    async fn send(
        &self,
        id: usize,
        key: &str,
        critical: bool,
    ) -> Result<(Seen, tokio::task::JoinHandle<()>), String> {
        let mut b = Request::get(format!("{}/work", self.base))
            .header(REQUEST, id)
            .header(KEY, key);
        if critical {
            b = b.header(PRIORITY, "critical");
        }
        let req = b.body(Body::empty()).map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(PATIENCE, self.hyper.request(req))
            .await
            .map_err(|_| format!("request #{id} had no answer within {PATIENCE:?}"))?
            .map_err(|e| format!("request #{id} failed: {e}"))?;
        let seen = (
            answer.status().as_u16(),
            answer
                .headers()
                .get(RETRY_AFTER)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        );
        let mut body = answer.into_body();
        let reading = tokio::spawn(async move { while let Some(Ok(_)) = body.frame().await {} });
        Ok((seen, reading))
    }

    /// Sends request `id` in a task of its own, which ends when its body
    /// has been read to the end.
    fn spawn(self: &Arc<Self>, id: usize) -> tokio::task::JoinHandle<Result<Seen, String>> {
        let me = self.clone();
        tokio::spawn(async move {
            let (seen, reading) = me.send(id, "k", false).await?;
            let _ = reading.await;
            Ok(seen)
        })
    }
}

async fn scenario(which: Check, v: InflightVariant) -> Result<(), String> {
    let shared = Arc::new(Shared::default());
    let inner = handler(shared.clone());
    let layered = match which {
        Check::Queue => (v.concurrency)(2, inner)
            .map_err(|e| format!("ConcurrencyLimitLayer::new(2) refused: {e}"))?,
        Check::Shed => {
            (v.shed)(SHED, inner).map_err(|e| format!("ShedLayer::new({SHED:?}) refused: {e}"))?
        }
    };
    let app = axum::ServiceExt::<Request<Body>>::into_make_service(Watcher {
        inner: layered,
        shared: shared.clone(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("no loopback port: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let caller = Arc::new(Caller {
        base: format!("http://{addr}"),
        hyper: Hyper::builder(TokioExecutor::new()).build_http(),
    });
    let outcome = match which {
        Check::Queue => queue(&shared, &caller).await,
        Check::Shed => shed(&shared, &caller).await,
    };
    // Every gate opens, so that no body waits for ever.
    let ids: Vec<usize> = shared.with(|s| s.gates.keys().copied().collect());
    ids.into_iter().for_each(|id| shared.open_gate(id));
    server.abort();
    match shared.with(|s| s.panicked.take()) {
        Some(p) => Err(format!("your layer {p}, inside the server")),
        None => outcome,
    }
}

async fn queue(shared: &Arc<Shared>, caller: &Arc<Caller>) -> Result<(), String> {
    let first = [caller.spawn(0), caller.spawn(1)];
    shared
        .until("two requests to reach the handler", |s| s.entered == 2)
        .await?;
    let third = caller.spawn(2);
    shared
        .until(
            "the third request to wait in poll_ready or be let in",
            |s| s.waited || s.open_at_call.len() == 3,
        )
        .await?;
    let let_in = |s: &State| s.open_at_call.get(2).copied();
    if let Some(open) = shared.with(|s| let_in(s)) {
        if open >= 2 {
            return Err(format!(
                "with a limit of 2 over real connections, a third request passed the layer \
                 while {open} answers' bodies were still open inside the server: permits \
                 given back before the body ends, or a limit per clone"
            ));
        }
    }
    shared.open_gate(0);
    shared
        .until("the third request to be let in once a body ended", |s| {
            s.open_at_call.len() == 3 && s.entered == 3
        })
        .await?;
    for id in [1, 2] {
        shared.open_gate(id);
    }
    let mut statuses = vec![];
    for task in first.into_iter().chain([third]) {
        let seen = tokio::time::timeout(PATIENCE, task)
            .await
            .map_err(|_| format!("a request's body did not end within {PATIENCE:?}"))?;
        statuses.push(seen.map_err(|e| e.to_string())??.0);
    }
    let most = shared.with(|s| s.most_open);
    if statuses != [200, 200, 200] || most > 2 {
        return Err(format!(
            "the three requests were answered {statuses:?}, and at most {most} were inside at \
             once; the contract: 200 each, at most 2 at once"
        ));
    }
    Ok(())
}

/// The shedder of the end-to-end check.
pub const SHED: ShedPolicy = ShedPolicy {
    limit: 3,
    reserved: 1,
    per_key: 1,
    retry_after: Duration::from_secs(2),
};

async fn shed(shared: &Arc<Shared>, caller: &Arc<Caller>) -> Result<(), String> {
    let refused = |status: u16| (status, Some(SHED.retry_after.as_secs().to_string()));
    let mut reading = vec![];
    let steps: [(usize, &str, bool, Seen, &str); 6] = [
        (0, "a", false, (200, None), "the first of key a"),
        (1, "b", false, (200, None), "the first of key b"),
        (
            2,
            "a",
            false,
            refused(429),
            "a second of key a, whose one is in flight",
        ),
        (
            3,
            "c",
            false,
            refused(503),
            "a normal request with only the reserved permit free",
        ),
        (
            4,
            "c",
            true,
            (200, None),
            "a critical request, which may take the reserved permit",
        ),
        (
            5,
            "d",
            true,
            refused(503),
            "a critical request with every permit held",
        ),
    ];
    for (id, key, critical, want, what) in steps {
        let (got, body) = caller.send(id, key, critical).await?;
        if got != want {
            return Err(format!(
                "with {SHED:?} over real connections, #{id}, {what}, is answered {got:?}; the \
                 contract answers {want:?}"
            ));
        }
        reading.push(body);
    }
    shared.open_gate(0);
    if tokio::time::timeout(PATIENCE, reading.remove(0))
        .await
        .is_err()
    {
        return Err(format!(
            "with {SHED:?}, #0's body did not end within {PATIENCE:?} of its gate opening"
        ));
    }
    let (got, _body) = caller.send(6, "a", true).await?;
    if got != (200, None) {
        return Err(format!(
            "with {SHED:?}, once #0's body has been read to the end, a critical request of key \
             a is answered {got:?}; the contract answers 200: its permit and its key's count \
             came back when its body ended"
        ));
    }
    Ok(())
}
