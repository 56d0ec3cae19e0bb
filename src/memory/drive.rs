//! How a bounded limiter is built and driven. The learner's type is built
//! from a [`Rule`] and [`Bounds`]; for the checks every lesson shares it
//! becomes a [`Drive`] with room for every key that sweeps away whatever
//! can be forgotten each time the clock moves on, so that every shared
//! check also asks: did forgetting change an answer?

use std::sync::Arc;
use std::time::Duration;

use super::{Bounds, Overflow, Rule};
use crate::decision::{ConfigError, Decision, RateLimiter};
use crate::drive::Drive;
use crate::time::Timestamp;

/// What the harness asks of a learner's bounded limiter.
pub trait Bounded: Send + Sync {
    /// `RateLimiter::check`: the answer, counted in the decision metric.
    fn check(&self, key: &str, now: Timestamp) -> Decision;
    /// Forgets every key that can be forgotten; returns how many.
    fn sweep(&self, now: Timestamp) -> usize;
    /// How many keys are held.
    fn keys_held(&self) -> usize;
}

/// Builds one limiter of an implementation.
pub type BuildBounded = fn(Rule, Bounds) -> Result<Arc<dyn Bounded>, ConfigError>;

/// Builds the implementation's shadow wrapper over one of its limiters
/// (`check` is the wrapper's; `sweep` and `keys_held` its limiter's).
pub type BuildShadow = fn(Rule, Bounds) -> Result<Arc<dyn Bounded>, ConfigError>;

/// One implementation of lesson 09 compiled into its test binary.
#[derive(Clone, Copy)]
pub struct BoundedVariant {
    pub file: &'static str,
    pub source: &'static str,
    pub build: BuildBounded,
    pub shadow: BuildShadow,
    /// The same limiter over loom's primitives (inside a loom model only).
    pub build_loom: BuildBounded,
}

pub use crate::rules::RuleKind;

/// The rules the kind is checked with, in the order of the lessons
/// [`BoundedLesson`](super::checks::BoundedLesson) builds per rule.
pub const RULES: [RuleKind; 2] = [RuleKind::FixedWindow, RuleKind::TokenBucket];

impl crate::rules::FromRuleKind for Rule {
    fn from_kind(kind: RuleKind, limit: u64, period: Duration) -> Rule {
        match kind {
            RuleKind::FixedWindow => Rule::FixedWindow {
                limit,
                window: period,
            },
            RuleKind::TokenBucket => Rule::TokenBucket {
                capacity: limit,
                refill_every: period,
            },
            RuleKind::SlidingLog | RuleKind::Gcra => {
                panic!("lesson 09 has no {} rule: {RULES:?}", kind.name())
            }
        }
    }
}

/// A bounded limiter asked only for its answers (over loom, in the
/// scenarios every shared limiter is raced in).
pub struct AsLimiter(pub Arc<dyn Bounded>);

impl RateLimiter for AsLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        self.0.check(key, now)
    }
}

/// Room for every key a shared check uses: only sweeps forget.
pub fn roomy() -> Bounds {
    Bounds::new("shared", 1 << 20, Overflow::Deny)
}

/// A limiter swept at the instant of each request whose instant differs
/// from the one before, just before the request.
struct Swept {
    limiter: Arc<dyn Bounded>,
    last: Option<Timestamp>,
}

impl Drive for Swept {
    fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        if self.last != Some(now) {
            self.limiter.sweep(now);
            self.last = Some(now);
        }
        self.limiter.check(key, now)
    }
}

/// The subject of the checks every lesson shares, for one rule.
pub fn swept(
    v: BoundedVariant,
    kind: RuleKind,
    limit: u64,
    period: Duration,
) -> Result<Box<dyn Drive>, ConfigError> {
    let limiter = (v.build)(kind.rule(limit, period), roomy())?;
    Ok(Box::new(Swept {
        limiter,
        last: None,
    }))
}

impl crate::kind::Compiled for BoundedVariant {
    fn file(&self) -> &'static str {
        self.file
    }

    fn source(&self) -> &'static str {
        self.source
    }
}
