//! MISTAKE: a refill counts the whole intervals since the last one in a
//! `u32`, so after 2^32 intervals of idleness the count wraps: the bucket
//! gains a few tokens, or none, instead of filling up.
//!
//! Why learners write it: this bucket keeps whole tokens and the instant the
//! next one started to accrue, and moves that instant on by whole intervals
//! with `refill_every * refills`, which keeps the fraction. `Duration` can only
//! be multiplied by a `u32`, and four billion refills seem more than any key
//! will ever wait for. But with T = 1 ns that is four seconds, and with
//! T = 1 µs a little over an hour: a key idle for exactly 2^32 intervals comes
//! back to a bucket that is still empty, and its wait, `T` minus the time
//! earned, underflows.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    /// C: the most tokens a bucket holds.
    capacity: u64,
    /// T, as given.
    refill_every: Duration,
    /// T in nanoseconds.
    interval: u64,
    keys: Mutex<HashMap<Box<str>, Bucket>>,
}

struct Bucket {
    /// Whole tokens in the bucket, at most `capacity`.
    tokens: u64,
    /// While the bucket is not full: when the token being earned started to
    /// accrue. The next token arrives at `since + T`.
    since: Timestamp,
    /// The latest timestamp this key was called with, denied calls included.
    last: Timestamp,
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
        capacity
            .checked_mul(interval)
            .ok_or(ConfigError::TooLarge)?;
        Ok(TokenBucket {
            capacity,
            refill_every,
            interval,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            // A new key's bucket is full.
            let fresh = Bucket {
                tokens: self.capacity,
                since: now,
                last: now,
            };
            keys.insert(key.into(), fresh);
        }
        let bucket = keys.get_mut(key).expect("inserted above");

        let now = now.max(bucket.last);
        bucket.last = now;

        if bucket.tokens < self.capacity {
            // The whole intervals since the token being earned started.
            let elapsed = now.as_nanos() - bucket.since.as_nanos();
            let refills = (elapsed / self.interval) as u32;
            bucket.tokens = bucket
                .tokens
                .saturating_add(u64::from(refills))
                .min(self.capacity);
            // Their time is used up; what is left counts toward the next token.
            bucket.since = bucket.since + self.refill_every * refills;
        }

        if bucket.tokens == 0 {
            let earned = now.as_nanos() - bucket.since.as_nanos();
            return Decision::Denied {
                retry_after: Duration::from_nanos(self.interval - earned),
            };
        }
        if bucket.tokens == self.capacity {
            // A full bucket earned nothing: the next token starts now.
            bucket.since = now;
        }
        bucket.tokens -= 1;
        Decision::Allowed {
            remaining: bucket.tokens,
        }
    }
}
