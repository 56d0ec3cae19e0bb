//! A correct lesson 01 limiter unlike the reference: it stores the window's
//! index and start instead of the latest timestamp, and computes the wait to
//! the next window in 128-bit arithmetic. The suite must accept it.

use std::collections::HashMap;
use std::time::Duration;

use kata::{ConfigError, Decision, Timestamp};

pub struct FixedWindow {
    limit: u64,
    window: u128,
    keys: HashMap<String, Entry>,
}

#[derive(Default)]
struct Entry {
    index: u128,
    allowed: u64,
    last_seen: u64,
}

impl FixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        match (limit, window.as_nanos()) {
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            (_, w) if w > u128::from(u64::MAX) => Err(ConfigError::TooLarge),
            (limit, window) => Ok(FixedWindow {
                limit,
                window,
                keys: HashMap::new(),
            }),
        }
    }

    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        let entry = self.keys.entry(key.to_owned()).or_default();
        entry.last_seen = entry.last_seen.max(now.as_nanos());
        let at = u128::from(entry.last_seen);
        let index = at / self.window;
        if index > entry.index {
            entry.index = index;
            entry.allowed = 0;
        }
        if entry.allowed == self.limit {
            let wait = (index + 1) * self.window - at;
            return Decision::Denied {
                retry_after: Duration::from_nanos(wait as u64),
            };
        }
        entry.allowed += 1;
        Decision::Allowed {
            remaining: self.limit - entry.allowed,
        }
    }
}
