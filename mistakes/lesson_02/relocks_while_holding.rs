//! MISTAKE: a helper locks the map again while the caller still holds it.
//!
//! Why learners write it: splitting `check` into small helpers is good style,
//! and each helper "just locks what it needs". But a `Mutex` is not re-entrant:
//! the helper's `lock()` waits for the caller's guard to be dropped, which
//! never happens. With std this hangs forever; here the facade names both lines.
//!
//! Shows: the first check("key", 0ns) after ConcurrentFixedWindow::new(
//! Shows: (Mutex::lock at mistakes/lesson_02/relocks_while_holding.rs:

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, KeyState>>,
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
            keys: Mutex::new(HashMap::new()),
        })
    }

    fn ensure_key(&self, key: &str) {
        let mut keys = self.keys.lock().unwrap();
        keys.entry(key.into()).or_insert(KeyState {
            latest: 0,
            count: 0,
        });
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self.keys.lock().unwrap();
        if !keys.contains_key(key) {
            // BUG: `ensure_key` locks `self.keys`, which this thread holds.
            self.ensure_key(key);
        }
        let state = keys.get_mut(key).expect("inserted above");
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
