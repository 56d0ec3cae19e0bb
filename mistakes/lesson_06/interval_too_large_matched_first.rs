//! MISTAKE: the constructor matches on the capacity and the converted
//! interval with the "does not fit" arm first, so `new(0, u64::MAX ns + 1 ns)`
//! answers `TooLarge` instead of `ZeroLimit`.
//!
//! Why learners write it: one `match` over every case reads like a table of
//! the rules, and putting the arm for a value that did not convert first, as
//! error handling usually goes, looks tidy. Each fault alone still gets its
//! own error. But the contract fixes the order of the checks: a capacity of 0
//! first, then a zero interval, then one too large. A configuration with two
//! faults must get the first one's error.

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
        // T in nanoseconds and a whole bucket, C·T, each as a u64 if it fits.
        let interval = u64::try_from(refill_every.as_nanos()).ok();
        let whole = interval.and_then(|t| capacity.checked_mul(t));
        match (capacity, interval, whole) {
            (_, None, _) | (_, _, None) => Err(ConfigError::TooLarge),
            (0, _, _) => Err(ConfigError::ZeroLimit),
            (_, Some(0), _) => Err(ConfigError::ZeroPeriod),
            (_, Some(interval), Some(whole)) => Ok(Gcra {
                interval,
                tolerance: whole - interval,
                keys: RwLock::new(HashMap::new()),
            }),
        }
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
