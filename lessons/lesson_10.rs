//! Lesson 10: lesson 08's limiter, async, on one Redis or a Redis Cluster.
//!
//! Read `lessons/lesson_10.md` first. Then make every test of
//! `cargo test --test lesson_10` pass by filling in this file. The tests
//! start their own redis-server and Redis Cluster (redis-server 7 or later
//! must be installed; see lesson 08).
//!
//! The rules, scripts and keys are lesson 08's: start from your lesson 08
//! file. What changes is how a script reaches Redis: through the redis
//! crate's async API on tokio, one multiplexed connection shared by every
//! call, each call bounded by `settings.timeout`.

#[allow(unused_imports)]
use kata::async_redis::{Redis, Settings};
#[allow(unused_imports)]
use kata::redis::{Clock, LocalLimiter, OnFailure, RedisError, Rule};
use kata::{AsyncRateLimiter, ConfigError, Decision, Timestamp};
#[allow(unused_imports)]
use redis::aio::MultiplexedConnection;
#[allow(unused_imports)]
use redis::cluster_async::ClusterConnection;
#[allow(unused_imports)]
use redis::{AsyncConnectionConfig, Script};

pub struct AsyncRedisLimiter {
    // The rule, the settings, the script for the rule, the shared
    // connection once open, and a `LocalLimiter` for `OnFailure::Local`.
    rule: Rule,
}

impl AsyncRedisLimiter {
    /// Checks the rule (`rule.validate()`) and prepares the script.
    /// Connects to nothing yet: the first call does.
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        let _ = settings;
        todo!("lesson 10: validate {rule:?} and prepare the script")
    }

    /// Redis's answer, or the error that kept Redis from answering: lesson
    /// 08's script on the shared connection, awaited, within
    /// `settings.timeout`.
    pub async fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let _ = (&self.rule, key, now);
        todo!("lesson 10: run the rule's script on the shared connection")
    }
}

impl AsyncRateLimiter for AsyncRedisLimiter {
    /// `try_check`, or, when it fails, what `settings.on_failure` says.
    async fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (key, now);
        todo!("lesson 10: try_check, then the failure policy")
    }
}
