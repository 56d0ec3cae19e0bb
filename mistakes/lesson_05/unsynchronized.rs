//! MISTAKE: each bucket is two atomics, read and written without a lock or a
//! compare-and-swap.
//!
//! Why learners write it: atomics make every single load and store safe, and
//! no lock looks fast. But a refill is read-modify-write of two numbers: two
//! threads load the same credit, both find a token, both store "one less", and
//! one token is spent twice. The classic design does exactly this.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    interval: u64,
    full: u64,
    keys: RwLock<HashMap<Box<str>, Bucket>>,
}

struct Bucket {
    credit: AtomicU64,
    last: AtomicU64,
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

    fn decide(&self, bucket: &Bucket, now: u64) -> Decision {
        // BUG: load, compute, store: another thread can act in between.
        let last = bucket.last.load(Ordering::SeqCst);
        let now = now.max(last);
        let credit = bucket
            .credit
            .load(Ordering::SeqCst)
            .saturating_add(now - last)
            .min(self.full);
        bucket.last.store(now, Ordering::SeqCst);
        if credit >= self.interval {
            bucket
                .credit
                .store(credit - self.interval, Ordering::SeqCst);
            Decision::Allowed {
                remaining: (credit - self.interval) / self.interval,
            }
        } else {
            bucket.credit.store(credit, Ordering::SeqCst);
            Decision::Denied {
                retry_after: Duration::from_nanos(self.interval - credit),
            }
        }
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        {
            let keys = self.keys.read().unwrap();
            if let Some(bucket) = keys.get(key) {
                return self.decide(bucket, now);
            }
        }
        let mut keys = self.keys.write().unwrap();
        let bucket = keys.entry(key.into()).or_insert_with(|| Bucket {
            credit: AtomicU64::new(self.full),
            last: AtomicU64::new(now),
        });
        self.decide(bucket, now)
    }
}
