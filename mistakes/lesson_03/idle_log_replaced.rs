//! MISTAKE: a key that has been quiet for longer than the window gets a fresh
//! log, put in the map with `insert`, while another thread may still be
//! working on the old one.
//!
//! Why learners write it: once a key has been quiet for longer than W, every
//! entry of its log has expired, and throwing the old log away (with the
//! buffer it grew for up to L entries) looks cheaper than popping the entries
//! one by one. On one thread it is the same limiter. But a second caller that
//! fetched the old log before it was replaced goes on with it, finds it just
//! as idle, and replaces the first caller's fresh log with its own: both are
//! let in where only one may pass.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u64,
    keys: RwLock<HashMap<String, Arc<Mutex<Log>>>>,
}

struct Log {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Allowed requests still inside the window, oldest first.
    allowed: VecDeque<u64>,
}

impl Log {
    fn starting_at(now: u64) -> Log {
        Log {
            latest: now,
            allowed: VecDeque::new(),
        }
    }
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
            keys: RwLock::new(HashMap::new()),
        })
    }

    /// The key's log, made if the key is new.
    fn log_for(&self, key: &str, now: u64) -> Arc<Mutex<Log>> {
        if let Some(log) = self.keys.read().unwrap().get(key) {
            return log.clone();
        }
        let mut keys = self.keys.write().unwrap();
        keys.entry(key.to_owned())
            .or_insert_with(|| Arc::new(Mutex::new(Log::starting_at(now))))
            .clone()
    }

    fn decide(&self, log: &mut Log, now: u64) -> Decision {
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
            let oldest = log.allowed[0];
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - oldest)),
            }
        }
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let log = self.log_for(key, now.as_nanos());
        let mut state = log.lock().unwrap();
        let now = now.as_nanos().max(state.latest);
        if now - state.latest > self.window {
            // Quiet for longer than the window: nothing in the log counts any
            // more, so start the key over with an empty log.
            drop(state);
            let fresh = Arc::new(Mutex::new(Log::starting_at(now)));
            // BUG: another thread may hold the old log and replace this one.
            self.keys
                .write()
                .unwrap()
                .insert(key.to_owned(), fresh.clone());
            let mut state = fresh.lock().unwrap();
            return self.decide(&mut state, now);
        }
        state.latest = now;
        self.decide(&mut state, now)
    }
}
