//! MISTAKE: a late timestamp is logged as it came, and expired entries are
//! dropped with `retain` on their own timestamps.
//!
//! Why learners write it: on one thread time never goes backwards, and
//! `retain(|t| now - t < W)` is the shortest way to forget old entries. But a
//! request stamped 1_500 can reach the limiter after one stamped 2_500. Logged
//! at 1_500, `retain` drops its entry as soon as 2_500 is reached, while the
//! contract places the request at 2_500 and counts it until 3_500: an extra
//! request gets in.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, Log>>,
}

struct Log {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Allowed requests still inside the window, oldest first.
    allowed: VecDeque<u64>,
}

impl SlidingLog {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(SlidingLog {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            let log = Log {
                latest: 0,
                allowed: VecDeque::new(),
            };
            keys.insert(key.into(), log);
        }
        let log = keys.get_mut(key).expect("inserted above");

        // A late timestamp counts as the latest seen: logging it as it came
        // would let its entry expire early.
        // BUG: no clamp to the latest timestamp seen.
        let now = now.as_nanos();
        log.latest = log.latest.max(now);

        // `now - t >= W` rather than `t + W <= now`: no overflow near u64::MAX.
        log.allowed.retain(|&t| t > now || now - t < self.window);

        let used = log.allowed.len() as u64;
        if used < self.limit {
            log.allowed.push_back(now);
            Decision::Allowed {
                remaining: self.limit - used - 1,
            }
        } else {
            // The oldest entry leaves the interval W after it was logged.
            let oldest = log.allowed.iter().min().copied().unwrap_or(now);
            Decision::Denied {
                retry_after: Duration::from_nanos(
                    self.window
                        .saturating_sub(now.saturating_sub(oldest))
                        .max(1),
                ),
            }
        }
    }
}
