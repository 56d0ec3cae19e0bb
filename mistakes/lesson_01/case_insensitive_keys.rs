//! MISTAKE: keys are trimmed and lowercased before they are looked up, so
//! `"Alice"`, `"alice"` and `"alice "` share one count.
//!
//! Why learners write it: keys often come from user input (an e-mail address,
//! a user name, a header value), and folding them looks like closing a
//! loophole: a client cannot get a fresh allowance by changing the case of its
//! name. But the limiter is not the place to decide which keys are the same:
//! every `&str` is a key of its own, and two distinct keys that happen to fold
//! alike now use up each other's requests.

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
        // BUG: distinct keys that differ only in case or padding become one.
        let key = key.trim().to_lowercase();
        let state = self.keys.entry(key).or_insert(KeyState {
            latest: 0,
            count: 0,
        });

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
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - now % self.window),
            }
        }
    }
}
