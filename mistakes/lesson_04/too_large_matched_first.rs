//! MISTAKE: the configuration is matched with the "too large" arm first, so
//! `new(0, <a window too long>)` answers `TooLarge` instead of `ZeroLimit`.
//!
//! Why learners write it: a `match` on `(limit, window)` reads as a table of
//! cases, and the one arm with a guard feels like it belongs at the top. Each
//! fault alone still gets its own error. But arms are tried in order, and the
//! contract's order is `ZeroLimit`, then `ZeroPeriod`, then `TooLarge`, so
//! that a configuration with two faults always reports the first of them.

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
    /// Requests allowed in the window containing `latest` (c).
    current: u64,
    /// Requests allowed in the window before it (p).
    previous: u64,
}

impl SlidingCounter {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        match (limit, window.as_nanos()) {
            // BUG: the arm with a guard comes first, and it ignores the limit.
            (_, w) if w > u128::from(u64::MAX) => Err(ConfigError::TooLarge),
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            (limit, window) => Ok(SlidingCounter {
                limit,
                window: window as u64,
                keys: Mutex::new(HashMap::new()),
            }),
        }
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
                current: 0,
                previous: 0,
            };
            keys.insert(key.into(), fresh);
        }
        let counts = keys.get_mut(key).expect("inserted above");

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
