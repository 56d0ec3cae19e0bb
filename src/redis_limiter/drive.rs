//! How a Redis limiter is built and driven. The learner's type is built
//! from a [`Rule`] and [`Settings`]; for the checks every lesson shares it
//! becomes a [`Drive`] whose `check` is the limiter's `try_check` (an error
//! is a failure that shows Redis's message), once as one app server and once
//! as three app servers taking turns over one Redis.

use std::sync::Arc;
use std::time::Duration;

use super::{OnFailure, Rule, Settings};
use crate::decision::{describe, ConfigError, Decision, RateLimiter};
use crate::drive::Drive;
use crate::infra::server::{next_id, RedisServer};
use crate::render::call;
use crate::time::Timestamp;

/// What the harness asks of a learner's Redis limiter.
pub trait Limiter: Send + Sync {
    /// Redis's answer, or why there is none.
    fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, redis::RedisError>;
    /// The answer with the failure policy applied.
    fn check(&self, key: &str, now: Timestamp) -> Decision;
}

/// Builds one instance (one app server) of an implementation.
pub type BuildRedis = fn(Rule, Settings) -> Result<Arc<dyn Limiter>, ConfigError>;

/// One implementation of lesson 08 compiled into its test binary.
#[derive(Clone, Copy)]
pub struct RedisVariant {
    pub file: &'static str,
    pub source: &'static str,
    pub build: BuildRedis,
}

pub use crate::rules::RuleKind;

/// The rules the kind is checked with, in the order of the lessons
/// [`RedisLesson`](super::checks::RedisLesson) builds per rule.
pub const RULES: [RuleKind; 3] = [RuleKind::FixedWindow, RuleKind::SlidingLog, RuleKind::Gcra];

impl crate::rules::FromRuleKind for Rule {
    fn from_kind(kind: RuleKind, limit: u64, period: Duration) -> Rule {
        match kind {
            RuleKind::FixedWindow => Rule::FixedWindow {
                limit,
                window: period,
            },
            RuleKind::SlidingLog => Rule::SlidingLog {
                limit,
                window: period,
            },
            RuleKind::Gcra => Rule::Gcra {
                capacity: limit,
                refill_every: period,
                clock: super::Clock::Passed,
            },
            RuleKind::TokenBucket => panic!("lesson 08 has no token bucket rule: {RULES:?}"),
        }
    }
}

/// Settings for a check on `server`: keys under a prefix no other check
/// uses, a timeout no healthy loopback server comes near, closed on
/// failure, and a grace that outlasts any test.
pub fn settings_on(server: &RedisServer) -> Settings {
    settings_at(&server.url())
}

/// [`settings_on`] for a server by its URL (a cluster's node, for lesson
/// 10).
pub fn settings_at(url: &str) -> Settings {
    let mut settings = Settings::new(url).expect("the harness's URL is valid");
    settings.prefix = format!("kata:{}:", next_id());
    settings.timeout = Duration::from_secs(5);
    settings.on_failure = OnFailure::Closed {
        retry_after: Duration::from_secs(1),
    };
    settings.ttl_grace = GRACE;
    settings
}

/// The grace every check's settings give (a minute: longer than a test
/// runs, so that no key expires in the middle of one).
pub const GRACE: Duration = Duration::from_secs(60);

/// A limiter driven through `try_check`: an error fails the check with
/// Redis's own message.
struct Checked(Vec<Arc<dyn Limiter>>, usize);

impl Drive for Checked {
    fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        let server = self.1 % self.0.len();
        self.1 += 1;
        match self.0[server].try_check(key, now) {
            Ok(d) => d,
            Err(e) => panic!(
                "{} returned Err from try_check{}: {e}",
                call(key, now),
                if self.0.len() > 1 {
                    format!(" on app server {}", server + 1)
                } else {
                    String::new()
                }
            ),
        }
    }
}

/// One app server on the shared Redis, with keys of its own.
pub fn single(
    v: RedisVariant,
    kind: RuleKind,
    limit: u64,
    period: Duration,
) -> Result<Box<dyn Drive>, ConfigError> {
    let limiter = (v.build)(kind.rule(limit, period), settings_on(RedisServer::shared()))?;
    Ok(Box::new(Checked(vec![limiter], 0)))
}

/// How many app servers share one Redis in [`super::processes::servers`].
pub const SERVERS: usize = 3;

/// App servers that take requests in turn, each a [`Limiter`] of its own,
/// driven as one limiter (their answers checked as one's).
pub fn in_turn(instances: Vec<Arc<dyn Limiter>>) -> Box<dyn Drive> {
    Box::new(Checked(instances, 0))
}

/// One request's answer in a failure message.
pub fn answer(d: &Decision) -> String {
    describe(d)
}

/// A limiter of the harness's for the failure policy's `Local` answers.
pub fn local(rule: &Rule) -> super::LocalLimiter {
    super::LocalLimiter::new(rule).expect("checked rules are valid")
}

/// The answer the failure policy gives.
pub fn policy_answer(
    on_failure: OnFailure,
    local: &dyn RateLimiter,
    key: &str,
    now: Timestamp,
) -> Decision {
    match on_failure {
        OnFailure::Open => Decision::Allowed { remaining: 0 },
        OnFailure::Closed { retry_after } => Decision::Denied { retry_after },
        OnFailure::Local => local.check(key, now),
    }
}

impl crate::kind::Compiled for RedisVariant {
    fn file(&self) -> &'static str {
        self.file
    }

    fn source(&self) -> &'static str {
        self.source
    }
}
