//! Lesson 10's kind, `async-redis-limiter`: lesson 08's limiter over the
//! redis crate's async API on tokio, on one `redis-server` or on a Redis
//! Cluster, for a service whose requests must never wait on a blocked
//! thread.
//!
//! - this module: the contract's types ([`Settings`], where the state lives
//!   as [`Redis`]); the rules and failure policies are lesson 08's;
//! - [`drive`]: how an implementation is built and driven, as an async
//!   limiter and, for lesson 08's checks, blocked on as a synchronous one;
//! - [`checks`]: the checks of the kind (lesson 08's, by [`Deref`] to its
//!   lesson, then the cluster's and the runtime's);
//! - `suite`: its checks as data, `trials` (see [`crate::trial`]).
//!
//! [`Deref`]: std::ops::Deref

pub mod checks;
pub mod drive;
mod fallback;
mod suite;
mod variant;

// The kind, as the code the build script writes uses it (see `crate::kind`).
pub use crate::__async_redis_variant as variant;
pub use suite::trials;
// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::checks::comparison;
/// A lesson of this kind.
pub type Lesson = checks::AsyncLesson;

pub use crate::redis_limiter::{Clock, OnFailure, RedisError, Rule, SettingsError};
pub use crate::store::{Bounds, Overflow};
pub use fallback::{metric, LocalLimiter, Reason};

use std::time::Duration;

/// Where a limiter's state lives.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Redis {
    /// One `redis-server`, by its URL (`redis://127.0.0.1:6379`).
    Server(String),
    /// A Redis Cluster, by the URLs of some of its nodes: the client asks
    /// them which node serves which slot, and follows `MOVED` and `ASK`.
    Cluster(Vec<String>),
}

/// How a limiter reaches Redis and what it does when Redis fails: lesson
/// 08's settings, with the place of its state as [`Redis`].
#[derive(Clone, Debug)]
pub struct Settings {
    pub redis: Redis,
    /// Prepended to every key the limiter writes: a client key `k` lives in
    /// keys that start `{prefix}{k:{k}}` ([`Settings::key`]).
    pub prefix: String,
    /// The longest a call may take, connecting included: past it, the
    /// failure policy answers.
    pub timeout: Duration,
    pub on_failure: OnFailure,
    /// Added to every key's time to live, past the instant its state stops
    /// mattering.
    pub ttl_grace: Duration,
    /// The bounds of the store `OnFailure::Local` answers from (a
    /// [`LocalLimiter`]), and the `policy` label of every metric.
    pub local: Bounds,
}

impl Settings {
    /// One server, with lesson 08's defaults: keys under `rl:`, a 50 ms
    /// timeout, closed with a one-second `retry_after`, a second of grace;
    /// and a local store of at most 10,000 keys that denies a new key when
    /// full, its metrics labelled `policy="default"`.
    pub fn new(url: &str) -> Result<Settings, SettingsError> {
        crate::redis_limiter::client(url).map_err(|e| SettingsError::Url(e.to_string()))?;
        Ok(Settings::on(Redis::Server(url.to_string())))
    }

    /// A Redis Cluster, by the URLs of some of its nodes, with the same
    /// defaults.
    pub fn cluster(urls: &[String]) -> Result<Settings, SettingsError> {
        if urls.is_empty() {
            return Err(SettingsError::NoNodes);
        }
        for url in urls {
            crate::redis_limiter::client(url).map_err(|e| SettingsError::Url(e.to_string()))?;
        }
        Ok(Settings::on(Redis::Cluster(urls.to_vec())))
    }

    fn on(redis: Redis) -> Settings {
        Settings {
            redis,
            prefix: "rl:".into(),
            timeout: Duration::from_millis(50),
            on_failure: OnFailure::Closed {
                retry_after: Duration::from_secs(1),
            },
            ttl_grace: Duration::from_secs(1),
            local: default_local(),
        }
    }

    /// `Ok` unless a field was set to something no limiter can keep.
    pub fn validate(&self) -> Result<(), SettingsError> {
        if let Redis::Cluster(urls) = &self.redis {
            if urls.is_empty() {
                return Err(SettingsError::NoNodes);
            }
        }
        self.as_lesson_08().validate()
    }

    /// The name of one Redis key of client key `key`, as lesson 08 names
    /// it: `{prefix}{k:{key}}:{part}`. Every key of a client has the same
    /// hash tag, `k:{key}`, so a cluster keeps them in one slot: a script
    /// may only touch keys of one slot.
    pub fn key(&self, key: &str, part: &str) -> String {
        format!("{}{{k:{key}}}:{part}", self.prefix)
    }

    /// Lesson 08's settings with the same fields (its checks of the
    /// timeout and the policy); the client is the first node's.
    fn as_lesson_08(&self) -> crate::redis_limiter::Settings {
        let url = match &self.redis {
            Redis::Server(url) => url.clone(),
            Redis::Cluster(urls) => urls.first().cloned().unwrap_or_default(),
        };
        crate::redis_limiter::Settings {
            client: crate::redis_limiter::client(&url)
                .or_else(|_| crate::redis_limiter::client("redis://127.0.0.1"))
                .expect("a loopback URL is valid"),
            prefix: self.prefix.clone(),
            timeout: self.timeout,
            on_failure: self.on_failure,
            ttl_grace: self.ttl_grace,
        }
    }
}

/// The local store's bounds unless set: 10,000 keys, a new key denied when
/// full, metrics labelled `policy="default"`.
fn default_local() -> Bounds {
    Bounds::new("default", 10_000, Overflow::Deny)
}

impl From<crate::redis_limiter::Settings> for Settings {
    /// Lesson 08's settings, for the checks lesson 10 shares with it: the
    /// same server (by its address) and the same fields.
    fn from(s: crate::redis_limiter::Settings) -> Settings {
        let info = s.client.get_connection_info();
        Settings {
            redis: Redis::Server(format!("redis://{}", info.addr())),
            prefix: s.prefix,
            timeout: s.timeout,
            on_failure: s.on_failure,
            ttl_grace: s.ttl_grace,
            local: default_local(),
        }
    }
}
