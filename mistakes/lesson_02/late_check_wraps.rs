//! MISTAKE: a late timestamp is detected with wrapping arithmetic,
//! `(now.wrapping_sub(latest) as i64) < 0`, so a request more than 2^63 ns
//! (about 292 years) after its key's latest one is taken for a late one and
//! counted in the old window.
//!
//! Why learners write it: it is how kernels and network stacks compare
//! timestamps and sequence numbers (Linux's `time_after`, TCP's sequence
//! arithmetic), and it is right for every gap a test of a few windows makes.
//! But those counters wrap around; this clock does not. Here a timestamp
//! earlier than another is simply smaller, and `now < latest` is the whole
//! test: with the wrapping one, a key that comes back after a long enough
//! silence, or a window of a quarter of the clock, finds its old window's
//! count still in force and is denied.

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
            keys: Mutex::new(HashMap::new()),
        })
    }

    /// Decides for one key's state; the caller holds the lock.
    fn decide(&self, state: &mut KeyState, now: Timestamp) -> Decision {
        let mut now = now.as_nanos();
        // BUG: a wrapping comparison; a gap of 2^63 ns or more looks negative.
        if (now.wrapping_sub(state.latest) as i64) < 0 {
            // Late: counts as the latest timestamp seen.
            now = state.latest;
        }
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

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(state) = keys.get_mut(key) {
            return self.decide(state, now);
        }
        let state = keys.entry(key.into()).or_insert(KeyState {
            latest: 0,
            count: 0,
        });
        self.decide(state, now)
    }
}
