//! MISTAKE: the check and the update happen under two separate locks.
//!
//! Why learners write it: lock to read the count, decide, lock again to write
//! it back: each access is protected, so it feels safe. But another thread can
//! run between the two locks; both read the same count, both decide "allowed",
//! and one increment is lost.

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
        let (used, latest) = {
            let mut keys = self.keys.lock().unwrap();
            let state = keys.entry(key.into()).or_insert(KeyState {
                latest: 0,
                count: 0,
            });
            let now = now.as_nanos().max(state.latest);
            let used = if now / self.window != state.latest / self.window {
                0
            } else {
                state.count
            };
            (used, now)
        };
        // BUG: the lock is released here; the decision below uses a stale count.
        if used >= self.limit {
            return Decision::Denied {
                retry_after: Duration::from_nanos(self.window - latest % self.window),
            };
        }
        let mut keys = self.keys.lock().unwrap();
        let state = keys.get_mut(key).expect("inserted above");
        state.latest = latest;
        state.count = used + 1;
        Decision::Allowed {
            remaining: self.limit - state.count,
        }
    }
}
