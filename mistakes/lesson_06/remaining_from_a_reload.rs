//! MISTAKE: after a successful `fetch_update`, `remaining` is computed from
//! a fresh load of the TAT, which another thread may already have moved on.
//!
//! Why learners write it: `fetch_update` runs the CAS loop for you, but its
//! `Ok` holds the TAT from before the swap, and the answer needs the one
//! after it; loading it again is the obvious way to get it. One thread at a
//! time, that load returns exactly the TAT just stored. But when two threads
//! call at once, the load can return the other thread's TAT: both answer the
//! same `remaining`, which no one-at-a-time order gives. The TAT this call
//! stored is `max(previous, now) + T`, computed from the value `Ok` returns.

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
        let swapped = tat.fetch_update(Ordering::AcqRel, Ordering::Acquire, |seen| {
            let start = seen.max(now);
            (start - now <= self.tolerance).then(|| start.saturating_add(self.interval))
        });
        match swapped {
            Ok(_) => {
                // `fetch_update` gives back the TAT before the swap: read the
                // new one for the answer.
                let next = tat.load(Ordering::Acquire);
                // Further requests fit while their TAT stays within τ of now.
                let slack = u128::from(now) + u128::from(self.tolerance);
                let remaining = match slack.checked_sub(u128::from(next)) {
                    Some(room) => room / u128::from(self.interval) + 1,
                    None => 0,
                };
                Decision::Allowed {
                    remaining: remaining as u64,
                }
            }
            // Denied requests leave the TAT alone.
            Err(seen) => Decision::Denied {
                retry_after: Duration::from_nanos(seen.max(now) - now - self.tolerance),
            },
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
