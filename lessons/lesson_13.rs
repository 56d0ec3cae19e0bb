//! Lesson 13: requests that cost more than one, several limits at once,
//! and a check that does not charge.
//!
//! Read `lessons/lesson_13.md` first. Then make every test of
//! `cargo test --test lesson_13` pass by filling in this file, milestone by
//! milestone (`cargo run -- test 13`). The Redis milestones' tests start
//! their own redis-server and Redis Cluster (see the lesson).
//!
//! The rule: lesson 05's token bucket, where a request of cost n is n
//! requests at one instant, admitted all together or not at all. A peek
//! answers what the same check would, and changes nothing.

use std::collections::HashMap;
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{AtomicU64, Mutex, Ordering, RwLock};
#[allow(unused_imports)]
use kata::cost::{slot, CostError, Limit, RedisSettings, SetupError, Target};
use kata::{ConfigError, Decision, Timestamp};
#[allow(unused_imports)]
use redis::Script;

/// Milestone 1: lesson 05's token bucket, asked for a cost of n.
pub struct TokenBucket {
    // The capacity, T, and per key the credit and when it was counted.
    buckets: HashMap<String, ()>,
}

impl TokenBucket {
    /// Lesson 05's checks, in lesson 05's order.
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        let _ = (capacity, refill_every);
        todo!("lesson 13: validate the configuration and build the bucket")
    }

    /// Admits `n` tokens' worth of requests at `now`, all or nothing: the
    /// errors first (a cost of 0, a cost above the capacity), then lesson
    /// 05's answer for n tokens.
    pub fn check_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (&self.buckets, key, n, now);
        todo!("lesson 13: the errors, then take n tokens or say how long until there are n")
    }

    /// What `check_n` would answer at `now`, changing nothing.
    pub fn peek_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (key, n, now);
        todo!("lesson 13: check_n's answer, without the charge")
    }
}

/// Milestone 2: lesson 06's GCRA, asked for a cost of n, lock-free on the
/// per-key path.
pub struct Gcra {
    // T, C·T, and the map from key to its TAT in an AtomicU64.
    keys: HashMap<String, ()>,
}

impl Gcra {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        let _ = (capacity, refill_every);
        todo!("lesson 13: as TokenBucket::new")
    }

    /// The TAT moves by n·T, with one compare-and-swap loop.
    pub fn check_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (&self.keys, key, n, now);
        todo!("lesson 13: load the TAT, decide for n, compare-and-swap")
    }

    pub fn peek_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (key, n, now);
        todo!("lesson 13: check_n's answer, without the compare-and-swap")
    }
}

/// Milestone 3: several limits at once. `keys[i]` is the request's key for
/// `limits[i]` (its user, its organisation, "all" for a global limit).
pub struct Limits {
    limits: Vec<Limit>,
}

impl Limits {
    /// `SetupError::NoLimits` for none, else the first limit lesson 05
    /// refuses, with its index.
    pub fn new(limits: &[Limit]) -> Result<Self, SetupError> {
        let _ = limits;
        todo!("lesson 13: check every limit and keep them")
    }

    /// Admitted only if every limit admits it, and then every limit is
    /// charged n; a denial charges none of them, and waits for the longest.
    pub fn check(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (&self.limits, keys, n, now);
        todo!("lesson 13: the errors, every limit's answer, then charge all or none")
    }

    pub fn peek(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (keys, n, now);
        todo!("lesson 13: check's answer, without the charge")
    }
}

/// Milestones 4 and 5: `Limits` with its state in Redis, each request one
/// script; on a cluster, keys that cannot share a slot are refused.
pub struct RedisLimits {
    settings: RedisSettings,
}

impl RedisLimits {
    /// As `Limits::new`, then connects to `settings.target`
    /// (`SetupError::Redis` when it cannot).
    pub fn new(limits: &[Limit], settings: RedisSettings) -> Result<Self, SetupError> {
        let _ = (limits, settings);
        todo!("lesson 13: check the limits, prepare the script, connect")
    }

    /// One script over every key (`settings.key(i, keys[i])` in KEYS).
    pub fn check(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (&self.settings, keys, n, now);
        todo!("lesson 13: the errors, the slots on a cluster, then the script")
    }

    pub fn peek(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        let _ = (keys, n, now);
        todo!("lesson 13: the same script, told not to charge")
    }
}
