//! Lesson 01: a fixed-window counter for one thread.
//!
//! Read `lessons/lesson_01.md` first. Then make every test of
//! `cargo test --test lesson_01` pass by filling in this file.
//!
//! The rule, from lessons/CONTRACT.md: windows are aligned to the clock's origin, window k
//! is `[k·W, (k+1)·W)`, and a request is allowed iff fewer than `limit`
//! requests of its key were allowed in the window that contains `now`.

use std::collections::HashMap;
use std::time::Duration;

use kata::{ConfigError, Decision, Timestamp};

pub struct FixedWindow {
    // What does the limiter need to remember? For each key: which window it is
    // counting, and how many requests it allowed there. Add fields here, for
    // example a `HashMap<String, ...>` from key to that state.
    keys: HashMap<String, ()>,
}

impl FixedWindow {
    /// Builds a limiter that allows `limit` requests per key in each window of
    /// length `window`.
    ///
    /// Reject a configuration that makes no sense, in this order: a `limit` of
    /// 0 is `ConfigError::ZeroLimit`; a zero `window` is
    /// `ConfigError::ZeroPeriod`; a `window` longer than `u64::MAX` nanoseconds
    /// is `ConfigError::TooLarge`.
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        let _ = (limit, window);
        todo!("lesson 01: validate the configuration and build the limiter")
    }

    /// Decides the request of `key` at `now`.
    ///
    /// Allowed: `Decision::Allowed { remaining }`, where `remaining` is how
    /// many more requests of this key would be allowed at this same instant.
    /// Denied: `Decision::Denied { retry_after }`, the shortest wait (at least
    /// 1 ns) after which a request of this key would be allowed.
    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 01: decide, and count the request if it is allowed")
    }
}
