//! A correct lesson 02 limiter unlike the reference: a read-locked map of
//! per-key mutexes, so different keys do not wait for each other; a new key is
//! inserted under the write lock with `entry`, which keeps whatever another
//! thread inserted first. The suite must accept it.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u128,
    keys: RwLock<HashMap<String, Mutex<Entry>>>,
}

#[derive(Default)]
struct Entry {
    index: u128,
    allowed: u64,
    last_seen: u64,
}

impl ConcurrentFixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        match (limit, window.as_nanos()) {
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            (_, w) if w > u128::from(u64::MAX) => Err(ConfigError::TooLarge),
            (limit, window) => Ok(ConcurrentFixedWindow {
                limit,
                window,
                keys: RwLock::new(HashMap::new()),
            }),
        }
    }

    fn decide(&self, entry: &mut Entry, now: Timestamp) -> Decision {
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

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        {
            let keys = self.keys.read().unwrap();
            if let Some(entry) = keys.get(key) {
                return self.decide(&mut entry.lock().unwrap(), now);
            }
        }
        let mut keys = self.keys.write().unwrap();
        let entry = keys.entry(key.to_owned()).or_default();
        self.decide(entry.get_mut().unwrap(), now)
    }
}
