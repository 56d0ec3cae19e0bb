//! Lesson 02: the fixed window, shared between threads.
//!
//! Read `lessons/lesson_02.md` first. Then make every test of
//! `cargo test --test lesson_02` pass by filling in this file.
//!
//! Same rule as lesson 01, but `check` now takes `&self`: many threads call
//! it at once through an `Arc`. Take every sync primitive from the lesson's
//! facade, as below, never from `std::sync`: the tests build this file twice,
//! once over std and once over loom, which tries the thread interleavings.

use std::collections::HashMap;
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, AtomicU64, Mutex, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    // The state of lesson 01, made safe to share. Which part must one thread
    // see and change without any other thread acting in between?
    keys: HashMap<String, ()>,
}

impl ConcurrentFixedWindow {
    /// Same checks, in the same order, as lesson 01: `ZeroLimit`, then
    /// `ZeroPeriod`, then `TooLarge`.
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        let _ = (limit, window);
        todo!("lesson 02: validate the configuration and build the limiter")
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    /// Decides the request of `key` at `now`. Calls that overlap in time must
    /// get the answers of some one-at-a-time order of the same calls.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 02: decide atomically, and count the request if it is allowed")
    }
}
