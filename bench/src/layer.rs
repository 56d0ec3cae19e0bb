//! Lesson 07's layer on the same service as tower_governor's: what each adds
//! to a request. Every contender is the same tiny inner service behind a
//! layer (or none), keyed by the peer address of the request, with a real
//! clock each layer reads itself. The requests come from 10,000 clients in
//! turn, each far under its policy of 1,000 a second, as a busy API's
//! clients mostly are: every request is allowed, and every layer does the
//! work of an allowed request, for one client among many.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, Response};
use kata::http::{KeyRule, MonotonicClock, Policy};
use tower::util::BoxCloneService;
use tower::{Layer, Service, ServiceExt};

use crate::lesson_06::Gcra;

/// A service as every contender is measured.
pub type Svc = BoxCloneService<Request<Body>, Response<Body>, Infallible>;

/// The service behind every layer: a fixed 200 with its `Content-Type`, as
/// an axum handler returning a string answers (so its response's header map
/// is already allocated when a layer adds to it, as a real service's is).
pub fn inner() -> impl Service<
    Request<Body>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    tower::service_fn(|_req: Request<Body>| async {
        let mut response = Response::new(Body::from("ok"));
        response.headers_mut().insert(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        Ok(response)
    })
}

/// How many clients take turns.
pub const CLIENTS: u32 = 10_000;

/// One request from the next of [`CLIENTS`] clients (10.0.0.0 and on), as
/// axum's connection info gives it.
pub fn request() -> Request<Body> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let client = NEXT.fetch_add(1, Ordering::Relaxed) % CLIENTS;
    let mut req = Request::new(Body::empty());
    let address = Ipv4Addr::from(0x0a00_0000 + client);
    req.extensions_mut()
        .insert(ConnectInfo(SocketAddr::from((address, 40_000))));
    req
}

/// Each client's quota: 1,000 a second. A client's turn comes every
/// 10,000 requests, a few milliseconds apart: far under it.
pub const QUOTA: u64 = 1_000;

pub fn policy() -> Policy {
    Policy::new("api", QUOTA, Duration::from_secs(1))
}

/// Lesson 06's GCRA for the policy: a bucket of 1,000, one back every ms.
pub fn limiter() -> Arc<Gcra> {
    Arc::new(Gcra::new(QUOTA, Duration::from_millis(1)).expect("a valid configuration"))
}

pub fn bare() -> Svc {
    BoxCloneService::new(inner())
}

/// The reference layer over lesson 06's GCRA, keyed by the peer address.
pub fn reference() -> Svc {
    let layer = crate::lesson_07::RateLimitLayer::new(
        limiter(),
        policy(),
        KeyRule::by_address(),
        MonotonicClock::new(),
    )
    .expect("a valid policy");
    BoxCloneService::new(layer.layer(inner()))
}

/// tower_governor's layer (governor's GCRA, keyed by the peer address), with
/// its `x-ratelimit-*` headers or without.
pub fn tower_governor(headers: bool) -> Svc {
    use tower_governor::governor::GovernorConfigBuilder;
    use tower_governor::GovernorLayer;
    // The same policy: a burst of 1,000, one back every ms.
    let burst = QUOTA as u32;
    if headers {
        let config = GovernorConfigBuilder::default()
            .per_millisecond(1)
            .burst_size(burst)
            .use_headers()
            .finish()
            .expect("a valid configuration");
        BoxCloneService::new(GovernorLayer::new(config).layer(inner()))
    } else {
        let config = GovernorConfigBuilder::default()
            .per_millisecond(1)
            .burst_size(burst)
            .finish()
            .expect("a valid configuration");
        BoxCloneService::new(GovernorLayer::new(config).layer(inner()))
    }
}

/// The least a layer that sends both headers adds: no key, no clock, no
/// limiter, only `RateLimit` and `RateLimit-Policy` inserted into each
/// response's header map, their values built once (a clone is a reference
/// count). What a layer costs past this is its own work.
pub fn two_headers_only() -> Svc {
    use axum::http::{HeaderName, HeaderValue};
    let ratelimit = HeaderValue::from_static("\"api\";r=999");
    let policy = HeaderValue::from_static("\"api\";q=1000;w=1");
    let layer = tower::util::MapResponseLayer::new(move |mut response: Response<Body>| {
        let headers = response.headers_mut();
        headers.insert(HeaderName::from_static("ratelimit-policy"), policy.clone());
        headers.insert(HeaderName::from_static("ratelimit"), ratelimit.clone());
        response
    });
    BoxCloneService::new(layer.layer(inner()))
}

/// Every contender, named.
pub fn contenders() -> Vec<(&'static str, Svc)> {
    vec![
        ("no-layer", bare()),
        ("two-headers-only", two_headers_only()),
        ("07-reference-layer", reference()),
        ("tower-governor", tower_governor(false)),
        ("tower-governor-headers", tower_governor(true)),
    ]
}

/// A runtime to drive services on, one thread, as the benchmarks do.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
}

/// One request through `svc`, to its response's status.
pub fn once(rt: &tokio::runtime::Runtime, svc: &mut Svc) -> u16 {
    rt.block_on(async {
        let ready = svc.ready().await.unwrap_or_else(|e| match e {});
        let response = ready.call(request()).await.unwrap_or_else(|e| match e {});
        response.status().as_u16()
    })
}
