//! MISTAKE: the window is converted to nanoseconds before the limit is
//! checked, so a limit of 0 with a window too large gives `TooLarge` instead
//! of `ZeroLimit`.
//!
//! Why learners write it: converting the `Duration` once at the top and then
//! checking plain integers reads tidily, and every fault on its own still
//! gets the right error. But `?` returns at the first failure, so the order of
//! the lines is the order of the checks: with two faults at once, the
//! contract wants the zero limit reported, and this reports the window.

use std::collections::HashMap;
use std::time::Duration;

use kata::{ConfigError, Decision, Timestamp};

pub struct FixedWindow {
    limit: u64,
    window: u64,
    keys: HashMap<String, KeyState>,
}

struct KeyState {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Requests allowed in the window that contains `latest`.
    count: u64,
}

impl FixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        // BUG: TooLarge is checked before ZeroLimit.
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        Ok(FixedWindow {
            limit,
            window,
            keys: HashMap::new(),
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
            // The next window starts at (k+1)·W; computed as W - (now mod W),
            // which cannot overflow even when (k+1)·W would.
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - now % self.window),
            }
        }
    }
}
