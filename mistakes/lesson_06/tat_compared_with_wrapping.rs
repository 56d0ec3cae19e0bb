//! MISTAKE: the TAT is compared with `now` by the sign of their wrapped
//! difference, which takes a TAT more than 2^63 ns behind `now` for one ahead
//! of it (and one more than 2^63 ns ahead for one behind).
//!
//! Why learners write it: timestamps that may wrap are compared this way in
//! kernels and network protocols (`time_after`, TCP sequence numbers), and it
//! gives the same answers as `max` for every gap anyone tries by hand. But
//! this clock does not wrap: it runs from 0 to `u64::MAX`, and a TAT can fall
//! behind `now` by more than half of it: a key idle that long, or a new key's
//! TAT of 0 at any instant past 2^63 ns. That TAT then looks ahead of `now`,
//! and `start − now` underflows. With C·T past 2^63 ns, the opposite: a TAT
//! far ahead looks past, and the key gets a whole new burst.

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
        let mut seen = tat.load(Ordering::Acquire);
        loop {
            let start = if later(seen, now) { seen } else { now };
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

/// Whether instant `a` comes after `b`, compared as the Linux kernel
/// compares jiffies: by the sign of the wrapped difference, which stays right
/// when the clock wraps around.
fn later(a: u64, b: u64) -> bool {
    (b.wrapping_sub(a) as i64) < 0
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
