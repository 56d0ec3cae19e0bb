//! MISTAKE: the decision (forget, count, append) is made under one lock, but
//! `remaining` is counted afterwards, under a second lock.
//!
//! Why learners write it: the lesson asks for the whole decision under one
//! lock, and it is; `remaining` looks like a report on the log that can be
//! read whenever, so it gets a helper of its own. But between the two locks
//! another thread can append to the same log: two callers let in one after
//! the other both count both entries and both answer with the lower
//! `remaining`, which no one-at-a-time order gives.

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

    /// Forgets, counts and appends under the lock: `Err(wait)` if denied.
    fn admit(&self, key: &str, now: Timestamp) -> Result<(), Duration> {
        let mut keys = self.keys.lock().unwrap();
        let log = keys.entry(key.into()).or_insert_with(|| Log {
            latest: 0,
            allowed: VecDeque::new(),
        });
        let now = now.as_nanos().max(log.latest);
        log.latest = now;
        while log.allowed.front().is_some_and(|&t| now - t >= self.window) {
            log.allowed.pop_front();
        }
        if (log.allowed.len() as u64) < self.limit {
            log.allowed.push_back(now);
            Ok(())
        } else {
            let oldest = log.allowed[0];
            Err(Duration::from_nanos(self.window - (now - oldest)))
        }
    }

    /// How many of the key's requests are inside the window at its latest
    /// timestamp.
    fn used(&self, key: &str) -> u64 {
        let keys = self.keys.lock().unwrap();
        let log = &keys[key];
        let inside = log
            .allowed
            .iter()
            .filter(|&&t| log.latest - t < self.window);
        inside.count() as u64
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.admit(key, now) {
            // BUG: the lock was released in between; the log may have grown.
            Ok(()) => Decision::Allowed {
                remaining: self.limit - self.used(key),
            },
            Err(retry_after) => Decision::Denied { retry_after },
        }
    }
}
