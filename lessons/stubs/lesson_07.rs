//! Lesson 07: the limiter in front of an HTTP service.
//!
//! Read `lessons/lesson_07.md` first. Then make every test of
//! `cargo test --test lesson_07` pass by filling in this file.
//!
//! The rule, from lessons/CONTRACT.md: `RateLimitLayer::new` validates the
//! policy; every clone of the layer and of its services shares the one
//! limiter it was given. A request is keyed (`api:<key>` or `ip:<client>`),
//! the limiter is asked once at the clock's `now`; an allowed request goes
//! to the inner service and its response gets `RateLimit-Policy` and
//! `RateLimit`; a denied one gets a 429 with `Retry-After`, both headers and
//! a problem body, and never reaches the inner service.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

// Locks and atomics from the lesson's facade only, so that a hang is
// reported with its line.
#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, AtomicBool, Mutex, Ordering};
use axum::body::Body;
#[allow(unused_imports)] // what you will need
use axum::extract::ConnectInfo;
#[allow(unused_imports)]
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
#[allow(unused_imports)]
use kata::http::{
    Clock, KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
#[allow(unused_imports)]
use kata::{Decision, RateLimiter};
use tower::{Layer, Service};

/// The layer. Every clone of it, and every service it makes, must share
/// one limiter (and one "already reported" flag).
pub struct RateLimitLayer<L, C> {
    limiter: Arc<L>,
    policy: Policy,
    keys: KeyRule,
    clock: C,
}

impl<L, C: Clone> Clone for RateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            limiter: self.limiter.clone(),
            policy: self.policy.clone(),
            keys: self.keys.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<L: RateLimiter, C: Clock> RateLimitLayer<L, C> {
    /// In this order: an empty policy name is `EmptyName`, one with a
    /// character outside printable ASCII (0x20 to 0x7E) `InvalidName`; a
    /// quota of 0 is `ZeroQuota`; a window that is not a whole number of
    /// seconds, at least one, is `WindowNotWholeSeconds`.
    pub fn new(
        limiter: Arc<L>,
        policy: Policy,
        keys: KeyRule,
        clock: C,
    ) -> Result<Self, PolicyError> {
        let _ = (limiter, policy, keys, clock);
        todo!("lesson 07: validate the policy and build the layer")
    }
}

impl<S, L, C: Clone> Layer<S> for RateLimitLayer<L, C> {
    type Service = RateLimit<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service the layer wraps around another.
pub struct RateLimit<S, L, C> {
    inner: S,
    layer: RateLimitLayer<L, C>,
}

impl<S: Clone, L, C: Clone> Clone for RateLimit<S, L, C> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, L, C> Service<Request<Body>> for RateLimit<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    L: RateLimiter,
    C: Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        let _ = (&mut self.inner, cx);
        todo!("lesson 07: ready when the inner service is")
    }

    /// Keys the request, asks the limiter once, and answers.
    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let _ = (&self.layer, req);
        todo!("lesson 07: key the request, ask the limiter, answer")
    }
}
