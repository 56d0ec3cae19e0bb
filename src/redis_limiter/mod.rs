//! A limiter whose state lives in a real `redis-server`, shared by every
//! instance (every app server) that talks to it: the substance of lesson
//! 08's kind, `redis-limiter` ([`crate::redis`] is the kind's seam), below
//! the kinds because lesson 10's kind runs these checks on its async
//! limiter too.
//!
//! - this module: the contract's types ([`Rule`], [`Clock`], [`OnFailure`],
//!   [`Settings`], the [`LocalLimiter`] a fallback may use) and the key
//!   layout;
//! - [`client`]: the client every implementation connects with, named here
//!   as the contract names it; it, the real `redis-server` and the proxy
//!   that orders app servers' commands live below the kinds, in
//!   [`crate::infra`];
//! - [`drive`]: how an implementation is built and driven;
//! - [`checks`]: the checks of the kind;
//! - `suite`: its checks as data, `trials` (see [`crate::trial`]).

pub mod checks;
pub mod drive;
pub mod processes;
pub mod suite;

pub use suite::trials;
// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::checks::comparison;
/// A lesson of this kind.
pub type Lesson = checks::RedisLesson;

pub use crate::infra::client;
/// The error a Redis limiter's `try_check` returns: the redis crate's.
pub use ::redis::RedisError;

use std::sync::Mutex;
use std::time::Duration;

use crate::decision::{ConfigError, Decision, RateLimiter};
use crate::models::{Algorithm, Model};
use crate::time::Timestamp;
use crate::timeline::Config;

/// The rule a Redis limiter keeps, with its configuration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rule {
    /// Lessons 01–02's fixed window: windows `[k·W, (k+1)·W)` from the
    /// clock's origin, at most `limit` allowed per key in each.
    FixedWindow { limit: u64, window: Duration },
    /// Lesson 03's sliding log: at most `limit` allowed per key in
    /// `(now − W, now]`, kept as a sorted set.
    SlidingLog { limit: u64, window: Duration },
    /// Lesson 06's GCRA (lesson 05's token bucket, decision for decision),
    /// on the time passed in or on the server's clock.
    Gcra {
        capacity: u64,
        refill_every: Duration,
        clock: Clock,
    },
}

/// Whose clock a rule reads.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Clock {
    /// The `now` each call passes in (every check of the kata uses it).
    #[default]
    Passed,
    /// The server's `TIME`, read inside the script: every app server
    /// decides on one clock, however far their own clocks drift apart.
    Server,
}

/// What a request gets when Redis does not answer in time or at all.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum OnFailure {
    /// Allow it, as `Allowed { remaining: 0 }`: an outage of the limiter
    /// is not an outage of the service.
    Open,
    /// Deny it, as `Denied { retry_after }`.
    Closed { retry_after: Duration },
    /// Ask a limiter kept in this process with the same rule (a
    /// [`LocalLimiter`]): each app server then keeps the limit on its own.
    Local,
}

/// How a limiter reaches Redis and what it does when Redis fails.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The server (`redis::Client::open` parses its URL, it does not
    /// connect).
    pub client: redis::Client,
    /// Prepended to every key the limiter writes: a client key `k` lives in
    /// keys that start `{prefix}{k:{k}}` ([`Settings::key`]).
    pub prefix: String,
    /// The longest a `check` may wait on Redis, connecting included.
    pub timeout: Duration,
    pub on_failure: OnFailure,
    /// Added to every key's time to live, past the instant its state stops
    /// mattering: room for app servers whose clocks disagree.
    pub ttl_grace: Duration,
}

/// A configuration [`Settings::new`] refuses, with its sentence.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SettingsError {
    Url(String),
    ZeroTimeout,
    ZeroRetryAfter,
    /// A Redis Cluster given without the URL of any node (lesson 10).
    NoNodes,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::Url(e) => write!(f, "the Redis URL is not one the redis crate accepts: {e}"),
            SettingsError::ZeroTimeout => {
                write!(f, "a timeout of zero would fail every call: give Redis some milliseconds")
            }
            SettingsError::NoNodes => write!(
                f,
                "a Redis Cluster needs the URL of at least one of its nodes (the client learns the others from it)"
            ),
            SettingsError::ZeroRetryAfter => write!(
                f,
                "a closed failure policy must tell clients to wait at least 1 ns (retry_after is never zero)"
            ),
        }
    }
}

impl std::error::Error for SettingsError {}

impl Settings {
    /// The defaults: keys under `rl:`, a 50 ms timeout, closed with a
    /// one-second `retry_after`, one second of grace on every time to live.
    pub fn new(url: &str) -> Result<Settings, SettingsError> {
        let client = client(url).map_err(|e| SettingsError::Url(e.to_string()))?;
        Ok(Settings {
            client,
            prefix: "rl:".into(),
            timeout: Duration::from_millis(50),
            on_failure: OnFailure::Closed {
                retry_after: Duration::from_secs(1),
            },
            ttl_grace: Duration::from_secs(1),
        })
    }

    /// `Ok` unless a field was set to something no limiter can keep.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if self.timeout.is_zero() {
            return Err(SettingsError::ZeroTimeout);
        }
        if let OnFailure::Closed { retry_after } = self.on_failure {
            if retry_after.is_zero() {
                return Err(SettingsError::ZeroRetryAfter);
            }
        }
        Ok(())
    }

    /// The name of one Redis key of client key `key`: the prefix, `{k:`
    /// and the client key, `}:`, then `part` (`fw`, `log`, …). What stands
    /// between the braces is the key's hash tag, the same for every part
    /// and never empty (an empty tag, as `{}` would be for the empty client
    /// key, makes Redis hash the whole name instead).
    pub fn key(&self, key: &str, part: &str) -> String {
        format!("{}{{k:{key}}}:{part}", self.prefix)
    }
}

impl Rule {
    /// The configuration checks of lessons 01–06, in the same order: a zero
    /// limit, a zero period, a period (or, for the GCRA, capacity × period)
    /// past `u64::MAX` nanoseconds.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (limit, period) = self.limit_and_period();
        self.algorithm().validate(limit, period)
    }

    /// The in-memory lesson whose answers this rule's must equal.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Rule::FixedWindow { .. } => Algorithm::FixedWindow,
            Rule::SlidingLog { .. } => Algorithm::SlidingLog,
            Rule::Gcra { .. } => Algorithm::TokenBucket,
        }
    }

    /// The limit (or capacity) and the window (or refill interval).
    pub fn limit_and_period(&self) -> (u64, Duration) {
        match *self {
            Rule::FixedWindow { limit, window } | Rule::SlidingLog { limit, window } => {
                (limit, window)
            }
            Rule::Gcra {
                capacity,
                refill_every,
                ..
            } => (capacity, refill_every),
        }
    }
}

/// An in-memory limiter of any [`Rule`], for [`OnFailure::Local`]: the kata's
/// own model of lessons 01–06, behind a mutex (time passed in, whatever the
/// rule's clock).
pub struct LocalLimiter(Mutex<Model>);

impl LocalLimiter {
    pub fn new(rule: &Rule) -> Result<LocalLimiter, ConfigError> {
        rule.validate()?;
        let (limit, period) = rule.limit_and_period();
        let config = Config { limit, period };
        Ok(LocalLimiter(Mutex::new(rule.algorithm().model(config))))
    }
}

impl RateLimiter for LocalLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .decide(key, now.as_nanos())
    }
}
