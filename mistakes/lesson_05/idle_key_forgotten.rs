//! MISTAKE: a key found idle under the read lock is removed and started
//! afresh under the write lock, without looking again: another thread may
//! have spent its bucket in between, and that request is forgotten.
//!
//! Why learners write it: a key not called for a whole bucket's time (C·T) has
//! a full bucket whatever it held, exactly like a new key's, so "forget it and
//! start it over" looks like the same thing, and drops the old state. Alone,
//! it is. But between the read lock and the write lock another thread can take
//! a token from the old bucket; the remove throws that away, and two callers
//! get in where the limit lets one.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    /// T: the credit of one token, in nanoseconds.
    interval: u64,
    /// C·T: the credit of a full bucket.
    full: u64,
    keys: RwLock<HashMap<Box<str>, Mutex<Bucket>>>,
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
            keys: RwLock::new(HashMap::new()),
        })
    }

    fn decide(&self, bucket: &mut Bucket, now: u64) -> Decision {
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

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let mut idle = false;
        {
            let keys = self
                .keys
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(bucket) = keys.get(key) {
                let mut bucket = bucket
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                // Not called for C·T: the bucket is full again, whatever it held.
                idle = now.saturating_sub(bucket.last) >= self.full;
                if !idle {
                    return self.decide(&mut bucket, now);
                }
            }
        }
        let mut keys = self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle {
            // A full bucket is the same as no bucket: forget the idle key's
            // old state and start it over as a new key.
            keys.remove(key);
        }
        // A new key: `entry` keeps a bucket another thread inserted meanwhile.
        let bucket = keys.entry(key.into()).or_insert_with(|| {
            Mutex::new(Bucket {
                credit: self.full,
                last: now,
            })
        });
        self.decide(
            bucket
                .get_mut()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
            now,
        )
    }
}
