//! MISTAKE: the refill interval is converted to u64 nanoseconds before the
//! capacity is checked, so `new(0, u64::MAX ns + 1 ns)` answers `TooLarge`
//! instead of `ZeroLimit`.
//!
//! Why learners write it: `u64::try_from(refill_every.as_nanos())?` at the top
//! turns the `Duration` into the number every later check and the whole
//! limiter work with, and each fault alone still gets its own error. But the
//! contract fixes the order in which faults are reported: a capacity of 0
//! first, then a zero interval, then one too large. A configuration with two
//! faults must get the first one's error.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    /// T: the credit of one token, in nanoseconds.
    interval: u64,
    /// C·T: the credit of a full bucket.
    full: u64,
    keys: Mutex<HashMap<Box<str>, Bucket>>,
}

struct Bucket {
    /// Credit in nanoseconds at `last`, at most `full`.
    credit: u64,
    /// The latest timestamp this key was called with, denied calls included.
    last: u64,
}

impl TokenBucket {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        // T in nanoseconds first: everything below works in u64.
        let interval = u64::try_from(refill_every.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        if capacity == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if interval == 0 {
            return Err(ConfigError::ZeroPeriod);
        }
        let full = capacity
            .checked_mul(interval)
            .ok_or(ConfigError::TooLarge)?;
        Ok(TokenBucket {
            interval,
            full,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            // A new key's bucket is full.
            let fresh = Bucket {
                credit: self.full,
                last: now,
            };
            keys.insert(key.into(), fresh);
        }
        let bucket = keys.get_mut(key).expect("inserted above");

        // A late timestamp counts as the latest seen: time never runs
        // backwards for a bucket, so `now - last` cannot underflow.
        let now = now.max(bucket.last);
        bucket.credit = bucket
            .credit
            .saturating_add(now - bucket.last)
            .min(self.full);
        bucket.last = now;

        if bucket.credit >= self.interval {
            bucket.credit -= self.interval;
            Decision::Allowed {
                remaining: bucket.credit / self.interval,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(self.interval - bucket.credit),
            }
        }
    }
}
