//! MISTAKE: expiry is tested with wrapping arithmetic, `t + W` compared with
//! `now` as a signed difference, which is only right while the two are less
//! than 2^63 ns apart.
//!
//! Why learners write it: the lesson warns that `t + W` overflows near
//! `u64::MAX`, and wrapping counters compared by the sign of their difference
//! are the classic answer (the kernel's `time_after_eq`). But a `u64` clock
//! does not wrap: after an idle gap of 2^63 ns or more the difference looks
//! negative, the long-expired entry is kept as if it left in the future, and
//! the key is denied with a `retry_after` that has wrapped round.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, Log>>,
}

struct Log {
    /// The latest timestamp this key was called with, denied calls included.
    latest: u64,
    /// Allowed requests still inside the window, oldest first.
    allowed: VecDeque<u64>,
}

impl SlidingLog {
    pub fn new(limit: u64, window: Duration) -> Result<Self, ConfigError> {
        if limit == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if window.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let window = u64::try_from(window.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        Ok(SlidingLog {
            limit,
            window,
            keys: Mutex::new(HashMap::new()),
        })
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if !keys.contains_key(key) {
            let log = Log {
                latest: 0,
                allowed: VecDeque::new(),
            };
            keys.insert(key.into(), log);
        }
        let log = keys.get_mut(key).expect("inserted above");

        // A late timestamp counts as the latest seen: logging it as it came
        // would let its entry expire early.
        let now = now.as_nanos().max(log.latest);
        log.latest = now;

        // An entry at `t` leaves the interval at `t + W`, which may wrap past
        // u64::MAX: compare the way wrapping tick counters are compared.
        // BUG: right only while `now` and `t + W` are less than 2^63 ns apart.
        while log
            .allowed
            .front()
            .is_some_and(|&t| reached(now, t.wrapping_add(self.window)))
        {
            log.allowed.pop_front();
        }

        let used = log.allowed.len() as u64;
        if used < self.limit {
            log.allowed.push_back(now);
            Decision::Allowed {
                remaining: self.limit - used - 1,
            }
        } else {
            // The oldest entry leaves the interval W after it was logged.
            let leaves = log.allowed[0].wrapping_add(self.window);
            Decision::Denied {
                retry_after: Duration::from_nanos(leaves.wrapping_sub(now)),
            }
        }
    }
}

/// Whether the wrapping instant `now` has reached `at`: their difference,
/// read as signed, is not negative (the kernel's `time_after_eq`).
fn reached(now: u64, at: u64) -> bool {
    now.wrapping_sub(at) as i64 >= 0
}
