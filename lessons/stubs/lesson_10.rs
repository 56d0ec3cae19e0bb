//! Lesson 10: lesson 08's limiter, async, on one Redis or a Redis Cluster.
//!
//! Read `lessons/lesson_10.md` first. Then make every test of
//! `cargo test --test lesson_10` pass by filling in this file. The tests
//! start their own redis-server and Redis Cluster (redis-server 7 or later
//! must be installed; see lesson 08).
//!
//! The rules, scripts and keys are lesson 08's: start from your lesson 08
//! file. What changes is how a script reaches Redis: through the redis
//! crate's async API on tokio, one multiplexed connection shared by every
//! call, each call bounded by `settings.timeout`. The layer is lesson 07's
//! (start from your lesson 07 file), over an `AsyncRateLimiter`: its
//! service's future awaits the limiter's answer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

// std's locks and atomics from the lesson's facade only, so that a hang is
// reported with its line (tokio's are yours to choose).
#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, AtomicBool, Mutex, Ordering};
use axum::body::Body;
#[allow(unused_imports)] // what you will need
use axum::extract::ConnectInfo;
#[allow(unused_imports)]
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
#[allow(unused_imports)]
use kata::async_redis::{metric, LocalLimiter, Reason, Redis, Settings};
#[allow(unused_imports)]
use kata::http::{
    KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
#[allow(unused_imports)]
use kata::redis::{Clock, OnFailure, RedisError, Rule};
#[allow(unused_imports)] // `LocalLimiter::check` is `RateLimiter`'s
use kata::RateLimiter;
use kata::{AsyncRateLimiter, ConfigError, Decision, Timestamp};
#[allow(unused_imports)]
use redis::aio::MultiplexedConnection;
#[allow(unused_imports)]
use redis::cluster_async::ClusterConnection;
#[allow(unused_imports)]
use redis::{AsyncConnectionConfig, Script};
use tower::{Layer, Service};

pub struct AsyncRedisLimiter {
    // The rule, the settings, the script for the rule, the shared
    // connection once open, and the `LocalLimiter` (lesson 09's bounded
    // store, `settings.local`) for `OnFailure::Local`, built once.
    rule: Rule,
}

impl AsyncRedisLimiter {
    /// Checks the rule (`rule.validate()`) and prepares the script.
    /// Connects to nothing yet: the first call does.
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        let _ = settings;
        todo!("lesson 10: validate {rule:?} and prepare the script")
    }

    /// Redis's answer, or the error that kept Redis from answering: lesson
    /// 08's script on the shared connection, awaited, within
    /// `settings.timeout`.
    pub async fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let _ = (&self.rule, key, now);
        todo!("lesson 10: run the rule's script on the shared connection")
    }
}

impl AsyncRateLimiter for AsyncRedisLimiter {
    /// `try_check`, or, when it fails, what `settings.on_failure` says;
    /// counted in `metric::DECISIONS` by outcome, and a fallback decision
    /// in `metric::FALLBACKS` by its `Reason` too.
    async fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (key, now);
        todo!("lesson 10: try_check, then the failure policy; count the decision")
    }
}

/// Lesson 07's layer over an async limiter. Every clone of it, and every service it makes, must share
/// one limiter (and one "already reported" flag).
pub struct AsyncRateLimitLayer<L, C> {
    limiter: Arc<L>,
    policy: Policy,
    keys: KeyRule,
    clock: C,
    /// Whether a missing peer address was reported: one flag for every
    /// clone (or keep everything the clones share behind one `Arc`).
    reported: Arc<AtomicBool>,
}

impl<L, C: Clone> Clone for AsyncRateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimitLayer {
            limiter: self.limiter.clone(),
            policy: self.policy.clone(),
            keys: self.keys.clone(),
            clock: self.clock.clone(),
            reported: self.reported.clone(),
        }
    }
}

impl<L: AsyncRateLimiter, C: kata::http::Clock> AsyncRateLimitLayer<L, C> {
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
        todo!("lesson 10: lesson 07's checks of the policy, and the layer")
    }
}

impl<S, L, C: Clone> Layer<S> for AsyncRateLimitLayer<L, C> {
    type Service = AsyncRateLimit<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        AsyncRateLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service the layer wraps around another.
pub struct AsyncRateLimit<S, L, C> {
    inner: S,
    layer: AsyncRateLimitLayer<L, C>,
}

impl<S: Clone, L, C: Clone> Clone for AsyncRateLimit<S, L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimit {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, L, C> Service<Request<Body>> for AsyncRateLimit<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    L: AsyncRateLimiter + 'static,
    C: kata::http::Clock + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        let _ = (&mut self.inner, cx);
        todo!("lesson 10: ready when the inner service is")
    }

    /// Keys the request, then returns a future that awaits the limiter's
    /// answer once and answers (the inner service that `poll_ready` made
    /// ready moves into it; a clone takes its place).
    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let _ = (&self.layer, req);
        todo!("lesson 10: key the request, then await the limiter and answer")
    }
}
