//! MISTAKE: a new key's log is created and used outside the map's lock, then
//! inserted with `insert`.
//!
//! Why learners write it: per-key locks let different keys proceed in
//! parallel, and "read-lock to find it, otherwise make one" looks careful. But
//! two threads that both find no log both make one, both admit their request,
//! and the second `insert` throws the first log away.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u128,
    keys: RwLock<HashMap<String, Mutex<Ring>>>,
}

struct Ring {
    slots: Vec<u64>,
    /// Where the oldest admission is, once the ring is full.
    oldest: usize,
    last_seen: u64,
}

impl SlidingLog {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        match (limit, window.as_nanos()) {
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            (_, w) if w > u128::from(u64::MAX) => Err(ConfigError::TooLarge),
            (limit, window) => Ok(SlidingLog {
                limit,
                window,
                keys: RwLock::new(HashMap::new()),
            }),
        }
    }

    fn decide(&self, ring: &mut Ring, now: Timestamp) -> Decision {
        ring.last_seen = ring.last_seen.max(now.as_nanos());
        let at = u128::from(ring.last_seen);
        let inside = |t: &u64| u128::from(*t) + self.window > at;
        if (ring.slots.len() as u64) < self.limit {
            ring.slots.push(ring.last_seen);
        } else if !inside(&ring.slots[ring.oldest]) {
            ring.slots[ring.oldest] = ring.last_seen;
            ring.oldest = (ring.oldest + 1) % ring.slots.len();
        } else {
            let wait = u128::from(ring.slots[ring.oldest]) + self.window - at;
            return Decision::Denied {
                retry_after: Duration::from_nanos(wait as u64),
            };
        }
        let used = ring.slots.iter().filter(|t| inside(t)).count() as u64;
        Decision::Allowed {
            remaining: self.limit - used,
        }
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        {
            let keys = self.keys.read().unwrap();
            if let Some(ring) = keys.get(key) {
                return self.decide(&mut ring.lock().unwrap(), now);
            }
        }
        let mut ring = Ring {
            slots: Vec::new(),
            oldest: 0,
            last_seen: 0,
        };
        let decision = self.decide(&mut ring, now);
        // BUG: `insert` replaces the ring another thread inserted meanwhile.
        self.keys
            .write()
            .unwrap()
            .insert(key.to_owned(), Mutex::new(ring));
        decision
    }
}
