//! Lesson 11: the client's half, meeting a 429 without making it worse.
//!
//! Read `lessons/lesson_11.md` first. Then make every check of
//! `cargo run -- test 11` pass by filling in this file, milestone by
//! milestone.
//!
//! The rule, from lessons/CONTRACT.md: `server_wait` reads how long an
//! answer asks the client to wait (`Retry-After` first, then the RateLimit
//! field's `t`); `RetryBudget` lets a retry through only while retries stay
//! a share of the requests; `RetryLayer` wraps a client service and, for
//! each request, waits for its partition, sends it, and retries what is safe
//! to retry after a backoff of the server's wait plus a jitter, paced to the
//! quota the server announces. What a dropped request held is given back.

#![allow(unused_variables, dead_code)] // remove once you fill it in

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

// Locks and atomics from the lesson's facade only, so that a race is
// checked under loom and a hang reported with its line.
#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, AtomicU64, Mutex, Ordering};
use axum::body::Bytes;
#[allow(unused_imports)] // what you will need
use axum::http::{header::RETRY_AFTER, HeaderMap, Method, Request, Response};
#[allow(unused_imports)]
use kata::client::{
    copy_request, httpdate, parse_list, BudgetPolicy, ClientError, ClientPolicy, Clock, Jitter,
    PolicyError, Timestamp, IDEMPOTENCY_KEY, RATELIMIT, RATELIMIT_POLICY,
};
#[allow(unused_imports)]
use tower::{Layer, Service, ServiceExt};

/// How long an answer that arrived at wall-clock time `wall` asks the
/// client to wait before it sends to the same server again:
/// - a `Retry-After` of whole seconds (`"120"`), or an HTTP-date
///   (`"Thu, 01 Jan 2026 00:02:00 GMT"`, read with
///   `httpdate::parse_http_date`, from `kata::client`): the time until then, zero if it is past;
/// - without a readable `Retry-After`, the largest `t` (seconds) among the
///   `RateLimit` field's items whose `r` is 0;
/// - else `None`.
pub fn server_wait(headers: &HeaderMap, wall: SystemTime) -> Option<Duration> {
    todo!("lesson 11, milestone 1: read Retry-After, then RateLimit's t")
}

/// A retry budget shared by every clone of a client (see the contract):
/// each request deposits `retry_percent` hundredths of a retry, each retry
/// withdraws 100, on top of a reserve of `min_per_sec × ttl` retries; each
/// deposit and withdrawal counts for the ten slots (tenths of `ttl`) from
/// the one it was made in.
pub struct RetryBudget {
    policy: BudgetPolicy,
}

impl RetryBudget {
    /// `TtlOutOfRange` unless `ttl` is whole seconds from 1 to 60, then
    /// `PercentOutOfRange` if `retry_percent` is over 1000.
    pub fn new(policy: BudgetPolicy) -> Result<RetryBudget, PolicyError> {
        todo!("lesson 11, milestone 1: validate the budget")
    }

    /// A request was made at `now`.
    pub fn deposit(&self, now: Timestamp) {
        todo!("lesson 11, milestone 3: deposit")
    }

    /// Whether a retry decided at `now` may go: the budget holds at least
    /// one retry (100). If so, it is taken.
    pub fn withdraw(&self, now: Timestamp) -> bool {
        todo!("lesson 11, milestone 3: withdraw")
    }

    /// A retry withdrawn at `taken_at` was never sent (its request was
    /// dropped at `now`): it counts again, in its own slot, if that slot
    /// still counts.
    pub fn give_back(&self, taken_at: Timestamp, now: Timestamp) {
        todo!("lesson 11, milestone 3: give a withdrawal back")
    }
}

/// The layer. Every clone of it, and every service it makes, must share
/// one budget, one `Jitter` and one view of each server.
pub struct RetryLayer<C> {
    policy: ClientPolicy,
    clock: C,
}

impl<C: Clone> Clone for RetryLayer<C> {
    fn clone(&self) -> Self {
        RetryLayer {
            policy: self.policy,
            clock: self.clock.clone(),
        }
    }
}

impl<C: Clock> RetryLayer<C> {
    /// In this order: `max_attempts` of 0 is `ZeroAttempts`, a zero `base`
    /// `ZeroBase`, a `cap` below `base` `CapBelowBase`; then the budget's
    /// errors, as `RetryBudget::new` gives them.
    pub fn new(policy: ClientPolicy, clock: C) -> Result<RetryLayer<C>, PolicyError> {
        todo!("lesson 11, milestone 1: validate the policy and build the layer")
    }
}

impl<S, C: Clone> Layer<S> for RetryLayer<C> {
    type Service = Retry<S, C>;

    fn layer(&self, inner: S) -> Retry<S, C> {
        Retry {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service the layer wraps around a client.
pub struct Retry<S, C> {
    inner: S,
    layer: RetryLayer<C>,
}

impl<S: Clone, C: Clone> Clone for Retry<S, C> {
    fn clone(&self) -> Self {
        Retry {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<S, C> Service<Request<Bytes>> for Retry<S, C>
where
    S: Service<Request<Bytes>, Response = Response<Bytes>, Error = ClientError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    C: Clock,
{
    type Response = Response<Bytes>;
    type Error = ClientError;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Bytes>, ClientError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        todo!("lesson 11, milestone 2: ready when the inner client is")
    }

    /// Waits for the request's server, sends it, and retries it while the
    /// contract says so.
    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        todo!("lesson 11: send, read the answer, retry what is safe")
    }
}
