//! What lesson 10's limiter does when Redis fails, and how it says so: the
//! bounded store a `Local` policy answers from ([`LocalLimiter`], lesson
//! 09's contract), why Redis failed ([`Reason`]) and the metrics' names
//! ([`metric`]).

use std::sync::Mutex;

use super::Rule;
use crate::decision::{ConfigError, Decision, RateLimiter};
use crate::store::model::BoundedModel;
use crate::store::Bounds;
use crate::time::Timestamp;
use crate::timeline::Config;

/// Lesson 09's bounded limiter over one of lesson 08's rules: the store a
/// `Local` failure policy answers from, so that an app server cut off from
/// Redis holds at most `bounds.max_keys` keys however many clients it sees,
/// and for each key only what its rule can still see (the allowed requests
/// of its last two periods).
/// Its answers are lesson 09's (the rule's, answered at the latest instant
/// given; a new key when the store is full gets the overflow answer), and
/// it records lesson 09's store metrics (`ratelimit_keys`, evictions,
/// overflows) under `bounds.policy`. It does not count decisions: the
/// limiter that asks it does, with every other decision.
pub struct LocalLimiter {
    store: Mutex<BoundedModel>,
    policy: String,
}

impl LocalLimiter {
    /// The rule's errors first, then `ZeroKeys`.
    pub fn new(rule: &Rule, bounds: Bounds) -> Result<LocalLimiter, ConfigError> {
        rule.validate()?;
        bounds.validate()?;
        let (limit, period) = rule.limit_and_period();
        let model = rule.algorithm().model(Config { limit, period });
        Ok(LocalLimiter {
            policy: bounds.policy.clone(),
            store: Mutex::new(BoundedModel::of(model, bounds)),
        })
    }
}

impl RateLimiter for LocalLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        let before = store.counts;
        let decision = store.decide(key, now.as_nanos());
        store.counts.record_since(&before, &self.policy);
        decision
    }
}

/// Why a call got the failure policy's answer instead of Redis's: the
/// `reason` label of [`metric::FALLBACKS`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Reason {
    /// No answer within the timeout (a paused or overloaded server, a
    /// network that drops, a cluster client still retrying).
    Timeout,
    /// Nothing listens at the address: a stopped server.
    ConnectionRefused,
    /// The connection broke (reset, closed, a failed read or write).
    ConnectionLost,
    /// A cluster without a master for the slot (`CLUSTERDOWN`, `MASTERDOWN`).
    ClusterDown,
    /// Redis answered with an error (`OOM`, `READONLY`, `WRONGTYPE`, a
    /// script's error), or with an answer the limiter cannot read.
    ErrorReply,
}

impl Reason {
    /// Every reason, in the order the checks show them.
    pub const ALL: [Reason; 5] = [
        Reason::Timeout,
        Reason::ConnectionRefused,
        Reason::ConnectionLost,
        Reason::ClusterDown,
        Reason::ErrorReply,
    ];

    /// The reason for an error from the redis crate. A timeout of your own
    /// (`tokio::time::timeout` elapsed) is [`Reason::Timeout`]: an
    /// `std::io::Error` of kind `TimedOut` turned into a `RedisError` is
    /// read as one.
    pub fn of(e: &redis::RedisError) -> Reason {
        use redis::{ErrorKind, ServerErrorKind};
        if e.is_timeout() {
            Reason::Timeout
        } else if e.is_connection_refusal() {
            Reason::ConnectionRefused
        } else if matches!(
            e.kind(),
            ErrorKind::Server(ServerErrorKind::ClusterDown | ServerErrorKind::MasterDown)
        ) {
            Reason::ClusterDown
        } else if e.is_io_error()
            || e.is_connection_dropped()
            || e.kind() == ErrorKind::ClusterConnectionNotFound
        {
            Reason::ConnectionLost
        } else {
            Reason::ErrorReply
        }
    }

    /// The label's value.
    pub fn label(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::ConnectionRefused => "connection_refused",
            Reason::ConnectionLost => "connection_lost",
            Reason::ClusterDown => "cluster_down",
            Reason::ErrorReply => "error_reply",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// The metrics lesson 10's limiter records: lesson 09's (its decisions, by
/// outcome; the fallback's store, which [`LocalLimiter`] records itself),
/// and its fallback's decisions by [`Reason`]. Every series carries the
/// label `policy` (`Settings::local.policy`), and none a client's key.
pub mod metric {
    pub use crate::store::metric::*;

    /// Counter, labels `policy` and `reason`: one per decision the failure
    /// policy made (each also counted in `ratelimit_decisions_total`).
    pub const FALLBACKS: &str = "ratelimit_fallback_decisions_total";
    pub const REASON: &str = "reason";
}
