//! Lesson 03: the sliding log.
//!
//! Read `lessons/lesson_03.md` first. Then make every test of
//! `cargo test --test lesson_03` pass by filling in this file.
//!
//! The rule, from lessons/CONTRACT.md: a request is allowed iff fewer than `limit`
//! requests of its key were allowed in the half-open interval `(now − W, now]`.
//! Take sync primitives from the lesson's facade only, as below.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    // For each key, the timestamps of its allowed requests that may still be
    // inside the window: a `VecDeque<u64>` keeps them oldest first.
    keys: HashMap<String, VecDeque<u64>>,
}

impl SlidingLog {
    /// Same checks, in the same order, as lesson 01: `ZeroLimit`, then
    /// `ZeroPeriod`, then `TooLarge`.
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        let _ = (limit, window);
        todo!("lesson 03: validate the configuration and build the limiter")
    }
}

impl RateLimiter for SlidingLog {
    /// Decides the request of `key` at `now`: forget what left the window,
    /// count what is left, and log the request if it is allowed.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 03: decide, and log the request if it is allowed")
    }
}
