//! A correct lesson 06 limiter unlike the reference: the keys are spread over
//! 16 shards by hash, each shard a read-locked map of TATs, and the TAT is
//! updated with `fetch_update` instead of a hand-written CAS loop. The suite
//! must accept it.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use super::sync::{AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

const SHARDS: usize = 16;

pub struct Gcra {
    interval: u64,
    tolerance: u64,
    shards: Vec<RwLock<HashMap<String, State>>>,
}

struct State {
    tat: AtomicU64,
}

impl Gcra {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        if capacity == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        let interval = match refill_every.as_nanos() {
            0 => return Err(ConfigError::ZeroPeriod),
            n => u64::try_from(n).map_err(|_| ConfigError::TooLarge)?,
        };
        let whole = capacity
            .checked_mul(interval)
            .ok_or(ConfigError::TooLarge)?;
        Ok(Gcra {
            interval,
            tolerance: whole - interval,
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
        })
    }

    fn decide(&self, state: &State, now: u64) -> Decision {
        let mut outcome = None;
        let _ = state
            .tat
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |tat| {
                let start = tat.max(now);
                if start - now > self.tolerance {
                    outcome = Some(Err(start - now - self.tolerance));
                    return None;
                }
                let next = start.saturating_add(self.interval);
                outcome = Some(Ok(next));
                Some(next)
            });
        match outcome.expect("the closure ran") {
            Err(wait) => Decision::Denied {
                retry_after: Duration::from_nanos(wait),
            },
            Ok(next) => {
                let slack =
                    u128::from(now) + u128::from(self.tolerance) + u128::from(self.interval);
                let remaining = slack.saturating_sub(u128::from(next)) / u128::from(self.interval);
                Decision::Allowed {
                    remaining: remaining as u64,
                }
            }
        }
    }
}

impl RateLimiter for Gcra {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut hasher = DefaultHasher::new();
        key.hash(&mut hasher);
        let shard = &self.shards[hasher.finish() as usize % SHARDS];
        let now = now.as_nanos();
        {
            let map = shard.read().unwrap();
            if let Some(state) = map.get(key) {
                return self.decide(state, now);
            }
        }
        let mut map = shard.write().unwrap();
        let state = map.entry(key.to_owned()).or_insert_with(|| State {
            tat: AtomicU64::new(0),
        });
        self.decide(state, now)
    }
}
