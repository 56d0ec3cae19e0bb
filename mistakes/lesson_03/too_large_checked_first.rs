//! MISTAKE: the window is converted to `u64` nanoseconds, which can fail with
//! `TooLarge`, before the limit is checked, so `new(0, <a window too long>)`
//! answers `TooLarge` instead of `ZeroLimit`.
//!
//! Why learners write it: converting the window first gives a plain `u64` to
//! test against zero, and each fault alone still gets its own error. But the
//! contract checks the faults in a fixed order (`ZeroLimit`, then
//! `ZeroPeriod`, then `TooLarge`) so that a configuration with two of them
//! always reports the same one, and here the `?` jumps the queue.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, Log>>,
}

struct Log {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Allowed requests still inside the window, oldest first.
    allowed: VecDeque<u64>,
}

impl SlidingLog {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        // BUG: the conversion returns `TooLarge` before the limit is looked at.
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        Ok(SlidingLog {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            let log = Log {
                latest: 0,
                allowed: VecDeque::new(),
            };
            keys.insert(key.into(), log);
        }
        let log = keys.get_mut(key).expect("inserted above");

        // A late timestamp counts as the latest seen: logging it as it came
        // would let its entry expire early.
        let now = now.as_nanos().max(log.latest);
        log.latest = now;

        // `now - t >= W` rather than `t + W <= now`: no overflow near u64::MAX.
        while log.allowed.front().is_some_and(|&t| now - t >= self.window) {
            log.allowed.pop_front();
        }

        let used = log.allowed.len() as u64;
        if used < self.limit {
            log.allowed.push_back(now);
            Decision::Allowed {
                remaining: self.limit - used - 1,
            }
        } else {
            // The oldest entry leaves the interval W after it was logged.
            let oldest = log.allowed[0];
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - oldest)),
            }
        }
    }
}
