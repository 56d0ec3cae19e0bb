//! MISTAKE: an expired window is reset by replacing the window object and
//! re-reading it, and the window end is compared with `>` instead of `>=`.
//!
//! Why learners write it: "make a new window when the old one is over" reads
//! naturally, and `now > end` looks like "after the end". But two threads that
//! both see the old window expired both install a fresh one, and the later
//! replacement throws away the increment counted in the earlier one. And a
//! request exactly at `end` belongs to the next window: with `>` it is still
//! counted in the old one and is wrongly denied.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Arc, AtomicU64, Mutex, Ordering};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    windows: Mutex<HashMap<String, Arc<Window>>>,
}

struct Window {
    start: u64,
    count: AtomicU64,
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
            windows: Mutex::new(HashMap::new()),
        })
    }

    fn current(&self, key: &str) -> Option<Arc<Window>> {
        self.windows.lock().unwrap().get(key).cloned()
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let expired = match self.current(key) {
            None => true,
            // BUG: `>` where the window end should be `>=`.
            Some(w) => now > w.start.saturating_add(self.window),
        };
        if expired {
            // BUG: replace, then re-read; another thread may replace in between.
            let fresh = Arc::new(Window {
                start: now - now % self.window,
                count: AtomicU64::new(0),
            });
            self.windows.lock().unwrap().insert(key.to_string(), fresh);
        }
        let window = self.current(key).expect("inserted above");
        let used = window.count.fetch_add(1, Ordering::SeqCst);
        if used < self.limit {
            Decision::Allowed {
                remaining: self.limit - used - 1,
            }
        } else {
            window.count.fetch_sub(1, Ordering::SeqCst);
            let end = u128::from(window.start) + u128::from(self.window);
            Decision::Denied {
                retry_after: Duration::from_nanos(
                    u64::try_from(end.saturating_sub(u128::from(now)).max(1)).unwrap_or(u64::MAX),
                ),
            }
        }
    }
}
