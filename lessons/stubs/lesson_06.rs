//! Lesson 06: GCRA, lock-free.
//!
//! Read `lessons/lesson_06.md` first. Then make every test of
//! `cargo test --test lesson_06` pass by filling in this file.
//!
//! The rule: decision for decision, lesson 05's token bucket (the tests
//! compare them). The state: one theoretical arrival time (TAT) per key in an
//! `AtomicU64`, updated with a compare-and-swap loop. The map from key to TAT
//! may sit behind an `RwLock`, read-locked on the hot path and write-locked
//! only to insert a new key; the TAT itself is never behind a lock.

use std::collections::HashMap;
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{spin_loop, AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct Gcra {
    // T (the emission interval), τ = (C − 1)·T (the tolerance), and the map
    // from key to its TAT.
    keys: HashMap<String, ()>,
}

impl Gcra {
    /// The same checks, in the same order, as lesson 05.
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        let _ = (capacity, refill_every);
        todo!("lesson 06: validate the configuration and build the limiter")
    }
}

impl RateLimiter for Gcra {
    /// Decides the request of `key` at `now` with one compare-and-swap loop
    /// on the key's TAT.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 06: load the TAT, decide, compare-and-swap, retry on conflict")
    }
}
