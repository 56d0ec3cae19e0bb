//! Lesson 12: limits on what is in flight.
//!
//! Read `lessons/lesson_12.md` first. Then make every check of
//! `cargo run -- test 12` pass by filling in this file, milestone by
//! milestone.
//!
//! The rule, from lessons/CONTRACT.md: `Permits` are shared by every clone
//! and give back what a dropped `Permit` held; `ConcurrencyLimitLayer`
//! reserves a permit in `poll_ready` (waiting there while none is free) and
//! its answer's body holds it until the body has ended or is dropped;
//! `ShedLayer` answers 429 or 503 with `Retry-After` at once instead of
//! waiting, keeping a share for critical requests; `DelayQueue` is nginx's
//! `limit_req` with `burst` and `delay`; `Aimd` and `Gradient` find the
//! limit from latency.

#![allow(unused_variables, dead_code)] // remove once you fill it in

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

// Locks and atomics from the lesson's facade only, so that a race is
// checked under loom and a hang reported with its line.
#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, Mutex};
use axum::body::Body;
#[allow(unused_imports)] // what you will need
use axum::http::{header::RETRY_AFTER, Request, Response, StatusCode};
#[allow(unused_imports)]
use kata::inflight::{
    hold_until_done, Admit, AimdPolicy, Clock, DelayPolicy, GradientPolicy, PolicyError, Priority,
    Sample, ShedPolicy, Timestamp, KEY,
};
use tower::{Layer, Service};

/// A set of permits every clone shares: at most `limit` held at once, of
/// which a normal request may hold only `limit - reserved`.
#[derive(Clone)]
pub struct Permits {
    // Your shared state, behind an `Arc` (cloning `Permits` shares it).
}

/// One permit: given back when it is dropped (`impl Drop`).
pub struct Permit {}

impl Permits {
    /// `ZeroLimit` if `limit` is 0, then `ReservedNotBelowLimit` unless
    /// `reserved < limit`.
    pub fn new(limit: usize, reserved: usize) -> Result<Permits, PolicyError> {
        todo!("lesson 12, milestone 1: permits")
    }

    /// A permit if one is free to a request of this priority (a critical
    /// one may take the reserved permits too), else `None`.
    pub fn try_acquire(&self, priority: Priority) -> Option<Permit> {
        todo!("lesson 12, milestone 1: take a permit")
    }

    /// How many permits are held now.
    pub fn in_flight(&self) -> usize {
        todo!("lesson 12, milestone 1: count what is held")
    }

    /// A permit if one is free, else `Pending`, with the task woken once a
    /// permit may be free again.
    pub fn poll_acquire(&self, priority: Priority, cx: &mut Context<'_>) -> Poll<Permit> {
        todo!("lesson 12, milestone 2: wait for a permit")
    }

    /// A new limit, at least `reserved + 1`: permits held above it stay
    /// held, none is given until fewer are held than the limit, and the
    /// tasks waiting in `poll_acquire` are woken.
    pub fn set_limit(&self, limit: usize) {
        todo!("lesson 12, milestone 1: move the limit")
    }
}

/// The boxed future every layer here answers with.
pub type Answer<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

/// At most `limit` requests in flight over every clone of the service.
#[derive(Clone)]
pub struct ConcurrencyLimitLayer {}

impl ConcurrencyLimitLayer {
    pub fn new(limit: usize) -> Result<ConcurrencyLimitLayer, PolicyError> {
        todo!("lesson 12, milestone 2: the concurrency limit")
    }
}

impl<S> Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;

    fn layer(&self, inner: S) -> ConcurrencyLimit<S> {
        todo!("lesson 12, milestone 2: the concurrency limit")
    }
}

pub struct ConcurrencyLimit<S> {
    inner: S,
}

impl<S: Clone> Clone for ConcurrencyLimit<S> {
    fn clone(&self) -> Self {
        todo!("lesson 12, milestone 2: a clone shares the permits")
    }
}

impl<S> Service<Request<Body>> for ConcurrencyLimit<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    /// Reserves a permit for the next `call`, waiting while none is free.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        todo!("lesson 12, milestone 2: reserve a permit")
    }

    /// Uses the reservation: the answer's body holds the permit.
    fn call(&mut self, request: Request<Body>) -> Self::Future {
        todo!("lesson 12, milestone 2: hold it until the body is done")
    }
}

/// Load shedding: a permit free at once, or 503 at once; a key with
/// `per_key` requests in flight is answered 429.
#[derive(Clone)]
pub struct ShedLayer {}

impl ShedLayer {
    /// The permits' errors, then `ZeroPerKey`, then
    /// `RetryAfterNotWholeSeconds`.
    pub fn new(policy: ShedPolicy) -> Result<ShedLayer, PolicyError> {
        todo!("lesson 12, milestone 3: the shedder")
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Shed<S> {
        todo!("lesson 12, milestone 3: the shedder")
    }
}

#[derive(Clone)]
pub struct Shed<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for Shed<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        todo!("lesson 12, milestone 3: 429, 503 or through")
    }
}

/// nginx's `limit_req` with `burst` and `delay`: a leaky bucket whose
/// queue holds at most `burst` requests.
pub struct DelayQueue {}

impl DelayQueue {
    /// `ZeroRate`, then `DelayAboveBurst`.
    pub fn new(policy: DelayPolicy) -> Result<DelayQueue, PolicyError> {
        todo!("lesson 12, milestone 4: the delay queue")
    }

    /// What a request arriving at `now` is answered.
    pub fn admit(&self, now: Timestamp) -> Admit {
        todo!("lesson 12, milestone 4: now, after a delay, or refused")
    }
}

/// A layer that delays each request as its `DelayQueue` says, on `clock`,
/// and answers a refused one 503 with `Retry-After`.
#[derive(Clone)]
pub struct DelayLayer<C> {
    clock: C,
}

impl<C: Clock> DelayLayer<C> {
    pub fn new(policy: DelayPolicy, clock: C) -> Result<DelayLayer<C>, PolicyError> {
        todo!("lesson 12, milestone 4: the delay layer")
    }
}

impl<S, C: Clock> Layer<S> for DelayLayer<C> {
    type Service = Delay<S, C>;

    fn layer(&self, inner: S) -> Delay<S, C> {
        todo!("lesson 12, milestone 4: the delay layer")
    }
}

#[derive(Clone)]
pub struct Delay<S, C> {
    inner: S,
    clock: C,
}

impl<S, C> Service<Request<Body>> for Delay<S, C>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    C: Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        todo!("lesson 12, milestone 4: wait, then send it on")
    }
}

/// Additive increase, multiplicative decrease.
pub struct Aimd {}

impl Aimd {
    /// The bounds' errors (`AimdPolicy::bounds`), then `BackoffOutOfRange`.
    pub fn new(policy: AimdPolicy) -> Result<Aimd, PolicyError> {
        todo!("lesson 12, milestone 5: AIMD")
    }

    pub fn limit(&self) -> usize {
        todo!("lesson 12, milestone 5: AIMD")
    }

    pub fn on_sample(&mut self, sample: Sample) {
        todo!("lesson 12, milestone 5: AIMD")
    }
}

/// A latency gradient: the least latency seen against this one.
pub struct Gradient {}

impl Gradient {
    /// The bounds' errors (`GradientPolicy::bounds`), then
    /// `ToleranceBelow100`.
    pub fn new(policy: GradientPolicy) -> Result<Gradient, PolicyError> {
        todo!("lesson 12, milestone 5: the gradient")
    }

    pub fn limit(&self) -> usize {
        todo!("lesson 12, milestone 5: the gradient")
    }

    pub fn on_sample(&mut self, sample: Sample) {
        todo!("lesson 12, milestone 5: the gradient")
    }
}
