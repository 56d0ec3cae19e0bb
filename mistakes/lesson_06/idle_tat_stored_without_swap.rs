//! MISTAKE: when the TAT is already in the past, the new TAT is stored
//! without a compare-and-swap, over whatever another thread swapped in
//! meanwhile.
//!
//! Why learners write it: a key whose TAT has passed has been idle, and its
//! bucket is full: the request is allowed whatever happens, so the swap and
//! its retry loop look like wasted work there. But two threads can both load
//! the old TAT of an idle key. One swaps in `now + T`; the other stores
//! `now + T` over it, and the first one's request is forgotten: with a bucket
//! of one token, two callers get in where one may.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct Gcra {
    /// T: the emission interval, one token's worth of time.
    interval: u64,
    /// τ = (C − 1)·T: how far ahead of `now` the TAT may run.
    tolerance: u64,
    keys: RwLock<HashMap<Box<str>, AtomicU64>>,
}

impl Gcra {
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
        Ok(Gcra {
            interval,
            tolerance: (capacity - 1) * interval,
            keys: RwLock::new(HashMap::new()),
        })
    }

    /// Further requests fit while their TAT stays within τ of now.
    fn remaining(&self, now: u64, next: u64) -> u64 {
        let slack = u128::from(now) + u128::from(self.tolerance);
        match slack.checked_sub(u128::from(next)) {
            Some(room) => (room / u128::from(self.interval) + 1) as u64,
            None => 0,
        }
    }

    fn decide(&self, tat: &AtomicU64, now: u64) -> Decision {
        let mut seen = tat.load(Ordering::Acquire);
        if seen < now {
            // The TAT is in the past: the key has been idle and its bucket is
            // full. Nothing can deny this request, so it needs no swap.
            let next = now.saturating_add(self.interval);
            tat.store(next, Ordering::Release);
            return Decision::Allowed {
                remaining: self.remaining(now, next),
            };
        }
        loop {
            let start = seen.max(now);
            let ahead = start - now;
            if ahead > self.tolerance {
                // Denied requests leave the TAT alone.
                return Decision::Denied {
                    retry_after: Duration::from_nanos(ahead - self.tolerance),
                };
            }
            let next = start.saturating_add(self.interval);
            match tat.compare_exchange_weak(seen, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    return Decision::Allowed {
                        remaining: self.remaining(now, next),
                    };
                }
                // Another thread moved the TAT first: decide again on its value.
                Err(actual) => seen = actual,
            }
        }
    }
}

impl RateLimiter for Gcra {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        {
            let keys = self
                .keys
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let Some(tat) = keys.get(key) {
                return self.decide(tat, now);
            }
        }
        // A new key: `entry` keeps a TAT another thread inserted meanwhile.
        // A TAT of 0 is a full bucket.
        let mut keys = self
            .keys
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tat = keys.entry(key.into()).or_insert_with(|| AtomicU64::new(0));
        self.decide(tat, now)
    }
}
