//! MISTAKE: each key remembers where its window starts, and a call walks
//! that start forward one window at a time until `now` is inside it:
//! `while now - start >= w { start += w }`.
//!
//! Why learners write it: it reads like the rule ("move to the next window
//! when this one is over") and it gives every answer right: on a timeline of
//! a few windows no test can tell it from the division. But the loop runs
//! once per window that went by: after a key was idle for a day with a window
//! of a millisecond, one call walks 86 million windows, and with a window of
//! one nanosecond, forever. The window that holds `now` is a division away:
//! `now / w * w`.
//!
//! Shows: too slow after an idle gap of 2^40 windows

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
    /// Where the window that holds `latest` starts.
    start: u64,
    /// Requests allowed in that window.
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
        let state = self.keys.entry(key.to_string()).or_insert(KeyState {
            latest: 0,
            start: 0,
            count: 0,
        });
        let now = now.as_nanos().max(state.latest);
        state.latest = now;
        // BUG: one step per window that went by.
        while now - state.start >= self.window {
            state.start += self.window;
            state.count = 0;
        }

        if state.count < self.limit {
            state.count += 1;
            Decision::Allowed {
                remaining: self.limit - state.count,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - state.start)),
            }
        }
    }
}
