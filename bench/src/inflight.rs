//! Lesson 12's concurrency limit beside tower's, on the same service: what
//! each adds to a request. Every contender answers every request (a limit
//! of 100, one request at a time), and every request's body is read to its
//! end, since that is when lesson 12's layer gives its permit back (tower's
//! gives it back when the response future completes).

use std::time::Duration;

use axum::body::Body;
use axum::http::Request;
use http_body_util::BodyExt;
use kata::inflight::ShedPolicy;
use tower::{Layer, Service, ServiceBuilder, ServiceExt};

use crate::layer::{inner, Svc};
use crate::lesson_12::{ConcurrencyLimitLayer, ShedLayer};

/// The limit every contender has: far above the one request in flight.
pub const LIMIT: usize = 100;

/// Every contender, named.
pub fn contenders() -> Vec<(&'static str, Svc)> {
    let shed = ShedLayer::new(ShedPolicy {
        limit: LIMIT,
        reserved: 0,
        per_key: LIMIT,
        retry_after: Duration::from_secs(1),
    })
    .expect("a valid policy");
    vec![
        ("no-limit", Svc::new(inner())),
        (
            "body-held-only",
            Svc::new(
                tower::util::MapResponseLayer::new(|r: axum::http::Response<Body>| {
                    r.map(|body| kata::inflight::hold_until_done(body, ()))
                })
                .layer(inner()),
            ),
        ),
        (
            "tower-concurrency-limit",
            Svc::new(tower::limit::ConcurrencyLimitLayer::new(LIMIT).layer(inner())),
        ),
        (
            "12-concurrency-limit",
            Svc::new(
                ConcurrencyLimitLayer::new(LIMIT)
                    .expect("a valid limit")
                    .layer(inner()),
            ),
        ),
        (
            "tower-load-shed",
            Svc::new(
                ServiceBuilder::new()
                    .map_err(|_: tower::BoxError| -> std::convert::Infallible {
                        unreachable!("every request is let in")
                    })
                    .load_shed()
                    .concurrency_limit(LIMIT)
                    .service(inner()),
            ),
        ),
        ("12-shed", Svc::new(shed.layer(inner()))),
    ]
}

/// One request through `svc`, its body read to the end: its status.
pub fn once(rt: &tokio::runtime::Runtime, svc: &mut Svc) -> u16 {
    rt.block_on(async {
        let ready = svc.ready().await.unwrap_or_else(|e| match e {});
        let response = ready
            .call(Request::new(Body::empty()))
            .await
            .unwrap_or_else(|e| match e {});
        let status = response.status().as_u16();
        let _ = response.into_body().collect().await;
        status
    })
}
