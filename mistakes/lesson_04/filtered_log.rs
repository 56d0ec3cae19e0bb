//! MISTAKE: a "sliding counter" that is really a log of records, filtered on
//! every request, and that never forgets an idle key.
//!
//! Why learners write it: keeping every request's timestamp and counting the
//! ones inside the last W is the easiest way to get a sliding window, and one
//! classic in-memory limiter does it under this name. But that is lesson 03's
//! exact sliding log, not the weighted estimate this lesson's contract
//! defines, so its answers differ; and its records and keys are only ever
//! added, so memory grows with every key that ever called.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u64,
    window: u64,
    records: Mutex<HashMap<String, Vec<u64>>>,
}

impl SlidingCounter {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(SlidingCounter {
            limit,
            window,
            records: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for SlidingCounter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut records = self.records.lock().unwrap();
        let log = records.entry(key.to_string()).or_default();
        let now = now.as_nanos().max(log.last().copied().unwrap_or(0));
        // BUG: an exact log under the counter's name; never pruned, never evicted.
        let inside: Vec<u64> = log
            .iter()
            .copied()
            .filter(|t| now - t < self.window)
            .collect();
        if (inside.len() as u64) < self.limit {
            log.push(now);
            Decision::Allowed {
                remaining: self.limit - inside.len() as u64 - 1,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - inside[0])),
            }
        }
    }
}
