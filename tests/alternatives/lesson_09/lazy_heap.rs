//! Lesson 09, another design: the same contract as `solutions/lesson_09.rs`,
//! kept differently.
//!
//! - The index of instants is a binary heap with lazy deletion: an update
//!   pushes a new entry and leaves the old one behind, to be skipped when it
//!   reaches the top. So that stale entries never outgrow the keys, the heap
//!   is rebuilt from the map whenever it holds more than twice as many
//!   entries as there are keys (amortised: each rebuild follows as many
//!   pushes as it costs).
//! - The clock is an `AtomicU64` moved on with `fetch_max`, under the store's
//!   lock (outside it, a call could decide at an instant older than one a
//!   call before it already moved the store to).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Duration;

use super::sync::{AtomicU64, Mutex, Ordering};
use kata::memory::{metric, Bounds, Overflow, Rule};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
use metrics::{Counter, Gauge};

pub struct BoundedLimiter {
    rule: Kind,
    max_keys: usize,
    overflow: Overflow,
    policy: String,
    /// The latest instant the limiter was given: it never looks back.
    clock: AtomicU64,
    store: Mutex<Store>,
    metrics: Metrics,
}

#[derive(Clone, Copy)]
enum Kind {
    FixedWindow { limit: u64, window: u64 },
    Gcra { interval: u64, tolerance: u64 },
}

/// A key's state: the window and its count (fixed window), or the TAT in
/// `a` (GCRA), exact in u128 (a TAT past `u64::MAX` is never reached). A
/// fresh key's is all zeros.
#[derive(Clone, Copy, Default)]
struct State {
    a: u128,
    count: u64,
}

struct Held {
    state: State,
    /// The instant from which `state` is a fresh key's.
    fresh_from: u128,
    /// Tells apart keys that become fresh at the same instant.
    id: u64,
}

struct Store {
    keys: HashMap<Box<str>, Held>,
    /// Entries (instant, id, key), earliest on top; an entry is stale when
    /// its key is gone or has moved on to another instant or id.
    by_fresh: BinaryHeap<Reverse<(u128, u64, Box<str>)>>,
    next_id: u64,
}

struct Metrics {
    allowed: Counter,
    denied: Counter,
    keys: Gauge,
    evictions: Counter,
    overflows: Counter,
}

impl Kind {
    /// The rule's answer for a state at `now`, and the state after it when
    /// the request is allowed.
    fn decide(self, state: State, now: u64) -> (Decision, Option<State>) {
        match self {
            Kind::FixedWindow { limit, window } => {
                let k = u128::from(now / window);
                let count = if state.count > 0 && state.a == k {
                    state.count
                } else {
                    0
                };
                if count < limit {
                    let allowed = Decision::Allowed {
                        remaining: limit - count - 1,
                    };
                    (
                        allowed,
                        Some(State {
                            a: k,
                            count: count + 1,
                        }),
                    )
                } else {
                    let retry_after = Duration::from_nanos(window - now % window);
                    (Decision::Denied { retry_after }, None)
                }
            }
            Kind::Gcra {
                interval,
                tolerance,
            } => {
                let start = state.a.max(u128::from(now));
                let ahead = start - u128::from(now);
                if ahead > u128::from(tolerance) {
                    let retry_after = Duration::from_nanos((ahead - u128::from(tolerance)) as u64);
                    return (Decision::Denied { retry_after }, None);
                }
                let tat = start + u128::from(interval);
                let slack = u128::from(now) + u128::from(tolerance);
                let remaining = match slack.checked_sub(tat) {
                    Some(room) => room / u128::from(interval) + 1,
                    None => 0,
                };
                let allowed = Decision::Allowed {
                    remaining: remaining as u64,
                };
                (allowed, Some(State { a: tat, count: 1 }))
            }
        }
    }

    /// From this instant on, `state` answers as a fresh key's would.
    fn fresh_from(self, state: State) -> u128 {
        match self {
            Kind::FixedWindow { window, .. } => (state.a + 1) * u128::from(window),
            Kind::Gcra { .. } => state.a,
        }
    }
}

impl Store {
    fn is_current(&self, (from, id, key): &(u128, u64, Box<str>)) -> bool {
        self.keys
            .get(key)
            .is_some_and(|h| h.id == *id && h.fresh_from == *from)
    }

    /// Drops stale entries from the top, so that the top is a held key's.
    fn settle(&mut self) {
        while let Some(Reverse(top)) = self.by_fresh.peek() {
            if self.is_current(top) {
                break;
            }
            self.by_fresh.pop();
        }
    }

    /// Forgets every key that is fresh at `now`; returns how many.
    fn forget_fresh(&mut self, now: u64) -> usize {
        let mut forgotten = 0;
        loop {
            self.settle();
            match self.by_fresh.peek() {
                Some(Reverse((from, _, _))) if *from <= u128::from(now) => {
                    let Reverse((_, _, key)) = self.by_fresh.pop().expect("peeked");
                    self.keys.remove(&key);
                    forgotten += 1;
                }
                _ => return forgotten,
            }
        }
    }

    fn index(&mut self, from: u128, id: u64, key: &str) {
        self.by_fresh.push(Reverse((from, id, key.into())));
        if self.by_fresh.len() > 2 * self.keys.len() + 16 {
            self.by_fresh = self
                .keys
                .iter()
                .map(|(k, h)| Reverse((h.fresh_from, h.id, k.clone())))
                .collect();
        }
    }
}

impl BoundedLimiter {
    /// The rule's errors first (lesson 01's order), then `ZeroKeys`.
    pub fn new(rule: Rule, bounds: Bounds) -> Result<Self, ConfigError> {
        rule.validate()?;
        bounds.validate()?;
        let kind = match rule {
            Rule::FixedWindow { limit, window } => Kind::FixedWindow {
                limit,
                window: window.as_nanos() as u64,
            },
            Rule::TokenBucket {
                capacity,
                refill_every,
            } => {
                let interval = refill_every.as_nanos() as u64;
                Kind::Gcra {
                    interval,
                    tolerance: (capacity - 1) * interval,
                }
            }
        };
        let policy = bounds.policy;
        let outcome = |o: &'static str| metrics::counter!(metric::DECISIONS, metric::POLICY => policy.clone(), metric::OUTCOME => o);
        let metrics = Metrics {
            allowed: outcome(metric::ALLOWED),
            denied: outcome(metric::DENIED),
            keys: metrics::gauge!(metric::KEYS, metric::POLICY => policy.clone()),
            evictions: metrics::counter!(metric::EVICTIONS, metric::POLICY => policy.clone()),
            overflows: metrics::counter!(metric::OVERFLOWS, metric::POLICY => policy.clone()),
        };
        Ok(BoundedLimiter {
            rule: kind,
            max_keys: bounds.max_keys,
            overflow: bounds.overflow,
            policy,
            clock: AtomicU64::new(0),
            store: Mutex::new(Store {
                keys: HashMap::new(),
                by_fresh: BinaryHeap::new(),
                next_id: 0,
            }),
            metrics,
        })
    }

    /// The name the metrics carry.
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// The answer, with the store's bound, without counting it in the
    /// decision metric (`check` and `Shadow` count it each their way).
    pub fn decide(&self, key: &str, now: Timestamp) -> Decision {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let store = &mut *store;
        // Under the lock, so that calls see the clock in the order they
        // change the store.
        let now = self
            .clock
            .fetch_max(now.as_nanos(), Ordering::AcqRel)
            .max(now.as_nanos());
        if let Some(held) = store.keys.get_mut(key) {
            let (decision, next) = self.rule.decide(held.state, now);
            if let Some(state) = next {
                held.state = state;
                let from = self.rule.fresh_from(state);
                if from != held.fresh_from {
                    held.fresh_from = from;
                    let id = held.id;
                    store.index(from, id, key);
                }
            }
            return decision;
        }
        // A key not held: its state is a fresh key's. It needs a slot.
        if store.keys.len() >= self.max_keys {
            let forgotten = store.forget_fresh(now);
            if forgotten > 0 {
                self.metrics.evictions.increment(forgotten as u64);
            } else {
                self.metrics.overflows.increment(1);
                return match self.overflow {
                    Overflow::Admit => Decision::Allowed { remaining: 0 },
                    Overflow::Deny => {
                        store.settle();
                        let Some(Reverse((first, _, _))) = store.by_fresh.peek() else {
                            unreachable!("a full store has a held key on top")
                        };
                        let first = *first;
                        let wait = first - u128::from(now);
                        Decision::Denied {
                            retry_after: Duration::from_nanos(
                                u64::try_from(wait).unwrap_or(u64::MAX),
                            ),
                        }
                    }
                };
            }
        }
        let (decision, next) = self.rule.decide(State::default(), now);
        let state = next.expect("a fresh key's first request is allowed");
        let id = store.next_id;
        store.next_id += 1;
        let from = self.rule.fresh_from(state);
        store.keys.insert(
            key.into(),
            Held {
                state,
                fresh_from: from,
                id,
            },
        );
        store.index(from, id, key);
        self.metrics.keys.set(store.keys.len() as f64);
        decision
    }

    /// Forgets every key whose state is a fresh key's at `now` (or at the
    /// latest instant given, if later); returns how many.
    pub fn sweep(&self, now: Timestamp) -> usize {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let now = self
            .clock
            .fetch_max(now.as_nanos(), Ordering::AcqRel)
            .max(now.as_nanos());
        let forgotten = store.forget_fresh(now);
        if forgotten > 0 {
            self.metrics.evictions.increment(forgotten as u64);
            self.metrics.keys.set(store.keys.len() as f64);
        }
        forgotten
    }

    /// How many keys are held.
    pub fn keys_held(&self) -> usize {
        self.store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys
            .len()
    }
}

impl RateLimiter for BoundedLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let decision = self.decide(key, now);
        match decision {
            Decision::Allowed { .. } => self.metrics.allowed.increment(1),
            Decision::Denied { .. } => self.metrics.denied.increment(1),
        }
        decision
    }
}

/// Decides and counts, but never denies: a new limit watched on real
/// traffic before it is enforced.
pub struct Shadow {
    limiter: BoundedLimiter,
    allowed: Counter,
    shadowed: Counter,
}

impl Shadow {
    pub fn new(limiter: BoundedLimiter) -> Self {
        let outcome = |o: &'static str| metrics::counter!(metric::DECISIONS, metric::POLICY => limiter.policy().to_string(), metric::OUTCOME => o);
        Shadow {
            allowed: outcome(metric::ALLOWED),
            shadowed: outcome(metric::SHADOWED),
            limiter,
        }
    }

    /// The limiter it decides with, to sweep it or ask how many keys it holds.
    pub fn limiter(&self) -> &BoundedLimiter {
        &self.limiter
    }
}

impl RateLimiter for Shadow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.limiter.decide(key, now) {
            allowed @ Decision::Allowed { .. } => {
                self.allowed.increment(1);
                allowed
            }
            Decision::Denied { .. } => {
                self.shadowed.increment(1);
                Decision::Allowed { remaining: 0 }
            }
        }
    }
}
