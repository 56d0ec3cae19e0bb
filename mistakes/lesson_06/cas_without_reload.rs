//! MISTAKE: after a failed compare-and-swap, the loop retries with the TAT it
//! loaded at the start.
//!
//! Why learners write it: "retry until it works" is the CAS idiom. But the
//! compare fails because the TAT changed; retrying with the old value fails
//! for ever. Without contention (one thread) it works; with it, the thread
//! spins.
//!
//! Shows: loom stopped an execution that never ended
//! Shows: repeated ×

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

    fn decide(&self, tat: &AtomicU64, now: u64) -> Decision {
        let seen = tat.load(Ordering::Acquire);
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
                // BUG: ignores the value that made the swap fail.
                Err(_) => super::sync::spin_loop(),
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
