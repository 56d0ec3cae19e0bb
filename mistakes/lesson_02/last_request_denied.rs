//! MISTAKE: `<=` where `<` belongs: the L-th request of a window is denied.
//!
//! Why learners write it: "remaining must stay at or above zero" turns into a
//! check on the count after adding one. A limiter that denies more than the
//! rule says is as wrong as one that allows too much: clients get a 429 for
//! traffic they are entitled to.

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

        // BUG: off by one, denies the last allowed request.
        if state.count + 1 < self.limit {
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
