//! MISTAKE: per-key locks created on demand by a racy get-or-insert.
//!
//! Why learners write it: one lock per key lets different keys proceed in
//! parallel, and "read-lock to find it, write-lock to add it" looks careful.
//! But between dropping the read lock and taking the write lock another thread
//! can insert the same key; `insert` then overwrites its state, so two threads
//! hold two different locks for one key and both admit a request.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: RwLock<HashMap<String, Arc<Mutex<KeyState>>>>,
}

struct KeyState {
    latest: u64,
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
            keys: RwLock::new(HashMap::new()),
        })
    }

    fn state(&self, key: &str) -> Arc<Mutex<KeyState>> {
        if let Some(state) = self.keys.read().unwrap().get(key) {
            return state.clone();
        }
        let fresh = Arc::new(Mutex::new(KeyState {
            latest: 0,
            count: 0,
        }));
        // BUG: `insert` replaces whatever another thread inserted meanwhile.
        self.keys
            .write()
            .unwrap()
            .insert(key.to_string(), fresh.clone());
        fresh
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let state = self.state(key);
        let mut state = state.lock().unwrap();
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
