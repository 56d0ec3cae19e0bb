//! MISTAKE: idle keys are forgotten by the real clock: once a second (by
//! `Instant::now()`), keys not called for a minute are removed.
//!
//! Why learners write it: forgetting idle keys keeps memory bounded, and a
//! minute of wall-clock time "obviously" means a key is idle. But the limiter
//! is given its time as `now`: a caller's minute and the test's nanoseconds
//! have nothing to do with each other, and an answer that depends on when the
//! code happens to run can be neither tested nor trusted. A forgotten key's
//! late request, placed at its latest timestamp, would also be judged as new.
//!
//! Shows: uses `Instant`, which reads the real clock

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::sync::Mutex;
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct SlidingLog {
    limit: u64,
    window: u64,
    keys: Mutex<HashMap<Box<str>, Log>>,
    /// When idle keys were last forgotten, by the wall clock.
    swept: Mutex<Instant>,
}

struct Log {
    /// When this key was last called, by the wall clock.
    seen: Instant,
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
            swept: Mutex::new(Instant::now()),
        })
    }
}

impl RateLimiter for SlidingLog {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let wall = Instant::now();
        let mut swept = self.swept.lock().unwrap_or_else(|p| p.into_inner());
        if wall.duration_since(*swept) >= Duration::from_secs(1) {
            keys.retain(|_, log| wall.duration_since(log.seen) < Duration::from_secs(60));
            *swept = wall;
        }
        drop(swept);
        if !keys.contains_key(key) {
            let log = Log {
                seen: wall,
                latest: 0,
                allowed: VecDeque::new(),
            };
            keys.insert(key.into(), log);
        }
        let log = keys.get_mut(key).expect("inserted above");
        log.seen = wall;

        // A late timestamp counts as the latest seen: logging it as it came
        // would let its entry expire early.
        let now = now.as_nanos().max(log.latest);
        log.latest = now;

        // `now - t >= W` rather than `t + W <= now`: no overflow near u64::MAX.
        while log.allowed.front().is_some_and(|&t| now - t >= self.window) {
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
            let oldest = log.allowed[0];
            Decision::Denied {
                retry_after: Duration::from_nanos(self.window - (now - oldest)),
            }
        }
    }
}
