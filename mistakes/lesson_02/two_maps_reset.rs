//! MISTAKE: counts and window starts live in two separate concurrent maps, and
//! an expired window is reset with two separate writes.
//!
//! Why learners write it: it mirrors a classic in-memory limiter design, a map
//! of counters next to a map of window starts, each "thread-safe" on its own.
//! But two thread-safe maps do not make one thread-safe decision: between
//! "this window expired" and "count := 0" another thread can reset too, or
//! count into the old window, and increments are lost.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    counts: RwLock<HashMap<String, AtomicU64>>,
    starts: RwLock<HashMap<String, AtomicU64>>,
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
            counts: RwLock::new(HashMap::new()),
            starts: RwLock::new(HashMap::new()),
        })
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let start_of_now = now - now % self.window;
        if !self.starts.read().unwrap().contains_key(key) {
            let mut starts = self.starts.write().unwrap();
            starts
                .entry(key.to_string())
                .or_insert_with(|| AtomicU64::new(start_of_now));
            let mut counts = self.counts.write().unwrap();
            counts
                .entry(key.to_string())
                .or_insert_with(|| AtomicU64::new(0));
        }
        let starts = self.starts.read().unwrap();
        let counts = self.counts.read().unwrap();
        let start = &starts[key];
        let count = &counts[key];
        if start.load(Ordering::SeqCst) != start_of_now {
            // BUG: two writes, two maps, no lock over both.
            start.store(start_of_now, Ordering::SeqCst);
            count.store(0, Ordering::SeqCst);
        }
        let used = count.fetch_add(1, Ordering::SeqCst);
        if used < self.limit {
            Decision::Allowed {
                remaining: self.limit - used - 1,
            }
        } else {
            count.fetch_sub(1, Ordering::SeqCst);
            Decision::Denied {
                retry_after: Duration::from_nanos(start_of_now + self.window - now),
            }
        }
    }
}
