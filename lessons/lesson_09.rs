//! Lesson 09: a limiter that forgets, and says so.
//!
//! Read `lessons/lesson_09.md` first. Then make every test of
//! `cargo test --test lesson_09` pass by filling in this file.
//!
//! The rule: lesson 01's fixed window or lesson 05's token bucket (as lesson
//! 06's GCRA), answer for answer, on one clock: every call is answered at
//! the latest instant the limiter was given. The store: at most
//! `bounds.max_keys` keys, each forgotten exactly when its state has become
//! a fresh key's, by `sweep` or to make room for a new key. The metrics:
//! `kata::memory::metric`'s, labelled with the policy only.

use std::collections::HashMap;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{AtomicU64, Mutex, Ordering};
#[allow(unused_imports)]
use kata::memory::{metric, Bounds, Overflow, Rule};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct BoundedLimiter {
    // The rule, the bounds, the store of keys (behind a Mutex), and the
    // metrics' handles.
    keys: HashMap<String, ()>,
}

impl BoundedLimiter {
    /// The rule's errors first (`rule.validate()`), then `ZeroKeys`
    /// (`bounds.validate()`).
    pub fn new(rule: Rule, bounds: Bounds) -> Result<Self, ConfigError> {
        let _ = (rule, bounds);
        todo!("lesson 09: validate, then build the store and register the metrics")
    }

    /// The answer, with the store's bound, not counted in the decision
    /// metric (`check` and `Shadow` count it, each their way).
    pub fn decide(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 09: the rule's answer for a held key; room, or the overflow answer, for a new one")
    }

    /// Forgets every key whose state is a fresh key's at `now` (or at the
    /// latest instant given, if later); returns how many.
    pub fn sweep(&self, now: Timestamp) -> usize {
        let _ = now;
        todo!("lesson 09: forget what has become fresh, without looking at every key")
    }

    /// How many keys are held.
    pub fn keys_held(&self) -> usize {
        todo!("lesson 09: the store's size")
    }
}

impl RateLimiter for BoundedLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let decision = self.decide(key, now);
        todo!("lesson 09: count {decision} as allowed or denied, and return it")
    }
}

/// Decides and counts, but never denies.
pub struct Shadow {
    limiter: BoundedLimiter,
}

impl Shadow {
    pub fn new(limiter: BoundedLimiter) -> Self {
        Shadow { limiter }
    }

    /// The limiter it decides with, to sweep it or ask how many keys it holds.
    pub fn limiter(&self) -> &BoundedLimiter {
        &self.limiter
    }
}

impl RateLimiter for Shadow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let decision = self.limiter.decide(key, now);
        todo!("lesson 09: count {decision} as allowed or shadowed; never deny")
    }
}
