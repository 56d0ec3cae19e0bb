//! MISTAKE: the answer is worked out on a copy of the counts taken before the
//! request is counted; the count itself is re-checked under the lock, but the
//! `remaining` it returns is still the copy's.
//!
//! Why learners write it: the 128-bit rule and the search for the answer are
//! the slow part, and doing them on a copy keeps the lock short; lesson 02's
//! check-then-act taught that the decision must be checked again under the
//! lock, and it is. But the copy can be older than the counts the request is
//! added to: two callers that copied the same counts are both let in and both
//! told the same `remaining`, which no one-at-a-time order gives.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u128,
    window: u128,
    keys: RwLock<HashMap<String, Mutex<Counts>>>,
}

#[derive(Clone, Copy, Default)]
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

    /// The answer for a request at `at` on these counts, without counting it.
    fn answer(&self, counts: &Counts, at: u128) -> Decision {
        if self.fits(counts, at, 0) {
            // The most further requests that fit, found by binary search.
            let (mut lo, mut hi) = (0, self.limit);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.fits(counts, at, mid + 1) {
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

    fn decide(&self, slot: &Mutex<Counts>, now: Timestamp) -> Decision {
        // Take a copy (the call counts as seen) and work on it unlocked.
        let copy = {
            let mut counts = slot.lock().unwrap();
            counts.last_seen = counts.last_seen.max(now.as_nanos());
            *counts
        };
        let answer = self.answer(&copy, u128::from(copy.last_seen));
        if !answer.is_allowed() {
            return answer;
        }
        let mut counts = slot.lock().unwrap();
        let at = u128::from(counts.last_seen);
        // Another thread may have counted since the copy: check again.
        if !self.fits(&counts, at, 0) {
            return self.answer(&counts, at);
        }
        let (c, p) = counts.at(at, self.window);
        counts.index = at / self.window;
        counts.current = c + 1;
        counts.previous = p;
        // BUG: `answer` was worked out on the copy, not on these counts.
        answer
    }
}

impl RateLimiter for SlidingCounter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        {
            let keys = self.keys.read().unwrap();
            if let Some(slot) = keys.get(key) {
                return self.decide(slot, now);
            }
        }
        let mut keys = self.keys.write().unwrap();
        let slot = keys.entry(key.to_owned()).or_default();
        self.decide(slot, now)
    }
}
