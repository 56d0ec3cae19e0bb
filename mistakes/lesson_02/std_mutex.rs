//! MISTAKE: the Mutex comes from `std::sync` instead of the lesson's facade.
//!
//! Why learners write it: `use std::sync::Mutex` is what every Rust program
//! does, and the limiter is even correct. But the tests can no longer check
//! that: loom only explores the interleavings of primitives it provides, and a
//! std lock inside a loom model is invisible to it. The source check names the
//! line, so the learner can switch to `use super::sync::Mutex`.

use std::collections::HashMap;
use std::time::Duration;

// BUG: not from super::sync, so loom cannot see this lock.
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
use std::sync::Mutex;

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, KeyState>>,
}

struct KeyState {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Requests allowed in the window that contains `latest`.
    count: u64,
}

impl ConcurrentFixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(ConcurrentFixedWindow {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        // A panic in another thread while it held the lock leaves the map in
        // a state this code can still read: every update below is complete
        // before anything can panic, so poisoning is safe to ignore.
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            keys.insert(
                key.into(),
                KeyState {
                    latest: 0,
                    count: 0,
                },
            );
        }
        let state = keys.get_mut(key).expect("inserted above");

        // Concurrent callers can deliver timestamps out of order: a late one
        // counts as the latest seen, so it cannot reopen an old window.
        let now = now.as_nanos().max(state.latest);
        if now / self.window != state.latest / self.window {
            state.count = 0;
        }
        state.latest = now;

        if state.count < self.limit {
            state.count += 1;
            Decision::Allowed {
                remaining: self.limit - state.count,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - now % self.window),
            }
        }
    }
}
