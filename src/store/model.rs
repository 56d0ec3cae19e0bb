//! Lesson 09's contract as an executable model: the rule's model
//! ([`crate::models::Model`]) on one clock, a store of at most `max_keys`
//! keys that forgets a key exactly when its state has become a fresh key's,
//! and the counts every metric must show.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use super::{Bounds, Overflow, Rule};
use crate::decision::Decision;
use crate::models::Model;
use crate::timeline::Config;

/// What the metrics of one policy must read.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Counts {
    pub allowed: u64,
    pub denied: u64,
    pub shadowed: u64,
    pub evictions: u64,
    pub overflows: u64,
    /// The keys held (the gauge's value).
    pub keys: u64,
}

impl Counts {
    /// Records, through the `metrics` facade, what changed since `before`
    /// (the demo server's limiter, which is this model).
    pub fn record_since(&self, before: &Counts, policy: &str) {
        use super::metric;
        let p = policy.to_string();
        let outcomes = [
            (metric::ALLOWED, self.allowed - before.allowed),
            (metric::DENIED, self.denied - before.denied),
            (metric::SHADOWED, self.shadowed - before.shadowed),
        ];
        for (outcome, n) in outcomes {
            if n > 0 {
                metrics::counter!(metric::DECISIONS, metric::POLICY => p.clone(), metric::OUTCOME => outcome)
                    .increment(n);
            }
        }
        if self.evictions > before.evictions {
            metrics::counter!(metric::EVICTIONS, metric::POLICY => p.clone())
                .increment(self.evictions - before.evictions);
        }
        if self.overflows > before.overflows {
            metrics::counter!(metric::OVERFLOWS, metric::POLICY => p.clone())
                .increment(self.overflows - before.overflows);
        }
        if self.keys != before.keys {
            metrics::gauge!(metric::KEYS, metric::POLICY => p).set(self.keys as f64);
        }
    }
}

/// The contract of a bounded limiter.
#[derive(Clone)]
pub struct BoundedModel {
    rule: Model,
    bounds: Bounds,
    /// The latest instant given, by a call or a sweep: the limiter's clock.
    clock: u128,
    /// The held keys, by the instant each becomes forgettable.
    by_fresh: BTreeSet<(u128, String)>,
    held: HashMap<String, u128>,
    pub counts: Counts,
}

impl BoundedModel {
    pub fn new(rule: Rule, bounds: Bounds) -> BoundedModel {
        let (limit, period) = rule.parts();
        let config = Config::new(limit, period.as_nanos() as u64);
        BoundedModel::of(rule.algorithm().model(config), bounds)
    }

    /// The bounded store over any rule's model (lesson 10's fallback
    /// keeps lesson 08's rules, the sliding log among them).
    pub fn of(rule: Model, bounds: Bounds) -> BoundedModel {
        BoundedModel {
            rule,
            bounds,
            clock: 0,
            by_fresh: BTreeSet::new(),
            held: HashMap::new(),
            counts: Counts::default(),
        }
    }

    /// How many keys the limiter holds.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// The limiter's clock: the latest instant it was given.
    pub fn clock(&self) -> u64 {
        self.clock as u64
    }

    /// A request, answered at the limiter's clock, as `check` answers it
    /// (`shadow`: as the shadow wrapper does). The decision metric counts
    /// it with its outcome.
    pub fn check(&mut self, key: &str, now: u64, shadow: bool) -> Decision {
        let d = self.decide(key, now);
        match (d.is_allowed(), shadow) {
            (true, _) => self.counts.allowed += 1,
            (false, false) => self.counts.denied += 1,
            (false, true) => self.counts.shadowed += 1,
        }
        match (d, shadow) {
            (Decision::Denied { .. }, true) => Decision::Allowed { remaining: 0 },
            _ => d,
        }
    }

    /// The rule's answer with the store's bound (no decision metric).
    pub fn decide(&mut self, key: &str, now: u64) -> Decision {
        self.clock = self.clock.max(u128::from(now));
        let at = self.clock as u64;
        if !self.held.contains_key(key) && self.held.len() >= self.bounds.max_keys {
            // Full: forget what can be forgotten, or answer the overflow.
            if self.forget_fresh() == 0 {
                self.counts.overflows += 1;
                return match self.bounds.overflow {
                    Overflow::Admit => Decision::Allowed { remaining: 0 },
                    Overflow::Deny => {
                        let first = self.by_fresh.first().expect("a full store holds keys").0;
                        let wait = first - self.clock;
                        Decision::Denied {
                            retry_after: Duration::from_nanos(
                                u64::try_from(wait).unwrap_or(u64::MAX),
                            ),
                        }
                    }
                };
            }
        }
        let d = self.rule.decide(key, at);
        if d.is_allowed() {
            if let Some(old) = self.held.remove(key) {
                self.by_fresh.remove(&(old, key.to_string()));
            }
            let from = self.rule.fresh_from(key).expect("an allowed request");
            self.held.insert(key.to_string(), from);
            self.by_fresh.insert((from, key.to_string()));
        } else {
            // A denied request of a key not held cannot happen: a fresh
            // key's first request is allowed (the limit is at least 1).
            assert!(self.held.contains_key(key), "model: a fresh key was denied");
        }
        self.counts.keys = self.held.len() as u64;
        d
    }

    /// `sweep(now)`: forgets every key that can be forgotten at the
    /// limiter's clock (moved on to `now` if that is later).
    pub fn sweep(&mut self, now: u64) -> usize {
        self.clock = self.clock.max(u128::from(now));
        self.forget_fresh()
    }

    /// Forgets every held key whose state is a fresh key's from the clock on.
    fn forget_fresh(&mut self) -> usize {
        let mut n = 0;
        while let Some((from, _)) = self.by_fresh.first() {
            if *from > self.clock {
                break;
            }
            let (_, key) = self.by_fresh.pop_first().expect("just seen");
            self.held.remove(&key);
            self.rule.forget(&key);
            n += 1;
        }
        self.counts.evictions += n as u64;
        self.counts.keys = self.held.len() as u64;
        n
    }

    /// The instant `key` becomes forgettable, if held.
    pub fn fresh_from(&self, key: &str) -> Option<u128> {
        self.held.get(key).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_full_store_denies_until_its_first_key_is_fresh() {
        let rule = Rule::TokenBucket {
            capacity: 2,
            refill_every: ms(1),
        };
        let mut m = BoundedModel::new(rule, Bounds::new("p", 2, Overflow::Deny));
        assert_eq!(m.check("a", 0, false), Decision::Allowed { remaining: 1 });
        assert_eq!(
            m.check("b", 500_000, false),
            Decision::Allowed { remaining: 1 }
        );
        // a's bucket is full again at 1 ms, b's at 1.5 ms.
        assert_eq!(
            m.check("c", 600_000, false),
            Decision::Denied {
                retry_after: Duration::from_nanos(400_000)
            }
        );
        assert_eq!(
            m.check("c", 1_000_000, false),
            Decision::Allowed { remaining: 1 }
        );
        assert_eq!(m.counts.evictions, 1);
        assert_eq!(m.counts.overflows, 1);
        assert_eq!(m.held(), 2);
        // One nanosecond before b's bucket is full, b is still held.
        assert_eq!(m.sweep(1_499_999), 0);
        assert_eq!(m.sweep(1_500_000), 1);
    }

    #[test]
    fn a_fixed_window_key_is_fresh_when_its_window_ends() {
        let rule = Rule::FixedWindow {
            limit: 1,
            window: ms(1),
        };
        let mut m = BoundedModel::new(rule, Bounds::new("p", 1, Overflow::Admit));
        assert!(m.check("a", 999_999, false).is_allowed());
        assert_eq!(
            m.check("b", 999_999, false),
            Decision::Allowed { remaining: 0 }
        );
        assert_eq!(m.counts.overflows, 1);
        assert_eq!(m.held(), 1);
        // Late: answered at the clock, 999_999.
        assert!(!m.check("a", 5, false).is_allowed());
        assert_eq!(m.check("a", 5, true), Decision::Allowed { remaining: 0 });
        assert_eq!((m.counts.denied, m.counts.shadowed), (1, 1));
        assert_eq!(m.sweep(1_000_000), 1);
    }
}
