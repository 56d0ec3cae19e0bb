//! MISTAKE: each key's log keeps at most 1_024 entries; when it is full the
//! oldest entry is dropped to make room.
//!
//! Why learners write it: a log that grows with the limit looks like a memory
//! risk, and a fixed cap looks like the safe bound every production buffer
//! has. But the log *is* the count: with a limit above the cap, dropping the
//! oldest entry forgets a request that is still inside the window, so more
//! than the limit get in. Denied requests are never logged, so the log is
//! already bounded by the limit itself.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

/// A bound on each key's memory.
const MOST_ENTRIES: usize = 1_024;

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
        while log.allowed.front().is_some_and(|&t| now - t >= self.window) {
            log.allowed.pop_front();
        }

        let used = log.allowed.len() as u64;
        if used < self.limit {
            if log.allowed.len() == MOST_ENTRIES {
                log.allowed.pop_front();
            }
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
