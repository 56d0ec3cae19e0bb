//! Lesson 02, reference solution: the fixed window, shared between threads.
//!
//! The whole decision (find the key, roll its window over, compare, count)
//! happens under one lock, so no other thread can act between the check and
//! the update. One `Mutex` around the map is the simplest correct design and,
//! for one hot key, as fast as anything finer-grained: every caller needs that
//! key's counter anyway.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

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

    /// Decides for one key's state; the caller holds the lock.
    fn decide(&self, state: &mut KeyState, now: Timestamp) -> Decision {
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

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        // A panic in another thread while it held the lock leaves the map in
        // a state this code can still read: every update below is complete
        // before anything can panic, so poisoning is safe to ignore.
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // One lookup for a key seen before; a new key is inserted once.
        if let Some(state) = keys.get_mut(key) {
            return self.decide(state, now);
        }
        let state = keys.entry(key.into()).or_insert(KeyState {
            latest: 0,
            count: 0,
        });
        self.decide(state, now)
    }
}
