//! MISTAKE: a request is admitted under the lock, and `remaining` is read
//! afterwards by a second, separate lookup, so a caller can report a count
//! that already includes another thread's request.
//!
//! Why learners write it: "take one if there is one" and "how many are left"
//! are two questions, as `try_acquire` and `available_permits` are on a
//! semaphore, and answering each with its own short critical section keeps
//! both simple. One thread at a time, the second lookup finds exactly what the
//! first left. But the lock is released in between: another thread's request
//! can be counted there, and two callers then report the same `remaining`,
//! an answer that no one-at-a-time order of their calls gives.

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

    /// Counts one request of the key if its window has room; otherwise, how
    /// long until the next window.
    fn try_acquire(&self, key: &str, now: Timestamp) -> Result<(), Duration> {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let state = keys.entry(key.into()).or_insert(KeyState {
            latest: 0,
            count: 0,
        });
        let now = now.as_nanos().max(state.latest);
        if now / self.window != state.latest / self.window {
            state.count = 0;
        }
        state.latest = now;

        if state.count < self.limit {
            state.count += 1;
            Ok(())
        } else {
            Err(Duration::from_nanos(self.window - now % self.window))
        }
    }

    /// How many more requests the key's current window has room for.
    fn available(&self, key: &str) -> u64 {
        let keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        keys.get(key)
            .map_or(self.limit, |state| self.limit - state.count)
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.try_acquire(key, now) {
            // BUG: the lock was released in between; the count read here may
            // include other threads' requests.
            Ok(()) => Decision::Allowed {
                remaining: self.available(key),
            },
            Err(retry_after) => Decision::Denied { retry_after },
        }
    }
}
