//! MISTAKE: a key found idle for two windows or more is removed from the map
//! and started over, while another thread may still hold its old counts.
//!
//! Why learners write it: after an idle gap of two windows both counts are 0,
//! so the entry carries nothing worth keeping, and removing it keeps the map
//! from growing with every key that ever called. On one thread it is the same
//! limiter. But a second caller that fetched the old counts before the removal
//! goes on with them, finds them just as idle, and removes the fresh entry the
//! first caller has just counted in: both are let in where only one may pass.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u128,
    window: u128,
    keys: RwLock<HashMap<String, Arc<Mutex<Counts>>>>,
}

struct Counts {
    index: u128,
    current: u128,
    previous: u128,
    last_seen: u64,
}

impl Counts {
    fn starting_at(now: u64, w: u128) -> Counts {
        Counts {
            index: u128::from(now) / w,
            current: 0,
            previous: 0,
            last_seen: now,
        }
    }

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

    /// The key's counts, made if the key is new.
    fn counts_for(&self, key: &str, now: u64) -> Arc<Mutex<Counts>> {
        if let Some(counts) = self.keys.read().unwrap().get(key) {
            return counts.clone();
        }
        let mut keys = self.keys.write().unwrap();
        keys.entry(key.to_owned())
            .or_insert_with(|| Arc::new(Mutex::new(Counts::starting_at(now, self.window))))
            .clone()
    }

    /// The rule, for `extra` more requests at `at` on top of the counts.
    fn fits(&self, counts: &Counts, at: u128, extra: u128) -> bool {
        let (l, w) = (self.limit, self.window);
        let (c, p) = counts.at(at, w);
        let c = c + extra;
        c < l && p * (w - at % w) < (l - c) * w
    }

    fn decide(&self, counts: &mut Counts, now: u64) -> Decision {
        counts.last_seen = counts.last_seen.max(now);
        let at = u128::from(counts.last_seen);
        if self.fits(counts, at, 0) {
            let (c, p) = counts.at(at, self.window);
            counts.index = at / self.window;
            counts.current = c + 1;
            counts.previous = p;
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
        let counts = self.counts_for(key, now.as_nanos());
        let mut state = counts.lock().unwrap();
        let at = u128::from(state.last_seen.max(now.as_nanos()));
        if at / self.window >= state.index + 2 {
            // Idle for two windows or more: both counts are 0, so forget the
            // key and let it start over as a new one.
            drop(state);
            // BUG: another thread may hold the old counts and remove the new.
            self.keys.write().unwrap().remove(key);
            let fresh = self.counts_for(key, now.as_nanos());
            let mut state = fresh.lock().unwrap();
            return self.decide(&mut state, now.as_nanos());
        }
        self.decide(&mut state, now.as_nanos())
    }
}
