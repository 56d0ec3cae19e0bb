//! MISTAKE: a late timestamp is used as it came.
//!
//! Why learners write it: on one thread time never goes backwards. But callers
//! stamp requests before they reach the limiter, and a request stamped 1_500
//! can arrive after one stamped 2_500. Taken at face value it moves the key
//! back into the old window and resets the count, so the new window admits
//! more than L.

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
        // BUG: no clamp to the latest timestamp seen.
        let now = now.as_nanos();
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
