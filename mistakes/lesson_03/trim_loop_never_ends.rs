//! MISTAKE: the loop that forgets expired entries never ends.
//!
//! Why learners write it: `while let Some(&t) = log.front()` with a pop inside
//! an `if` reads as "pop while expired". But when the oldest entry is still
//! inside the window nothing is popped and nothing breaks out: the thread spins
//! forever on its first request whose log is not empty.
//!
//! Shows: timeline (not shrunk: it hung

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
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
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
        // BUG: nothing leaves the loop once the oldest entry is still inside.
        while let Some(&t) = log.allowed.front() {
            if now - t >= self.window {
                log.allowed.pop_front();
            }
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
