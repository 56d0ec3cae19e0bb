//! MISTAKE: when the map's lock is taken, the call is denied at once
//! (`try_lock`, "busy: someone else is spending a token") instead of waiting
//! for its turn.
//!
//! Why learners write it: failing fast looks better than waiting under load,
//! and with one thread the lock is never busy, so every test with one caller
//! passes. But a caller who finds the lock taken has not been judged at all:
//! the bucket may well hold tokens for both. The contract's answer is the one
//! of some one-at-a-time order of the calls, and in every such order this
//! call is allowed.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, TryLockError};
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
        let mut keys = match self.keys.try_lock() {
            Ok(keys) => keys,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            // Busy: another caller is spending a token right now.
            Err(TryLockError::WouldBlock) => {
                return Decision::Denied {
                    retry_after: Duration::from_nanos(1),
                }
            }
        };
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
