//! A correct lesson 02 limiter unlike the reference: each key's window and
//! count sit behind a sequence number used as a spin lock (odd while a
//! caller updates them), taken with a compare-and-swap and released with a
//! store, so that no `Mutex` is held while a key is decided; the map of keys
//! is only read-locked for a key seen before. Its loom exploration is much
//! larger than the reference's (every spin is a yield): the suite must still
//! accept it, quickly.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{spin_loop, Arc, AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct ConcurrentFixedWindow {
    limit: u64,
    window: u64,
    keys: RwLock<HashMap<Box<str>, Arc<Slot>>>,
}

struct Slot {
    /// Odd while a caller holds the slot.
    seq: AtomicU64,
    latest: AtomicU64,
    count: AtomicU64,
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
            keys: RwLock::new(HashMap::new()),
        })
    }

    fn slot(&self, key: &str) -> Arc<Slot> {
        if let Some(slot) = self.keys.read().unwrap_or_else(|p| p.into_inner()).get(key) {
            return slot.clone();
        }
        let mut keys = self.keys.write().unwrap_or_else(|p| p.into_inner());
        keys.entry(key.into())
            .or_insert_with(|| {
                Arc::new(Slot {
                    seq: AtomicU64::new(0),
                    latest: AtomicU64::new(0),
                    count: AtomicU64::new(0),
                })
            })
            .clone()
    }
}

impl RateLimiter for ConcurrentFixedWindow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let slot = self.slot(key);
        // Take the slot: from an even sequence number to the next odd one.
        let seq = loop {
            let seq = slot.seq.load(Ordering::Relaxed);
            if seq & 1 == 0
                && slot
                    .seq
                    .compare_exchange(seq, seq + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                break seq;
            }
            spin_loop();
        };
        let latest = slot.latest.load(Ordering::Relaxed);
        let now = now.as_nanos().max(latest);
        let mut count = slot.count.load(Ordering::Relaxed);
        if now / self.window != latest / self.window {
            count = 0;
        }
        let decision = if count < self.limit {
            count += 1;
            Decision::Allowed {
                remaining: self.limit - count,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - now % self.window),
            }
        };
        slot.latest.store(now, Ordering::Relaxed);
        slot.count.store(count, Ordering::Relaxed);
        // Give the slot back: the next even number, after the writes above.
        slot.seq.store(seq + 2, Ordering::Release);
        decision
    }
}
