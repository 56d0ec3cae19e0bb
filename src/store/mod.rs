//! The bounded store, below the kinds that keep one (lesson 09's limiter
//! and lesson 10's fallback): its contract's types ([`Rule`], [`Bounds`],
//! [`Overflow`]), the metrics' names ([`metric`]), the contract as an
//! executable model ([`model`]) and the recorder the checks install to read
//! what a limiter records (`metrics`).

pub(crate) mod metrics;
pub mod model;

use std::time::Duration;

use crate::decision::ConfigError;
use crate::models::Algorithm;

/// The rule a bounded limiter keeps: lesson 01's fixed window or lesson 05's
/// token bucket (lesson 06's GCRA), answer for answer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Rule {
    FixedWindow {
        limit: u64,
        window: Duration,
    },
    TokenBucket {
        capacity: u64,
        refill_every: Duration,
    },
}

impl Rule {
    /// The rule's configuration errors, in the contract's order.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (limit, period) = self.parts();
        self.algorithm().validate(limit, period)
    }

    /// The limit (or capacity) and the window (or refill interval).
    pub fn parts(&self) -> (u64, Duration) {
        match *self {
            Rule::FixedWindow { limit, window } => (limit, window),
            Rule::TokenBucket {
                capacity,
                refill_every,
            } => (capacity, refill_every),
        }
    }

    /// The algorithm whose model, invariant and drawings the rule uses.
    pub fn algorithm(&self) -> Algorithm {
        match self {
            Rule::FixedWindow { .. } => Algorithm::FixedWindow,
            Rule::TokenBucket { .. } => Algorithm::TokenBucket,
        }
    }
}

/// What a request of a key the limiter does not hold gets when the store
/// holds `max_keys` keys and none of them can be forgotten.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Overflow {
    /// `Denied`, with a `retry_after` until the first held key can be
    /// forgotten (then a slot is free).
    Deny,
    /// `Allowed { remaining: 0 }`, untracked: the request is counted
    /// against no key (it shows as allowed, and in the overflow metric).
    Admit,
}

/// How much a bounded limiter may hold, what it answers when full, and the
/// name its metrics carry.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Bounds {
    /// The `policy` label of every metric the limiter records.
    pub policy: String,
    /// At most this many keys are held at any time.
    pub max_keys: usize,
    pub overflow: Overflow,
}

impl Bounds {
    pub fn new(policy: &str, max_keys: usize, overflow: Overflow) -> Bounds {
        Bounds {
            policy: policy.to_string(),
            max_keys,
            overflow,
        }
    }

    /// `ZeroKeys` when `max_keys` is 0 (checked after the rule's errors).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.max_keys == 0 {
            Err(ConfigError::ZeroKeys)
        } else {
            Ok(())
        }
    }
}

/// The metrics a bounded limiter records, each with the label `policy`
/// (the `Bounds`'s) and no other but `outcome` on decisions. A label per
/// client key would make one time series per client: a monitoring system
/// keeps each series in memory, so the metrics would become the unbounded
/// store this lesson removes from the limiter.
pub mod metric {
    /// Counter, labels `policy` and `outcome`: one per answered request.
    pub const DECISIONS: &str = "ratelimit_decisions_total";
    /// Gauge, label `policy`: the keys held, set whenever that changes.
    pub const KEYS: &str = "ratelimit_keys";
    /// Counter, label `policy`: keys forgotten, by a sweep or to make room.
    pub const EVICTIONS: &str = "ratelimit_evictions_total";
    /// Counter, label `policy`: overflow answers (the store was full).
    pub const OVERFLOWS: &str = "ratelimit_overflows_total";

    pub const POLICY: &str = "policy";
    pub const OUTCOME: &str = "outcome";
    /// The request was allowed.
    pub const ALLOWED: &str = "allowed";
    /// The request was denied.
    pub const DENIED: &str = "denied";
    /// The limit would have denied the request; shadow mode let it through.
    pub const SHADOWED: &str = "shadowed";
}
