//! MISTAKE: an entry idle for more than 1_000 windows is treated as expired,
//! as in a cache with a time to live: the caller that finds it removes it and
//! inserts a fresh state, and a second caller of the same key, seeing the
//! fresh state still marked as idle, removes that one in turn while the first
//! is about to count on it.
//!
//! Why learners write it: keys come and go, and a map that never forgets one
//! looks like a leak; expiring entries when they are touched, the way a cache
//! or a Redis key with a time to live does, is the familiar answer. Alone it
//! is harmless: an expired key starts over exactly as its next window would
//! have. But an entry is not garbage while another thread holds its `Arc`. A
//! fresh state, until its first request is counted, looks as idle as the one
//! it replaced; the second caller throws it away and inserts its own, the two
//! callers count on two states, and both are allowed where one may pass.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

/// How many whole windows a key may stay idle before its entry expires.
const IDLE_WINDOWS: u64 = 1_000;

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: RwLock<HashMap<Box<str>, Arc<Mutex<KeyState>>>>,
}

struct KeyState {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Requests allowed in the window that contains `latest`.
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

    /// Whether a key's entry has sat idle so long that it has expired.
    fn expired(&self, state: &Mutex<KeyState>, now: u64) -> bool {
        let state = state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (now / self.window).saturating_sub(state.latest / self.window) > IDLE_WINDOWS
    }

    /// The key's state: a live entry as it is; an expired one replaced by a
    /// fresh state, as for a key never seen.
    fn state(&self, key: &str, now: u64) -> Arc<Mutex<KeyState>> {
        {
            let keys = self
                .keys
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(state) = keys.get(key) {
                if !self.expired(state, now) {
                    return state.clone();
                }
            }
        }
        let mut keys = self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // BUG: a fresh state that another caller inserted, and has not counted
        // on yet, looks expired too; removing it leaves that caller counting
        // on a state the map no longer holds.
        if keys.get(key).is_some_and(|state| self.expired(state, now)) {
            keys.remove(key);
        }
        keys.entry(key.into())
            .or_insert_with(|| {
                Arc::new(Mutex::new(KeyState {
                    latest: 0,
                    count: 0,
                }))
            })
            .clone()
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let state = self.state(key, now.as_nanos());
        let mut state = state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
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
