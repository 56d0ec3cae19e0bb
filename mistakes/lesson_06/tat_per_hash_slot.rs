//! MISTAKE: the TATs live in a fixed array of 1024 atomics, and a key's
//! TAT is the one its hash picks: two keys whose hashes land in the same slot
//! share one bucket.
//!
//! Why learners write it: it removes the map and its lock altogether, so the
//! whole limiter is lock-free, takes fixed memory however many clients call,
//! and looks like the sharding of `lesson_06_further.rs`. With a handful of
//! keys, nothing seems to collide. But a shard holds a map of whole keys; a
//! slot holds one TAT. Past a few dozen keys two of them share a slot, and one
//! client's requests spend the other's tokens.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::sync::{AtomicU64, Ordering};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct Gcra {
    /// T: the emission interval, one token's worth of time.
    interval: u64,
    /// τ = (C − 1)·T: how far ahead of `now` the TAT may run.
    tolerance: u64,
    /// One TAT per slot; a key's slot is picked by its hash.
    slots: Box<[AtomicU64]>,
}

/// How many TATs the limiter keeps, whatever the number of keys.
const SLOTS: usize = 1024;

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
            // A TAT of 0 is a full bucket.
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    fn decide(&self, tat: &AtomicU64, now: u64) -> Decision {
        let mut seen = tat.load(Ordering::Acquire);
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
                    // Further requests fit while their TAT stays within τ of now.
                    let slack = u128::from(now) + u128::from(self.tolerance);
                    let remaining = match slack.checked_sub(u128::from(next)) {
                        Some(room) => room / u128::from(self.interval) + 1,
                        None => 0,
                    };
                    return Decision::Allowed {
                        remaining: remaining as u64,
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
        // No map and no lock: the key's hash picks its TAT.
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        let slot = hasher.finish() as usize % SLOTS;
        self.decide(&self.slots[slot], now.as_nanos())
    }
}
