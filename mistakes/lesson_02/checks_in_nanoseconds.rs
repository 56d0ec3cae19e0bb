//! MISTAKE: `new` converts the window to nanoseconds first and hands the
//! checks to a constructor in nanoseconds, so a limit of 0 with a window too
//! large gives `TooLarge` instead of `ZeroLimit`.
//!
//! Why learners write it: a constructor that takes plain `u64` nanoseconds is
//! handy for tests and benchmarks, and having `new` convert and delegate to it
//! keeps the checks in one place. Every fault alone still gets its error. But
//! the conversion is a check too, and it now runs before the others: with two
//! faults at once the contract wants the first in its order, the zero limit,
//! and this reports the window.

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
        // BUG: the TooLarge check runs before the ZeroLimit one.
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Self::with_window_nanos(limit, window)
    }

    /// The same limiter, with the window given in nanoseconds.
    pub fn with_window_nanos(limit: u64, window: u64) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        Ok(ConcurrentFixedWindow {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
        })
    }

    /// Decides for one key's state; the caller holds the lock.
    fn decide(&self, state: &mut KeyState, now: Timestamp) -> Decision {
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
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
