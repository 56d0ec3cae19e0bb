//! Lesson 12, an alternative: the permits counted by an atomic, taken by
//! compare-and-swap, with the waiters behind a lock of their own (a waiter
//! keeps its waker, then tries once more, so that no give-back is missed);
//! the delay queue kept as nginx keeps it, the excess at the last arrival;
//! the square root by Newton's method. See lessons/lesson_12.md and
//! lessons/CONTRACT.md.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use super::sync::{Arc, AtomicUsize, Mutex, Ordering};
use axum::body::Body;
use axum::http::{header::RETRY_AFTER, Request, Response, StatusCode};
use kata::inflight::{
    hold_until_done, Admit, AimdPolicy, Clock, DelayPolicy, GradientPolicy, PolicyError, Priority,
    Sample, ShedPolicy, Timestamp, KEY,
};
use tower::{Layer, Service};

/// A set of permits every clone shares: at most `limit` held at once, of
/// which a normal request may hold only `limit - reserved`.
#[derive(Clone)]
pub struct Permits {
    shared: Arc<Shared>,
}

struct Shared {
    limit: AtomicUsize,
    reserved: usize,
    in_flight: AtomicUsize,
    waiting: Mutex<Vec<Waker>>,
}

/// One permit: given back when it is dropped.
pub struct Permit {
    permits: Permits,
}

impl Permits {
    pub fn new(limit: usize, reserved: usize) -> Result<Permits, PolicyError> {
        if limit == 0 {
            return Err(PolicyError::ZeroLimit);
        }
        if reserved >= limit {
            return Err(PolicyError::ReservedNotBelowLimit);
        }
        Ok(Permits {
            shared: Arc::new(Shared {
                limit: AtomicUsize::new(limit),
                reserved,
                in_flight: AtomicUsize::new(0),
                waiting: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A permit if one is free for a request of this priority: one
    /// compare-and-swap from what was seen to one more.
    pub fn try_acquire(&self, priority: Priority) -> Option<Permit> {
        let s = &self.shared;
        let mut held = s.in_flight.load(Ordering::Acquire);
        loop {
            let limit = s.limit.load(Ordering::Acquire);
            let room = match priority {
                Priority::Critical => limit,
                Priority::Normal => limit.saturating_sub(s.reserved),
            };
            if held >= room {
                return None;
            }
            match s.in_flight.compare_exchange_weak(
                held,
                held + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    return Some(Permit {
                        permits: self.clone(),
                    })
                }
                Err(now) => held = now,
            }
        }
    }

    /// Tries, keeps the waker, and tries again: a give-back after the
    /// second try finds the waker kept.
    pub fn poll_acquire(&self, priority: Priority, cx: &mut Context<'_>) -> Poll<Permit> {
        if let Some(permit) = self.try_acquire(priority) {
            return Poll::Ready(permit);
        }
        {
            let mut waiting = self.shared.waiting.lock().unwrap();
            if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                waiting.push(cx.waker().clone());
            }
        }
        match self.try_acquire(priority) {
            Some(permit) => Poll::Ready(permit),
            None => Poll::Pending,
        }
    }

    pub fn in_flight(&self) -> usize {
        self.shared.in_flight.load(Ordering::Acquire)
    }

    pub fn set_limit(&self, limit: usize) {
        let limit = limit.max(self.shared.reserved + 1);
        self.shared.limit.store(limit, Ordering::Release);
        self.wake_all();
    }

    fn wake_all(&self) {
        let woken = std::mem::take(&mut *self.shared.waiting.lock().unwrap());
        woken.into_iter().for_each(Waker::wake);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.permits.shared.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.permits.wake_all();
    }
}

/// The boxed future every layer here answers with.
pub type Answer<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

/// A concurrency limit: at most `limit` requests in flight over every
/// clone, a request waiting in `poll_ready` until a permit is free.
#[derive(Clone)]
pub struct ConcurrencyLimitLayer {
    permits: Permits,
}

impl ConcurrencyLimitLayer {
    pub fn new(limit: usize) -> Result<ConcurrencyLimitLayer, PolicyError> {
        Ok(ConcurrencyLimitLayer {
            permits: Permits::new(limit, 0)?,
        })
    }
}

impl<S> Layer<S> for ConcurrencyLimitLayer {
    type Service = ConcurrencyLimit<S>;

    fn layer(&self, inner: S) -> ConcurrencyLimit<S> {
        ConcurrencyLimit {
            inner,
            permits: self.permits.clone(),
            reserved: None,
        }
    }
}

pub struct ConcurrencyLimit<S> {
    inner: S,
    permits: Permits,
    /// The permit `poll_ready` reserved for the next `call`.
    reserved: Option<Permit>,
}

impl<S: Clone> Clone for ConcurrencyLimit<S> {
    /// A clone shares the permits but not the reservation.
    fn clone(&self) -> Self {
        ConcurrencyLimit {
            inner: self.inner.clone(),
            permits: self.permits.clone(),
            reserved: None,
        }
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

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        if self.reserved.is_none() {
            match self.permits.poll_acquire(Priority::Critical, cx) {
                Poll::Ready(permit) => self.reserved = Some(permit),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let permit = self
            .reserved
            .take()
            .expect("call comes after poll_ready answered Ready");
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| hold_until_done(body, permit)))
        })
    }
}

/// Load shedding: a request finds a permit free at once or is answered
/// 503 at once; a key with `per_key` in flight is answered 429.
#[derive(Clone)]
pub struct ShedLayer {
    policy: ShedPolicy,
    permits: Permits,
    keys: Arc<Mutex<HashMap<String, usize>>>,
}

impl ShedLayer {
    pub fn new(policy: ShedPolicy) -> Result<ShedLayer, PolicyError> {
        let permits = Permits::new(policy.limit, policy.reserved)?;
        if policy.per_key == 0 {
            return Err(PolicyError::ZeroPerKey);
        }
        if policy.retry_after == Duration::ZERO || policy.retry_after.subsec_nanos() != 0 {
            return Err(PolicyError::RetryAfterNotWholeSeconds);
        }
        Ok(ShedLayer {
            policy,
            permits,
            keys: Arc::default(),
        })
    }
}

impl<S> Layer<S> for ShedLayer {
    type Service = Shed<S>;

    fn layer(&self, inner: S) -> Shed<S> {
        Shed {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Shed<S> {
    inner: S,
    layer: ShedLayer,
}

/// A key's count of requests in flight, taken back when it is dropped.
struct KeyHeld {
    keys: Arc<Mutex<HashMap<String, usize>>>,
    key: String,
}

impl Drop for KeyHeld {
    fn drop(&mut self) {
        let mut keys = self.keys.lock().unwrap();
        if let Some(n) = keys.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                keys.remove(&self.key);
            }
        }
    }
}

impl ShedLayer {
    fn take_key(&self, key: &str) -> Option<KeyHeld> {
        let mut keys = self.keys.lock().unwrap();
        let n = keys.entry(key.to_string()).or_insert(0);
        if *n >= self.policy.per_key {
            return None;
        }
        *n += 1;
        Some(KeyHeld {
            keys: self.keys.clone(),
            key: key.to_string(),
        })
    }

    fn refuse(&self, status: StatusCode) -> Response<Body> {
        let mut response = Response::new(Body::empty());
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(RETRY_AFTER, self.policy.retry_after.as_secs().into());
        response
    }
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
        let key = request
            .headers()
            .get(KEY)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let Some(key_held) = self.layer.take_key(&key) else {
            let refused = self.layer.refuse(StatusCode::TOO_MANY_REQUESTS);
            return Box::pin(async move { Ok(refused) });
        };
        let priority = Priority::of(request.headers());
        let Some(permit) = self.layer.permits.try_acquire(priority) else {
            drop(key_held);
            let refused = self.layer.refuse(StatusCode::SERVICE_UNAVAILABLE);
            return Box::pin(async move { Ok(refused) });
        };
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await?;
            Ok(response.map(|body| hold_until_done(body, (permit, key_held))))
        })
    }
}

/// nginx's `limit_req` with `burst` and `delay`: a leaky bucket whose
/// queue holds at most `burst` requests. `tat` is the instant the queue
/// is empty again, in ns.
pub struct DelayQueue {
    policy: DelayPolicy,
    interval: u64,
    /// The last request let in (ns) and the backlog it left behind it (ns).
    last: Mutex<(u64, u64)>,
}

impl DelayQueue {
    pub fn new(policy: DelayPolicy) -> Result<DelayQueue, PolicyError> {
        if policy.rate == 0 {
            return Err(PolicyError::ZeroRate);
        }
        if policy.delay > policy.burst {
            return Err(PolicyError::DelayAboveBurst);
        }
        Ok(DelayQueue {
            policy,
            interval: 1_000_000_000 / u64::from(policy.rate),
            last: Mutex::new((0, 0)),
        })
    }

    /// What a request arriving at `now` is answered.
    pub fn admit(&self, now: Timestamp) -> Admit {
        let now = now.as_nanos();
        let mut last = self.last.lock().unwrap();
        let (at, excess) = *last;
        // What is left of the backlog: it drains one ns a ns.
        let backlog = (at + excess).saturating_sub(now);
        let burst = u64::from(self.policy.burst) * self.interval;
        if backlog > burst {
            return Admit::Reject(Duration::from_nanos(backlog - burst));
        }
        *last = (now.max(at), backlog + self.interval - (now.max(at) - now));
        let free = u64::from(self.policy.delay) * self.interval;
        if backlog > free {
            Admit::After(Duration::from_nanos(backlog - free))
        } else {
            Admit::Now
        }
    }
}

/// A layer that delays each request as its `DelayQueue` says, on `clock`.
#[derive(Clone)]
pub struct DelayLayer<C> {
    queue: Arc<DelayQueue>,
    clock: C,
}

impl<C: Clock> DelayLayer<C> {
    pub fn new(policy: DelayPolicy, clock: C) -> Result<DelayLayer<C>, PolicyError> {
        Ok(DelayLayer {
            queue: Arc::new(DelayQueue::new(policy)?),
            clock,
        })
    }
}

impl<S, C: Clock> Layer<S> for DelayLayer<C> {
    type Service = Delay<S, C>;

    fn layer(&self, inner: S) -> Delay<S, C> {
        Delay {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Delay<S, C> {
    inner: S,
    layer: DelayLayer<C>,
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
        let now = self.layer.clock.now();
        let wait = match self.layer.queue.admit(now) {
            Admit::Now => None,
            Admit::After(wait) => Some(self.layer.clock.sleep_until(now + wait)),
            Admit::Reject(after) => {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                let secs = after.as_secs() + u64::from(after.subsec_nanos() > 0);
                response.headers_mut().insert(RETRY_AFTER, secs.into());
                return Box::pin(async move { Ok(response) });
            }
        };
        // The service that was made ready goes with the request; a fresh
        // clone stays behind for the next.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        Box::pin(async move {
            if let Some(wait) = wait {
                wait.await;
            }
            inner.call(request).await
        })
    }
}

/// Additive increase, multiplicative decrease.
pub struct Aimd {
    policy: AimdPolicy,
    limit: usize,
}

impl Aimd {
    pub fn new(policy: AimdPolicy) -> Result<Aimd, PolicyError> {
        policy.bounds()?;
        if !(1..=99).contains(&policy.backoff_percent) {
            return Err(PolicyError::BackoffOutOfRange);
        }
        Ok(Aimd {
            policy,
            limit: policy.initial,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn on_sample(&mut self, sample: Sample) {
        let p = &self.policy;
        if sample.dropped || sample.latency > p.timeout {
            self.limit = (self.limit * p.backoff_percent as usize / 100).max(p.min);
        } else if sample.in_flight * 2 >= self.limit {
            self.limit = (self.limit + 1).min(p.max);
        }
    }
}

/// A latency gradient: the least latency seen against this one.
pub struct Gradient {
    policy: GradientPolicy,
    limit: usize,
    least: Option<Duration>,
}

impl Gradient {
    pub fn new(policy: GradientPolicy) -> Result<Gradient, PolicyError> {
        policy.bounds()?;
        if policy.tolerance_percent < 100 {
            return Err(PolicyError::ToleranceBelow100);
        }
        Ok(Gradient {
            policy,
            limit: policy.initial,
            least: None,
        })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn on_sample(&mut self, sample: Sample) {
        let p = &self.policy;
        if sample.dropped {
            self.limit = (self.limit / 2).max(p.min);
            return;
        }
        let least = self.least.map_or(sample.latency, |l| l.min(sample.latency));
        self.least = Some(least);
        let latency = sample.latency.as_nanos().max(1);
        let permille = (u128::from(p.tolerance_percent) * 10 * least.as_nanos() / latency)
            .clamp(500, 1000) as usize;
        if permille == 1000 && sample.in_flight * 2 < self.limit {
            return;
        }
        let next = self.limit * permille / 1000 + root(self.limit);
        self.limit = next.clamp(p.min, p.max);
    }
}

/// ⌊√n⌋ by Newton's method.
fn root(n: usize) -> usize {
    if n < 2 {
        return n;
    }
    let mut x = n;
    let mut y = x.div_ceil(2);
    while y < x {
        x = y;
        y = (x + n / x) / 2;
    }
    x
}
