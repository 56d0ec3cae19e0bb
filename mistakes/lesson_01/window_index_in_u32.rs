//! MISTAKE: each key keeps the index of its window as a `u32`, computed as
//! `(now / W) as u32`, so two windows exactly 2^32 windows apart look like the
//! same one and the count is not reset.
//!
//! Why learners write it: four billion windows feels like forever, and a
//! 32-bit index keeps the state small. But `as` keeps only the low 32 bits:
//! with a 1 ms window a key that comes back after 2^32 windows (about 50 days)
//! finds its old count still there and is denied, and with a 1 ns window that
//! takes four seconds. Windows a few apart are told apart correctly, which is
//! why no short test ever sees it.

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
    /// The window that holds `latest`, counted from the origin.
    index: u32,
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
        if !self.keys.contains_key(key) {
            self.keys.insert(
                key.to_string(),
                KeyState {
                    latest: 0,
                    index: 0,
                    count: 0,
                },
            );
        }
        let state = self.keys.get_mut(key).expect("inserted above");

        // A timestamp older than one already seen is treated as the latest
        // one: a late request must not reopen a window that has moved on.
        let now = now.as_nanos().max(state.latest);
        // BUG: only the low 32 bits of the window index are kept.
        let index = (now / self.window) as u32;
        if index != state.index {
            state.index = index;
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
