//! A correct lesson 04 limiter unlike the reference: per-key mutexes behind a
//! read-locked map, the two counts kept with their window index, and
//! `retry_after` found by binary search over the rule itself instead of a
//! formula. The suite must accept it.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u128,
    window: u128,
    keys: RwLock<HashMap<String, Mutex<Counts>>>,
}

#[derive(Default)]
struct Counts {
    index: u128,
    current: u128,
    previous: u128,
    last_seen: u64,
}

impl Counts {
    /// The counts as they would be at `at`, with no request in between.
    fn at(&self, at: u128, w: u128) -> (u128, u128) {
        match (at / w).checked_sub(self.index) {
            Some(0) => (self.current, self.previous),
            Some(1) => (0, self.current),
            _ => (0, 0),
        }
    }
}

impl SlidingCounter {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        match (limit, window.as_nanos()) {
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            (_, w) if w > u128::from(u64::MAX) => Err(ConfigError::TooLarge),
            (limit, window) => Ok(SlidingCounter {
                limit: u128::from(limit),
                window,
                keys: RwLock::new(HashMap::new()),
            }),
        }
    }

    /// The rule, for `extra` more requests at `at` on top of the counts.
    fn fits(&self, counts: &Counts, at: u128, extra: u128) -> bool {
        let (l, w) = (self.limit, self.window);
        let (c, p) = counts.at(at, w);
        let c = c + extra;
        c < l && p * (w - at % w) < (l - c) * w
    }

    fn decide(&self, counts: &mut Counts, now: Timestamp) -> Decision {
        counts.last_seen = counts.last_seen.max(now.as_nanos());
        let at = u128::from(counts.last_seen);
        if self.fits(counts, at, 0) {
            let (c, p) = counts.at(at, self.window);
            counts.index = at / self.window;
            counts.current = c + 1;
            counts.previous = p;
            // The most further requests that fit: the first `extra` that
            // does not, minus nothing, found by binary search.
            let (mut lo, mut hi) = (0, self.limit);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.fits(counts, at, mid) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return Decision::Allowed {
                remaining: lo as u64,
            };
        }
        // The rule only relaxes with time; two windows on, nothing counts.
        let (mut lo, mut hi) = (at + 1, at + 2 * self.window);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.fits(counts, mid, 0) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Decision::Denied {
            retry_after: Duration::from_nanos(u64::try_from(lo - at).unwrap_or(u64::MAX)),
        }
    }
}

impl RateLimiter for SlidingCounter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        {
            let keys = self.keys.read().unwrap();
            if let Some(counts) = keys.get(key) {
                return self.decide(&mut counts.lock().unwrap(), now);
            }
        }
        let mut keys = self.keys.write().unwrap();
        let counts = keys.entry(key.to_owned()).or_default();
        self.decide(counts.get_mut().unwrap(), now)
    }
}
