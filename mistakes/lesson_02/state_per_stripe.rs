//! MISTAKE: the state lives in a fixed array of 64 stripes, one per hash of
//! the key modulo 64, instead of one per key: every key that hashes to the
//! same stripe shares its count.
//!
//! Why learners write it: lock striping is the classic cure for one hot
//! `Mutex`: hash the key, take stripe `hash % 64`, and threads working on
//! different keys rarely meet. But a stripe should hold a lock over a map of
//! keys, not the state of one key. With only the count in the stripe, there
//! are 64 counters for all the keys in the world: once more than a handful of
//! keys are in use, two of them share a stripe, and one key's requests use
//! up the other's.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

/// How many stripes the keys are spread over.
const STRIPES: usize = 64;

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    stripes: Vec<Mutex<KeyState>>,
}

struct KeyState {
    /// The latest timestamp this stripe was called with, denied calls included.
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
            stripes: (0..STRIPES)
                .map(|_| {
                    Mutex::new(KeyState {
                        latest: 0,
                        count: 0,
                    })
                })
                .collect(),
        })
    }

    /// The stripe that holds a key.
    fn stripe(&self, key: &str) -> &Mutex<KeyState> {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        // BUG: the stripe is the key's state, shared with every key that
        // hashes to the same stripe.
        &self.stripes[(hasher.finish() % STRIPES as u64) as usize]
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut state = self
            .stripe(key)
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
