//! A correct lesson 05 limiter unlike the reference: each bucket is kept as
//! the instant it will be full again (before that, it lacks exactly the time
//! still to go), in per-key mutexes behind a read-locked map. The suite must
//! accept it.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    interval: u128,
    full: u128,
    keys: RwLock<HashMap<String, Mutex<Bucket>>>,
}

struct Bucket {
    /// When the bucket is full again; at or before the latest call, it is full.
    full_at: u128,
    last_seen: u128,
}

impl TokenBucket {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        let interval = refill_every.as_nanos();
        let full = u128::from(capacity) * interval;
        match (capacity, interval) {
            (0, _) => Err(ConfigError::ZeroLimit),
            (_, 0) => Err(ConfigError::ZeroPeriod),
            _ if interval > u128::from(u64::MAX) || full > u128::from(u64::MAX) => {
                Err(ConfigError::TooLarge)
            }
            _ => Ok(TokenBucket {
                interval,
                full,
                keys: RwLock::new(HashMap::new()),
            }),
        }
    }

    fn decide(&self, bucket: &mut Bucket, now: Timestamp) -> Decision {
        bucket.last_seen = bucket.last_seen.max(u128::from(now.as_nanos()));
        let now = bucket.last_seen;
        let missing = bucket.full_at.saturating_sub(now);
        let credit = self.full - missing.min(self.full);
        if credit < self.interval {
            return Decision::Denied {
                retry_after: Duration::from_nanos((self.interval - credit) as u64),
            };
        }
        bucket.full_at = now + missing + self.interval;
        Decision::Allowed {
            remaining: ((credit - self.interval) / self.interval) as u64,
        }
    }
}

impl RateLimiter for TokenBucket {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        {
            let keys = self.keys.read().unwrap();
            if let Some(bucket) = keys.get(key) {
                return self.decide(&mut bucket.lock().unwrap(), now);
            }
        }
        let mut keys = self.keys.write().unwrap();
        let bucket = keys.entry(key.to_owned()).or_insert_with(|| {
            Mutex::new(Bucket {
                full_at: 0,
                last_seen: 0,
            })
        });
        self.decide(bucket.get_mut().unwrap(), now)
    }
}
