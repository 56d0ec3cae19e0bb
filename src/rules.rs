//! The rules a limiter built from a rule (lessons 08 and 09) is checked
//! under: one list for every kind, each kind building its own contract's
//! `Rule` from it ([`FromRuleKind`]) and checking the rules of its
//! contract (`redis::drive::RULES`, `memory::drive::RULES`).

use std::time::Duration;

use crate::models::Algorithm;

/// One rule, without its numbers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RuleKind {
    FixedWindow,
    SlidingLog,
    TokenBucket,
    Gcra,
}

impl RuleKind {
    /// The module its checks sit in, in a kind that runs them per rule
    /// (`gcra::config::every_pair_of_faults`).
    pub fn module(self) -> &'static str {
        match self {
            RuleKind::FixedWindow => "fixed_window",
            RuleKind::SlidingLog => "sliding_log",
            RuleKind::TokenBucket => "token_bucket",
            RuleKind::Gcra => "gcra",
        }
    }

    /// As failures and drawings name it.
    pub fn name(self) -> &'static str {
        match self {
            RuleKind::FixedWindow => "fixed window",
            RuleKind::SlidingLog => "sliding log",
            RuleKind::TokenBucket => "token bucket",
            RuleKind::Gcra => "GCRA",
        }
    }

    /// The rule its models, invariant and drawings come from: a GCRA
    /// decides as a token bucket does.
    pub fn algorithm(self) -> Algorithm {
        match self {
            RuleKind::FixedWindow => Algorithm::FixedWindow,
            RuleKind::SlidingLog => Algorithm::SlidingLog,
            RuleKind::TokenBucket | RuleKind::Gcra => Algorithm::TokenBucket,
        }
    }

    /// The rule with a limit (a capacity) and a period (a window, a refill
    /// interval), as the contract type `R` of a kind writes it.
    pub fn rule<R: FromRuleKind>(self, limit: u64, period: Duration) -> R {
        R::from_kind(self, limit, period)
    }

    /// Where `self` is in `rules`, a kind's list: the index of the lessons
    /// it builds per rule.
    pub fn index_in(self, rules: &[RuleKind]) -> usize {
        rules
            .iter()
            .position(|r| *r == self)
            .unwrap_or_else(|| panic!("the {} is not one of the rules {rules:?}", self.name()))
    }
}

/// A kind's contract type for a rule, built from a [`RuleKind`] of the
/// kind's `RULES`.
pub trait FromRuleKind {
    fn from_kind(kind: RuleKind, limit: u64, period: Duration) -> Self;
}
