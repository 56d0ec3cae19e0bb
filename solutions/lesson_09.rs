//! Lesson 09, reference solution: a limiter that forgets, and says so.
//!
//! Each held key has the state of lesson 01's fixed window (its window and
//! count) or of lesson 06's GCRA (its TAT). From one instant on, that state
//! is a fresh key's for good: the end of its window, or its TAT. The store
//! keeps its keys in a `BTreeMap` ordered by that instant, so what can be
//! forgotten is always at the front: a sweep, or a call that needs room,
//! takes from the front until it meets a key still live, and looks at
//! nothing else.
//!
//! The metrics' handles are registered once, in `new`, with the policy's
//! label: a call only adds to counters it already holds.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::sync::Mutex;
use kata::memory::{metric, Bounds, Overflow, Rule};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
use metrics::{Counter, Gauge};

pub struct BoundedLimiter {
    rule: Kind,
    max_keys: usize,
    overflow: Overflow,
    policy: String,
    store: Mutex<Store>,
    metrics: Metrics,
}

#[derive(Clone, Copy)]
enum Kind {
    FixedWindow { limit: u64, window: u64 },
    Gcra { interval: u64, tolerance: u64 },
}

/// A key's state: the window and its count (fixed window), or the TAT in
/// `a` (GCRA), exact in u128: a TAT past `u64::MAX` is an instant no clock
/// reaches, so the key is never forgettable. A fresh key's is all zeros.
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
    /// The latest instant the limiter was given: it never looks back.
    clock: u64,
    keys: HashMap<Box<str>, Held>,
    /// The held keys, in the order they become fresh.
    by_fresh: BTreeMap<(u128, u64), Box<str>>,
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
                    // At most C·T, which fits in u64.
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
    /// Forgets every key that is fresh at the clock; returns how many.
    fn forget_fresh(&mut self) -> usize {
        let mut forgotten = 0;
        while let Some(entry) = self.by_fresh.first_entry() {
            if entry.key().0 > u128::from(self.clock) {
                break;
            }
            let key = entry.remove();
            self.keys.remove(&key);
            forgotten += 1;
        }
        forgotten
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
            store: Mutex::new(Store {
                clock: 0,
                keys: HashMap::new(),
                by_fresh: BTreeMap::new(),
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
        store.clock = store.clock.max(now.as_nanos());
        let now = store.clock;
        if let Some(held) = store.keys.get_mut(key) {
            let (decision, next) = self.rule.decide(held.state, now);
            if let Some(state) = next {
                held.state = state;
                let from = self.rule.fresh_from(state);
                if from != held.fresh_from {
                    let name = store
                        .by_fresh
                        .remove(&(held.fresh_from, held.id))
                        .expect("every held key is indexed");
                    store.by_fresh.insert((from, held.id), name);
                    held.fresh_from = from;
                }
            }
            return decision;
        }
        // A key not held: its state is a fresh key's. It needs a slot.
        if store.keys.len() >= self.max_keys {
            let forgotten = store.forget_fresh();
            if forgotten > 0 {
                self.metrics.evictions.increment(forgotten as u64);
            } else {
                self.metrics.overflows.increment(1);
                return match self.overflow {
                    Overflow::Admit => Decision::Allowed { remaining: 0 },
                    Overflow::Deny => {
                        let (&(first, _), _) = store.by_fresh.first_key_value().expect("full");
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
        store.by_fresh.insert((from, id), key.into());
        store.keys.insert(
            key.into(),
            Held {
                state,
                fresh_from: from,
                id,
            },
        );
        self.metrics.keys.set(store.keys.len() as f64);
        decision
    }

    /// Forgets every key whose state is a fresh key's at `now` (or at the
    /// latest instant given, if later); returns how many.
    pub fn sweep(&self, now: Timestamp) -> usize {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        store.clock = store.clock.max(now.as_nanos());
        let forgotten = store.forget_fresh();
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
