//! MISTAKE: keys are trimmed and lowercased before they are looked up, so
//! `"a"`, `"A"` and `"a "` share one bucket.
//!
//! Why learners write it: keys come from headers and user input, where
//! `"Alice"` and `"alice "` look like one client, and folding them seems to
//! close a loophole. But the contract says every `&str` is a key of its own:
//! keys that differ in case or in trailing space are different keys. Here one
//! of them spends the other's tokens, and keys that look alike drain each
//! other's buckets.

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
        if capacity == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if refill_every.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let interval = u64::try_from(refill_every.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
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
        // One client, however its key is spelled.
        let key = key.trim().to_lowercase();
        let key = key.as_str();
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
