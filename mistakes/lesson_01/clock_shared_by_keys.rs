//! MISTAKE: one window clock for the whole limiter: when any key moves to a
//! new window, every key's count is cleared.
//!
//! Why learners write it: windows are aligned to the origin, so "all keys
//! change window at the same instant" seems to allow one global reset. It does
//! only if every key sees the same clock. Keys are independent: key b may be
//! at 500 while key a is at 1_500, and b moving the global window back and
//! forth wipes a's count.

use std::collections::HashMap;
use std::time::Duration;

use kata::{ConfigError, Decision, Timestamp};

pub struct FixedWindow {
    limit: u64,
    window: u64,
    keys: HashMap<String, KeyState>,
    current_window: u64,
}

struct KeyState {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Requests allowed in the window that contains `latest`.
    count: u64,
}

impl FixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(FixedWindow {
            limit,
            window,
            keys: HashMap::new(),
            current_window: 0,
        })
    }

    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        // Look up before inserting: the map only needs an owned String the
        // first time a key is seen.
        if !self.keys.contains_key(key) {
            self.keys.insert(
                key.to_string(),
                KeyState {
                    latest: 0,
                    count: 0,
                },
            );
        }
        let state = self.keys.get_mut(key).expect("inserted above");

        // A timestamp older than one already seen is treated as the latest
        // one: a late request must not reopen a window that has moved on.
        let now = now.as_nanos().max(state.latest);
        state.latest = now;
        // BUG: one window for all keys; entering a new one clears every count.
        if now / self.window != self.current_window {
            self.current_window = now / self.window;
            for other in self.keys.values_mut() {
                other.count = 0;
            }
        }
        let state = self.keys.get_mut(key).expect("inserted above");

        if state.count < self.limit {
            state.count += 1;
            Decision::Allowed {
                remaining: self.limit - state.count,
            }
        } else {
            // The next window starts at (k+1)·W; computed as W - (now mod W),
            // which cannot overflow even when (k+1)·W would.
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - now % self.window),
            }
        }
    }
}
