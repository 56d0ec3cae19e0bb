//! MISTAKE: `check` takes the map's lock and then the key's; a stats path,
//! run when a key's window rolls over, takes them the other way round: the
//! key's lock (still held) and then the map's, to count the keys held. Two
//! threads on these two paths each wait for the lock the other holds, forever.
//!
//! Why learners write it: a map of per-key locks is the natural step past one
//! big lock, and releasing the map early "to reduce contention" looks like a
//! pure gain; a window rollover looks like a cheap moment to update a gauge
//! of how many keys the limiter holds. Each path is fine alone, and no test
//! with one thread can deadlock. Two locks must be taken in one order
//! everywhere.
//!
//! Shows: deadlock between threads
//! Shows: (taken by Mutex::lock at mistakes/lesson_02/gauge_while_holding_a_key.rs:

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Arc, AtomicU64, Mutex, Ordering};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<String, Arc<Mutex<Entry>>>>,
    /// How many keys are held, for a dashboard.
    keys_held: AtomicU64,
}

#[derive(Default)]
struct Entry {
    latest: u64,
    count: u64,
}

impl ConcurrentFixedWindow {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(ConcurrentFixedWindow {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
            keys_held: AtomicU64::new(0),
        })
    }

    /// Updates the gauge of keys held.
    fn record_keys_held(&self) {
        let held = self.keys.lock().unwrap().len() as u64;
        self.keys_held.store(held, Ordering::Relaxed);
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let keys = self.keys.lock().unwrap();
        let entry = keys.get(key).cloned();
        let entry = match entry {
            Some(e) => e,
            None => {
                drop(keys);
                let mut keys = self.keys.lock().unwrap();
                let e = keys.entry(key.to_string()).or_default().clone();
                drop(keys);
                let mut state = e.lock().unwrap();
                return decide(self.limit, self.window, &mut state, now.as_nanos()).0;
            }
        };
        let mut state = entry.lock().unwrap();
        // The map is no longer needed: let other keys in.
        drop(keys);
        let (decision, rolled_over) = decide(self.limit, self.window, &mut state, now.as_nanos());
        if rolled_over {
            self.record_keys_held();
        }
        decision
    }
}

/// The fixed-window rule; also says whether the key's window rolled over.
fn decide(limit: u64, window: u64, state: &mut Entry, now: u64) -> (Decision, bool) {
    let now = now.max(state.latest);
    let rolled_over = now / window != state.latest / window;
    if rolled_over {
        state.count = 0;
    }
    state.latest = now;
    if state.count < limit {
        state.count += 1;
        let remaining = limit - state.count;
        (Decision::Allowed { remaining }, rolled_over)
    } else {
        let retry_after = Duration::from_nanos(window - now % window);
        (Decision::Denied { retry_after }, rolled_over)
    }
}
