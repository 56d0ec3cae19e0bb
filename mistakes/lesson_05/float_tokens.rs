//! MISTAKE: tokens are kept as a float.
//!
//! Why learners write it: "tokens += elapsed / T" is the textbook refill, and
//! a float keeps the fraction. But the fraction is rounded: three refills of a
//! third of a token make 0.9999999999999999, not 1, and a request exactly on
//! the refill instant is denied (or, rounding the other way, one too early is
//! allowed).

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
    /// BUG: tokens as a float.
    tokens: f64,
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
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            // A new key's bucket is full.
            let fresh = Bucket {
                tokens: (self.full / self.interval) as f64,
                last: now,
            };
            keys.insert(key.into(), fresh);
        }
        let bucket = keys.get_mut(key).expect("inserted above");

        // A late timestamp counts as the latest seen: time never runs
        // backwards for a bucket, so `now - last` cannot underflow.
        let now = now.max(bucket.last);
        let capacity = (self.full / self.interval) as f64;
        bucket.tokens =
            (bucket.tokens + (now - bucket.last) as f64 / self.interval as f64).min(capacity);
        bucket.last = now;

        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Decision::Allowed {
                remaining: bucket.tokens as u64,
            }
        } else {
            let wait = ((1.0 - bucket.tokens) * self.interval as f64).ceil() as u64;
            Decision::Denied {
                retry_after: Duration::from_nanos(wait.max(1)),
            }
        }
    }
}
