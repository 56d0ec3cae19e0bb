//! MISTAKE: the token is taken under the bucket's lock, and `remaining` is
//! read afterwards under a second lock, from a bucket other threads may have
//! drawn from in between.
//!
//! Why learners write it: "take a token" and "how many are left" are two
//! questions, and the second is the one a `RateLimit-Remaining` header asks,
//! so each gets a method of its own that locks the bucket. One thread at a
//! time, the answers are right. But when two threads call at once, both take
//! a token, then both read the bucket after the other's take: they answer the
//! same `remaining`, which no one-at-a-time order gives.

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

    /// Takes one token if there is one, or says how long until there is.
    fn take(&self, bucket: &Mutex<Bucket>, now: u64) -> Result<(), Duration> {
        let mut bucket = bucket
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = now.max(bucket.last);
        bucket.credit = bucket
            .credit
            .saturating_add(now - bucket.last)
            .min(self.full);
        bucket.last = now;
        if bucket.credit >= self.interval {
            bucket.credit -= self.interval;
            Ok(())
        } else {
            Err(Duration::from_nanos(self.interval - bucket.credit))
        }
    }

    /// The whole tokens in the bucket at `now`, without taking any.
    fn tokens_left(&self, bucket: &Mutex<Bucket>, now: u64) -> u64 {
        let bucket = bucket
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = now.max(bucket.last);
        let credit = bucket
            .credit
            .saturating_add(now - bucket.last)
            .min(self.full);
        credit / self.interval
    }

    fn decide(&self, bucket: &Mutex<Bucket>, now: u64) -> Decision {
        match self.take(bucket, now) {
            Ok(()) => Decision::Allowed {
                remaining: self.tokens_left(bucket, now),
            },
            Err(retry_after) => Decision::Denied { retry_after },
        }
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        {
            let keys = self
                .keys
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(bucket) = keys.get(key) {
                return self.decide(bucket, now);
            }
        }
        let mut keys = self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // A new key: `entry` keeps a bucket another thread inserted meanwhile.
        let bucket = keys.entry(key.into()).or_insert_with(|| {
            Mutex::new(Bucket {
                credit: self.full,
                last: now,
            })
        });
        self.decide(bucket, now)
    }
}
