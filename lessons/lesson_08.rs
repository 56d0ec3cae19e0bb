//! Lesson 08: one limit shared by many app servers, on a real Redis.
//!
//! Read `lessons/lesson_08.md` first. Then make every test of
//! `cargo test --test lesson_08` pass by filling in this file. The tests
//! start their own redis-server (it must be installed; see the lesson).
//!
//! The rule: a fixed window, a sliding log or a GCRA (`kata::redis::Rule`),
//! whose answers are exactly those of lessons 01–06 with the same rule. The
//! state: in Redis, never in this process, so that every app server that
//! runs this limiter shares it. Each decision is one Lua script run with
//! `redis::Script` (EVALSHA, and the script again on NOSCRIPT).

use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::Mutex;
#[allow(unused_imports)]
use kata::redis::{Clock, LocalLimiter, OnFailure, RedisError, Rule, Settings};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
#[allow(unused_imports)]
use redis::{Connection, Script};

pub struct RedisLimiter {
    // The rule, the settings, the script for the rule, idle connections,
    // and a `LocalLimiter` for `OnFailure::Local`.
    rule: Rule,
}

impl RedisLimiter {
    /// Checks the rule (`rule.validate()`) and prepares the script. Connects
    /// to nothing yet: a limiter built while Redis is down must work once
    /// Redis is up.
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        let _ = (settings, Duration::ZERO);
        todo!("lesson 08: validate {rule:?} and prepare the script")
    }

    /// Redis's answer, or the error that kept Redis from answering: one
    /// script, with every key it touches in KEYS[], never waiting longer
    /// than `settings.timeout`.
    pub fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let _ = (&self.rule, key, now);
        todo!("lesson 08: run the rule's script and read its answer")
    }
}

impl RateLimiter for RedisLimiter {
    /// `try_check`, or, when it fails, what `settings.on_failure` says.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (key, now);
        todo!("lesson 08: try_check, then the failure policy")
    }
}
