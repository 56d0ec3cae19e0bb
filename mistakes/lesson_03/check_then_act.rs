//! MISTAKE: the log is counted under one lock and appended to under another.
//!
//! Why learners write it: each access to the map is protected, so it feels
//! safe. But between the two locks another thread can count the same log,
//! both see room for one more, and both are let in.

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
        let (used, oldest, now) = {
            let mut keys = self.keys.lock().unwrap();
            let log = keys.entry(key.into()).or_insert(Log {
                latest: 0,
                allowed: VecDeque::new(),
            });
            let now = now.as_nanos().max(log.latest);
            log.latest = now;
            while log.allowed.front().is_some_and(|&t| now - t >= self.window) {
                log.allowed.pop_front();
            }
            (log.allowed.len() as u64, log.allowed.front().copied(), now)
        };
        // BUG: the lock is released here; the count above may be stale.
        if used >= self.limit {
            let oldest = oldest.expect("a full log");
            return Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - oldest)),
            };
        }
        let mut keys = self.keys.lock().unwrap();
        let log = keys.get_mut(key).expect("inserted above");
        log.allowed.push_back(now);
        Decision::Allowed {
            remaining: self.limit - used - 1,
        }
    }
}
