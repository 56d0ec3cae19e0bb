//! MISTAKE: the counts live in a fixed table of 4096 slots, indexed by the
//! key's hash, instead of one entry per key.
//!
//! Why learners write it: the sliding counter is sold on memory, and a table
//! sized up front, the way count-min sketches and some CDNs do it, keeps it
//! bounded however many clients call; with a handful of keys no two of them
//! meet. But the contract keeps every key apart: once there are more keys
//! than a few dozen, two of them share a slot, and one key's requests count
//! against the other's limit.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u64,
    window: u64,
    /// One slot of counts per bucket of the key's hash.
    slots: Mutex<Vec<Counts>>,
}

/// How many slots: memory stays the same whatever the number of clients.
const SLOTS: usize = 4096;

#[derive(Clone, Copy)]
struct Counts {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Requests allowed in the window containing `latest` (c).
    current: u64,
    /// Requests allowed in the window before it (p).
    previous: u64,
}

impl SlidingCounter {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(SlidingCounter {
            limit,
            window,
            slots: Mutex::new(vec![
                Counts {
                    latest: 0,
                    current: 0,
                    previous: 0,
                };
                SLOTS
            ]),
        })
    }

    /// The least `e` in `[0, W)` at which `p·(W − e) < room·W`, if any.
    fn first_fit(&self, p: u64, room: u128) -> Option<u128> {
        let (p, w) = (u128::from(p), u128::from(self.window));
        if room == 0 {
            return None;
        }
        if p == 0 {
            return Some(0);
        }
        // p·x < room·W  ⇔  x ≤ (room·W − 1) / p, for the remaining x = W − e.
        let most = (room * w - 1) / p;
        (most >= 1).then(|| w.saturating_sub(most))
    }
}

impl RateLimiter for SlidingCounter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        // BUG: every key whose hash falls in this slot shares its counts.
        let slot = (hasher.finish() % SLOTS as u64) as usize;
        let mut slots = self
            .slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let counts = &mut slots[slot];

        let now = now.as_nanos().max(counts.latest);
        let (k, w) = (now / self.window, self.window);
        let seen = counts.latest / w;
        if k != seen {
            // One window on: the current count becomes the previous one.
            // Further: both windows are empty.
            counts.previous = if k == seen + 1 { counts.current } else { 0 };
            counts.current = 0;
        }
        counts.latest = now;

        let (l, c, p) = (
            u128::from(self.limit),
            u128::from(counts.current),
            u128::from(counts.previous),
        );
        let (w, e) = (u128::from(w), u128::from(now % self.window));
        // A request is only counted when L − c > 0, so c never exceeds L.
        if p * (w - e) < (l - c) * w {
            counts.current += 1;
            // More requests fit while (c + 1 + n)·W < L·W − p·(W − e).
            let room = l * w - p * (w - e);
            let fit = room.div_ceil(w);
            return Decision::Allowed {
                remaining: (fit - (c + 1)) as u64,
            };
        }
        // Later in this window the previous count weighs less; in the next,
        // this window's count becomes the previous one; two windows on,
        // nothing is counted any more.
        // (`first_fit` only returns instants inside a window, and this
        // request was denied at `e`, so a fit in this window comes after `e`.)
        let wait = match self.first_fit(counts.previous, l - c) {
            Some(at) => at - e,
            None => match self.first_fit(counts.current, l) {
                Some(at) => w - e + at,
                // Only when W = 1 ns and c = L: the wait crosses two windows.
                None => 2 * w - e,
            },
        };
        Decision::Denied {
            retry_after: Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)),
        }
    }
}
