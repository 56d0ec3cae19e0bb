//! Lesson 04: the sliding window counter.
//!
//! Read `lessons/lesson_04.md` first. Then make every test of
//! `cargo test --test lesson_04` pass by filling in this file.
//!
//! The rule, from lessons/CONTRACT.md: with k the aligned window containing `now`, c the
//! requests of the key allowed in window k, p those allowed in window k − 1,
//! and e = now − k·W, a request is allowed iff p·(W − e) + c·W < L·W, in
//! exact integer arithmetic (no floats; the products need 128 bits).
//! Take sync primitives from the lesson's facade only, as below.

use std::collections::HashMap;
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    // For each key: which window it is counting, and two counts, this
    // window's and the previous one's. Two numbers instead of lesson 03's log.
    keys: HashMap<String, ()>,
}

impl SlidingCounter {
    /// Same checks, in the same order, as lesson 01: `ZeroLimit`, then
    /// `ZeroPeriod`, then `TooLarge`.
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        let _ = (limit, window);
        todo!("lesson 04: validate the configuration and build the limiter")
    }
}

impl RateLimiter for SlidingCounter {
    /// Decides the request of `key` at `now`: roll the counts over to `now`'s
    /// window, weigh the previous count, compare, and count the request if it
    /// is allowed.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 04: decide with the weighted count")
    }
}
