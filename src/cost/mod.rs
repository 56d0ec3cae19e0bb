//! The `cost` kind (lesson 13): requests that cost more than one, several
//! limits at once, and a check that does not charge. The learner writes
//! `check_n` and `peek_n` on lesson 05's token bucket and on lesson 06's
//! lock-free GCRA, `Limits` (a request admitted only if every one of its
//! limits admits it, charged all or nothing), and the same on Redis in one
//! script whose keys share a cluster slot through a hash tag.
//!
//! This module is the kind's seam (its `variant!`, `Lesson`, `trials` and
//! `comparison`) and the contract's types a learner's file uses: [`Limit`],
//! [`SetupError`], [`CostError`], [`RedisSettings`], [`Target`] and
//! [`slot`].
//!
//! Below it: [`model`] (the contract: each limit a bucket of credit, a
//! request of cost n is n requests at one instant, all or nothing),
//! [`gen`] (scripts of requests with random costs, keys and peeks, and the
//! named ones), [`draw`] (the buckets' levels, request by request),
//! [`race`] (the loom races), [`redis`] (the checks on a real Redis and a
//! real Redis Cluster), [`verdict`] (a subject's answers judged),
//! [`drive`], [`checks`] and [`suite`].

use std::fmt;
use std::time::Duration;

pub use crate::decision::{ConfigError, Decision};
pub use crate::time::Timestamp;

pub mod checks;
pub mod draw;
pub mod drive;
pub mod gen;
pub mod model;
pub mod race;
pub mod redis;
pub mod suite;
mod variant;
pub mod verdict;

pub use crate::__cost_variant as variant;
pub use suite::trials;

/// A lesson of this kind.
pub type Lesson = checks::CostLesson;

/// What `cargo run -- compare 13 [NAME]` draws: one of the named scripts
/// ([`gen::SNAPSHOTS`], the first by default), or a script as a failure
/// prints it (`limits …, then …`); anything else is refused with the names
/// there are.
pub fn comparison(which: Option<&str>) -> Result<String, String> {
    let which = which.map_or(gen::SNAPSHOTS[0].name, str::trim);
    if which.starts_with("limits ") || which.starts_with("on redis: ") {
        return gen::Script::parse(which)
            .map(|_| which.to_string())
            .map_err(|e| format!("that script cannot be read: {e}"));
    }
    match gen::SNAPSHOTS.iter().find(|s| s.name == which) {
        Some(s) => Ok(s.name.to_string()),
        None => Err(format!(
            "no script is named {which:?}; name one of {}, or give a script as a failure prints it",
            gen::SNAPSHOTS
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// One limit a request answers to: lesson 05's token bucket, `capacity`
/// tokens at most, one more every `refill_every`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Limit {
    /// What the limit is per, for messages (`"user"`, `"org"`, `"global"`).
    pub name: &'static str,
    pub capacity: u64,
    pub refill_every: Duration,
}

impl Limit {
    pub const fn new(name: &'static str, capacity: u64, refill_every: Duration) -> Limit {
        Limit {
            name,
            capacity,
            refill_every,
        }
    }

    /// `user: 5 tokens, one every 1s`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {}, one every {}",
            self.name,
            crate::text::count(u128::from(self.capacity), "token"),
            when(self.refill_every.as_nanos())
        )
    }
}

/// An instant or a wait as the drawings show it: whole milliseconds as
/// `150ms`, anything else in nanoseconds (`1_500ns`).
pub fn when(ns: u128) -> String {
    if ns.is_multiple_of(1_000_000) && ns > 0 {
        format!("{}ms", crate::time::group_digits(ns / 1_000_000))
    } else {
        format!("{}ns", crate::time::group_digits(ns))
    }
}

/// Why `Limits::new` (or `RedisLimits::new`) refuses what it was given.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SetupError {
    /// No limit at all: every request would be admitted, which is no limit.
    NoLimits,
    /// The limit at `index` (from 0) is refused as lesson 05 refuses it.
    Limit { index: usize, error: ConfigError },
    /// Redis could not be reached to prepare the limiter.
    Redis(String),
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::NoLimits => f.write_str(
                "no limit was given, so every request would be admitted; give at least one",
            ),
            SetupError::Limit { index, error } => write!(f, "limit {index}: {error}"),
            SetupError::Redis(e) => write!(f, "Redis cannot be reached: {e}"),
        }
    }
}

impl std::error::Error for SetupError {}

/// Why a request of cost n is answered with no decision at all. The checks
/// are made in this order, before anything is charged.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum CostError {
    /// A cost of 0: a request that costs nothing needs no limit (ask with
    /// a peek instead).
    ZeroCost,
    /// `Limits`: one key per limit, in the limits' order, and the request
    /// gave another number of keys.
    WrongKeys { expected: usize, got: usize },
    /// The cost is more than the limit at `limit` (from 0; 0 for a single
    /// bucket) can ever hold: no wait would let it through, so it is
    /// refused at once.
    AboveCapacity {
        limit: usize,
        cost: u64,
        capacity: u64,
    },
    /// On a Redis Cluster, the request's Redis keys `first` and `other`
    /// hash to different slots, so no one script may touch both (give the
    /// keys one hash tag, `{tag}`).
    CrossSlot { first: String, other: String },
    /// Redis did not answer.
    Redis(String),
}

impl fmt::Display for CostError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CostError::ZeroCost => f.write_str(
                "a request of cost 0 is not a request: ask with a peek to know without charging",
            ),
            CostError::WrongKeys { expected, got } => write!(
                f,
                "{} were given for {}: give one key per limit, in order",
                crate::text::count(*got, "key"),
                crate::text::count(*expected, "limit")
            ),
            CostError::AboveCapacity {
                limit,
                cost,
                capacity,
            } => write!(
                f,
                "a cost of {cost} is more than limit {limit} can ever hold ({capacity}): no wait \
                 would let it through"
            ),
            CostError::CrossSlot { first, other } => write!(
                f,
                "the Redis keys {first:?} and {other:?} hash to different cluster slots, so one \
                 script cannot touch both: give them one hash tag"
            ),
            CostError::Redis(e) => write!(f, "Redis did not answer: {e}"),
        }
    }
}

impl std::error::Error for CostError {}

/// Where `RedisLimits` keeps its buckets.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Target {
    /// One `redis-server`, at this URL (`redis://127.0.0.1:6379/`).
    Single(String),
    /// A Redis Cluster, reached through these nodes' URLs.
    Cluster(Vec<String>),
}

/// How `RedisLimits` reaches Redis and names its keys.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct RedisSettings {
    pub target: Target,
    /// The start of every Redis key: limit `i`'s bucket for the request's
    /// key `k` is `{prefix}{i}:{k}` (prefix `rl:`, limit 0, key `alice`:
    /// `rl:0:alice`).
    pub prefix: String,
    /// Added to each key's time to live, past the instant its bucket is
    /// full again (the checks' time is not Redis's).
    pub grace: Duration,
    /// The longest a connection, a read or a write may take.
    pub timeout: Duration,
}

impl RedisSettings {
    /// Limit `index`'s Redis key for the request's key `key`.
    pub fn key(&self, index: usize, key: &str) -> String {
        format!("{}{index}:{key}", self.prefix)
    }
}

/// The cluster slot of a Redis key: CRC16 of the key modulo 16,384, or of
/// its hash tag, the text between the first `{` and the first `}` after
/// it when that text is not empty (`rl:0:{acme}alice` and `rl:1:{acme}`
/// share a slot).
pub fn slot(key: &str) -> u16 {
    crate::infra::cluster::key_slot(key.as_bytes())
}
