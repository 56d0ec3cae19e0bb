//! Lesson 11, the reference: a client that meets 429s without making
//! things worse. See lessons/lesson_11.md and lessons/CONTRACT.md.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use super::sync::{Arc, Mutex};
use axum::body::Bytes;
use axum::http::{header::RETRY_AFTER, HeaderMap, Method, Request, Response};
use kata::client::{
    copy_request, httpdate, parse_list, BudgetPolicy, ClientError, ClientPolicy, Clock, Jitter,
    PolicyError, Timestamp, IDEMPOTENCY_KEY, RATELIMIT, RATELIMIT_POLICY,
};
use tower::{Layer, Service, ServiceExt};

/// How long an answer asks the client to wait: `Retry-After` in seconds
/// or as an HTTP-date; else the largest `t` of the `RateLimit` items whose
/// `r` is 0; else nothing.
pub fn server_wait(headers: &HeaderMap, wall: SystemTime) -> Option<Duration> {
    if let Some(value) = headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()) {
        let value = value.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
        }
        if let Ok(date) = httpdate::parse_http_date(value) {
            return Some(date.duration_since(wall).unwrap_or(Duration::ZERO));
        }
    }
    let items = parse_list(headers.get(RATELIMIT)?)?;
    items
        .iter()
        .filter(|item| item.param("r") == Some(0))
        .filter_map(|item| item.param("t"))
        .max()
        .map(Duration::from_secs)
}

/// A retry budget: ten slots of a tenth of `ttl` each, holding what was
/// deposited and withdrawn in them, in hundredths of a retry.
pub struct RetryBudget {
    policy: BudgetPolicy,
    slot_nanos: u64,
    slots: Mutex<[(u64, i64); 10]>,
}

impl RetryBudget {
    pub fn new(policy: BudgetPolicy) -> Result<RetryBudget, PolicyError> {
        let secs = policy.ttl.as_secs();
        if policy.ttl.subsec_nanos() != 0 || !(1..=60).contains(&secs) {
            return Err(PolicyError::TtlOutOfRange);
        }
        if policy.retry_percent > 1000 {
            return Err(PolicyError::PercentOutOfRange);
        }
        Ok(RetryBudget {
            policy,
            slot_nanos: secs * 100_000_000,
            slots: Mutex::new([(u64::MAX, 0); 10]),
        })
    }

    fn index(&self, at: Timestamp) -> u64 {
        at.as_nanos() / self.slot_nanos
    }

    fn add(slots: &mut [(u64, i64); 10], index: u64, amount: i64) {
        let slot = &mut slots[(index % 10) as usize];
        if slot.0 != index {
            *slot = (index, 0);
        }
        slot.1 += amount;
    }

    pub fn deposit(&self, now: Timestamp) {
        let mut slots = self.slots.lock().unwrap();
        Self::add(
            &mut slots,
            self.index(now),
            i64::from(self.policy.retry_percent),
        );
    }

    pub fn withdraw(&self, now: Timestamp) -> bool {
        let i = self.index(now);
        let mut slots = self.slots.lock().unwrap();
        let counted: i64 = slots
            .iter()
            .filter(|(index, _)| *index <= i && *index + 10 > i)
            .map(|(_, amount)| amount)
            .sum();
        if self.policy.reserve() as i64 + counted < 100 {
            return false;
        }
        Self::add(&mut slots, i, -100);
        true
    }

    pub fn give_back(&self, taken_at: Timestamp, now: Timestamp) {
        let j = self.index(taken_at);
        if j + 10 > self.index(now) {
            let mut slots = self.slots.lock().unwrap();
            Self::add(&mut slots, j, 100);
        }
    }
}

/// A partition's state: blocked until, the pace the server announced
/// (quota, ns between requests), and its GCRA's theoretical arrival time.
#[derive(Default)]
struct Partition {
    blocked: Timestamp,
    pace: Option<(u64, u64)>,
    tat: u64,
}

/// What every clone of the layer and of its services shares.
struct Shared {
    policy: ClientPolicy,
    budget: RetryBudget,
    state: Mutex<State>,
}

struct State {
    jitter: Jitter,
    partitions: HashMap<String, Partition>,
}

fn later(at: Timestamp, by: Duration) -> Timestamp {
    Timestamp::from_nanos(
        at.as_nanos()
            .saturating_add(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX)),
    )
}

impl Shared {
    /// Takes the partition's next slot at `ready` or later: the instant
    /// the attempt may go, and, if it holds a slot of the pace, the
    /// partition's `tat` once it took it.
    fn reserve(&self, partition: &str, ready: Timestamp) -> (Timestamp, Option<u64>) {
        let mut state = self.state.lock().unwrap();
        let p = state.partitions.entry(partition.to_string()).or_default();
        let ready = ready.max(p.blocked);
        match p.pace {
            None => (ready, None),
            Some((quota, interval)) => {
                let tau = (quota - 1).saturating_mul(interval);
                let at = ready.max(Timestamp::from_nanos(p.tat.saturating_sub(tau)));
                p.tat = p.tat.max(at.as_nanos()).saturating_add(interval);
                (at, Some(p.tat))
            }
        }
    }

    fn blocked(&self, partition: &str) -> Timestamp {
        let state = self.state.lock().unwrap();
        state
            .partitions
            .get(partition)
            .map_or(Timestamp::ZERO, |p| p.blocked)
    }

    /// What an answer tells of its partition: its pace, what is left of its
    /// quota, and how long to wait.
    fn learn(&self, partition: &str, at: Timestamp, wall: SystemTime, headers: &HeaderMap) {
        let first = |name: &str| {
            headers
                .get(name)
                .and_then(parse_list)
                .and_then(|items| items.into_iter().next())
        };
        let mut state = self.state.lock().unwrap();
        let p = state.partitions.entry(partition.to_string()).or_default();
        if let Some(item) = first(RATELIMIT_POLICY) {
            if let (Some(q), Some(w)) = (item.param("q"), item.param("w")) {
                if q > 0 && w > 0 {
                    p.pace = Some((q, (w.saturating_mul(1_000_000_000) / q).max(1)));
                }
            }
        }
        if let (Some((q, interval)), Some(r)) =
            (p.pace, first(RATELIMIT).and_then(|i| i.param("r")))
        {
            let used = q - r.min(q);
            p.tat = p
                .tat
                .max(at.as_nanos().saturating_add(used.saturating_mul(interval)));
        }
        if let Some(wait) = server_wait(headers, wall) {
            p.blocked = p.blocked.max(later(at, wait));
        }
    }

    /// The backoff of a retry answered at `answered`: after the server's
    /// wait, a draw up to `cap`; then a slot of the pace.
    fn backoff(
        &self,
        partition: &str,
        answered: Timestamp,
        cap: Duration,
    ) -> (Timestamp, Option<u64>) {
        let ready = {
            let mut state = self.state.lock().unwrap();
            let blocked = state
                .partitions
                .get(partition)
                .map_or(Timestamp::ZERO, |p| p.blocked);
            let draw = state.jitter.up_to(cap);
            later(answered.max(blocked), draw)
        };
        self.reserve(partition, ready)
    }

    /// Gives back the slot that left `tat` at `left`, if no slot was taken
    /// after it (a later one keeps its place: giving it back then would
    /// let two requests share one).
    fn give_back_slot(&self, partition: &str, left: u64) {
        let mut state = self.state.lock().unwrap();
        if let Some(p) = state.partitions.get_mut(partition) {
            if let (Some((_, interval)), true) = (p.pace, p.tat == left) {
                p.tat = left.saturating_sub(interval);
            }
        }
    }
}

/// What a request holds while it waits to be sent, given back if its
/// future is dropped first.
struct Held<C: Clock> {
    shared: Arc<Shared>,
    clock: C,
    partition: String,
    /// The partition's `tat` once this request took its slot, if it holds one.
    slot: Option<u64>,
    withdrawn: Option<Timestamp>,
}

impl<C: Clock> Held<C> {
    fn sent(&mut self) {
        self.slot = None;
        self.withdrawn = None;
    }
}

impl<C: Clock> Drop for Held<C> {
    fn drop(&mut self) {
        if let Some(taken) = self.withdrawn.take() {
            self.shared.budget.give_back(taken, self.clock.now());
        }
        if let Some(left) = self.slot.take() {
            self.shared.give_back_slot(&self.partition, left);
        }
    }
}

/// The layer: every clone, and every service it makes, shares one budget,
/// one jitter and one view of each partition.
pub struct RetryLayer<C> {
    shared: Arc<Shared>,
    clock: C,
}

impl<C: Clone> Clone for RetryLayer<C> {
    fn clone(&self) -> Self {
        RetryLayer {
            shared: self.shared.clone(),
            clock: self.clock.clone(),
        }
    }
}

impl<C: Clock> RetryLayer<C> {
    pub fn new(policy: ClientPolicy, clock: C) -> Result<RetryLayer<C>, PolicyError> {
        if policy.max_attempts == 0 {
            return Err(PolicyError::ZeroAttempts);
        }
        if policy.base.is_zero() {
            return Err(PolicyError::ZeroBase);
        }
        if policy.cap < policy.base {
            return Err(PolicyError::CapBelowBase);
        }
        let budget = RetryBudget::new(policy.budget)?;
        Ok(RetryLayer {
            shared: Arc::new(Shared {
                policy,
                budget,
                state: Mutex::new(State {
                    jitter: Jitter::seeded(policy.seed),
                    partitions: HashMap::new(),
                }),
            }),
            clock,
        })
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

fn idempotent(request: &Request<Bytes>) -> bool {
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE | Method::PUT | Method::DELETE
    ) || request.headers().contains_key(IDEMPOTENCY_KEY)
}

fn worth_another(result: &Result<Response<Bytes>, ClientError>) -> bool {
    match result {
        Ok(response) => matches!(
            response.status().as_u16(),
            408 | 429 | 500 | 502 | 503 | 504
        ),
        Err(_) => true,
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
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Bytes>) -> Self::Future {
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (shared, clock) = (self.layer.shared.clone(), self.layer.clock.clone());
        Box::pin(async move {
            let partition = request
                .uri()
                .authority()
                .map(|a| a.to_string())
                .unwrap_or_default();
            let safe = idempotent(&request);
            let now = clock.now();
            shared.budget.deposit(now);
            let (mut at, slot) = shared.reserve(&partition, now);
            let mut held = Held {
                shared: shared.clone(),
                clock: clock.clone(),
                partition: partition.clone(),
                slot,
                withdrawn: None,
            };
            let mut attempt = 1;
            loop {
                clock.sleep_until(at).await;
                loop {
                    let blocked = shared.blocked(&partition);
                    if clock.now() >= blocked {
                        break;
                    }
                    clock.sleep_until(blocked).await;
                }
                held.sent();
                let result = inner.ready().await?.call(copy_request(&request)).await;
                let answered = clock.now();
                if let Ok(response) = &result {
                    shared.learn(&partition, answered, clock.wall(), response.headers());
                }
                if !(worth_another(&result) && safe && attempt < shared.policy.max_attempts) {
                    return result;
                }
                if !shared.budget.withdraw(answered) {
                    return result;
                }
                let cap = shared.policy.cap_of_retry(attempt);
                let (next, slot) = shared.backoff(&partition, answered, cap);
                held.withdrawn = Some(answered);
                held.slot = slot;
                at = next;
                attempt += 1;
            }
        })
    }
}
