//! MISTAKE: the buckets live in a `thread_local!` map, so no lock is needed:
//! each thread keeps its own bucket for every key.
//!
//! Why learners write it: per-thread state is the classic way to avoid
//! contention, and it is lock-free by construction. But a limit is shared by
//! every caller of the limiter: with buckets per thread, a client whose
//! requests land on N threads gets N buckets. Loom runs all its threads on one
//! OS thread, so there the map looks shared; only real threads show it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use kata::{ConfigError, Decision, RateLimiter, Timestamp};

thread_local! {
    /// Every key's bucket, as this thread sees it.
    static BUCKETS: RefCell<HashMap<Box<str>, Bucket>> = RefCell::new(HashMap::new());
}

pub struct TokenBucket {
    /// T: the credit of one token, in nanoseconds.
    interval: u64,
    /// C·T: the credit of a full bucket.
    full: u64,
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
        // A new limiter starts with no buckets on this thread.
        BUCKETS.with(|b| b.borrow_mut().clear());
        Ok(TokenBucket { interval, full })
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        BUCKETS.with(|buckets| {
            let mut keys = buckets.borrow_mut();
            let bucket = keys.entry(key.into()).or_insert(Bucket {
                credit: self.full,
                last: now,
            });
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
        })
    }
}
