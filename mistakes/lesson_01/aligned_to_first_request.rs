//! MISTAKE: each key's window starts at its first request, not on the clock.
//!
//! Why learners write it: "a window of W from the first request" is how many
//! people first picture a fixed window. The contract aligns windows to the
//! origin, `[k·W, (k+1)·W)`, so that every key and every server agrees on where
//! windows start.
//!
//!
//! Shows: cargo run -- compare 1 'L=2 W=1_000ns: a@900 a@950 a@1000'

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
        let now = now.as_nanos().max(state.latest);
        // BUG: the window is [first request, first request + W).
        if state.count == 0 || now - state.latest >= self.window {
            state.count = 0;
            state.latest = now;
        }

        if state.count < self.limit {
            state.count += 1;
            Decision::Allowed {
                remaining: self.limit - state.count,
            }
        } else {
            // The next window starts at (k+1)·W; computed as W - (now mod W),
            // which cannot overflow even when (k+1)·W would.
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - state.latest)),
            }
        }
    }
}
