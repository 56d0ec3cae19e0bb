//! MISTAKE: the window index is kept in a `u32`, so after an idle gap of a
//! multiple of 2^32 windows the key finds its old counts in "the same window".
//!
//! Why learners write it: four billion windows sound like more than any key
//! will ever see, a `u32` keeps the per-key state small, and `wrapping_add`
//! even lets the index roll over from `u32::MAX` to 0. But a window can be one
//! nanosecond long, and a key can stay idle for as long as the clock runs: an
//! index taken modulo 2^32 says the key is still in the window it left 2^32
//! windows ago, and its stale count denies requests the contract allows.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingCounter {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, Counts>>,
}

struct Counts {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// The index of the window containing `latest`, `latest / W`.
    window: u32,
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
            keys: Mutex::new(HashMap::new()),
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
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            let fresh = Counts {
                latest: 0,
                window: 0,
                current: 0,
                previous: 0,
            };
            keys.insert(key.into(), fresh);
        }
        let counts = keys.get_mut(key).expect("inserted above");

        let now = now.as_nanos().max(counts.latest);
        // BUG: after 2^32 windows the index wraps round to an old one.
        let (k, w) = ((now / self.window) as u32, self.window);
        let seen = counts.window;
        if k != seen {
            // One window on: the current count becomes the previous one.
            // Further: both windows are empty.
            counts.previous = if k == seen.wrapping_add(1) {
                counts.current
            } else {
                0
            };
            counts.current = 0;
        }
        counts.latest = now;
        counts.window = k;

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
