//! The checks of lesson 11's kind, `http-client`, as trials.

use std::time::Duration;

use super::checks::Race;
use super::gen::{Family, POLICY};
use super::serve::Check;
use super::{BudgetPolicy, ClientPolicy, Lesson, PolicyError};
use crate::checks::trials::compare;
use crate::trial::{group, Get, Named, Trials};

/// How many scripts each property runs.
const CASES: u32 = 120;

/// The kind's checks: its source, its policy's errors, the budget against
/// its model and under loom, scripts of each family against the contract,
/// a real lesson 07 server on loopback, and its drawings.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
        t.test("uses_only_the_sync_facade", move || {
            lesson().uses_only_the_sync_facade()
        });
    });
    t.group(group::CONFIG, |t| {
        t.cases("policy", policy_cases(), move |(policy, expected)| {
            lesson().policy(policy, expected)
        });
    });
    t.group(group::PROPERTY, |t| {
        let families: [Named<Family>; 6] = [
            // 429s and 503s with Retry-After in seconds, as a date, as
            // garbage, and the RateLimit field's `t`, on two hosts.
            ("honours_every_wait", Family::Waits),
            // Methods, Idempotency-Keys, statuses and failures: what is
            // retried, how often, after which backoff.
            ("retries_only_what_is_safe", Family::Retries),
            // Outages under a small budget, one to three clients.
            ("spends_the_budget_as_the_model", Family::Budget),
            // A server that keeps a limit and announces it.
            ("paces_to_the_announced_quota", Family::Pace),
            // Callers that drop their requests while they wait.
            ("gives_back_what_a_dropped_request_held", Family::Cancel),
            ("agrees_with_model", Family::Everything),
        ];
        for (name, family) in families {
            t.test(name, move || lesson().agrees_with_model(family, CASES));
        }
        t.test("budget_agrees_with_model", move || {
            lesson().budget_agrees_with_model()
        });
    });
    t.group(group::LOOM, |t| {
        let races: [Named<Race>; 3] = [
            ("two_withdraw_the_last_retry", Race::TwoWithdrawOne),
            ("two_deposits_at_once", Race::TwoDeposits),
            (
                "a_giving_back_beside_a_withdrawal",
                Race::GiveBackBesideWithdraw,
            ),
        ];
        for (name, race) in races {
            t.test(name, move || lesson().budget_race(race));
        }
    });
    t.group(group::END_TO_END, |t| {
        // Lesson 07's reference in a real server on loopback.
        t.test("a_herd_after_an_outage_spreads_out", move || {
            lesson().end_to_end(Check::Herd)
        });
        t.test("a_paced_client_meets_no_429", move || {
            lesson().end_to_end(Check::Pace)
        });
    });
    t.group(group::SNAPSHOT, |t| {
        for name in super::checks::SNAPSHOTS.iter().map(|s| s.0) {
            t.test(name, move || lesson().named_snapshot(name));
        }
    });
    compare(&mut t, move |which: &str| lesson().print_comparison(which));
    t
}

type Case = (ClientPolicy, Result<(), PolicyError>);

/// The policy's errors, each in the contract's order, and its extremes.
fn policy_cases() -> Vec<Named<Case>> {
    let with = |f: fn(&mut ClientPolicy)| {
        let mut p = POLICY;
        f(&mut p);
        p
    };
    let budget = |ttl: Duration, retry_percent: u32| ClientPolicy {
        budget: BudgetPolicy {
            ttl,
            min_per_sec: 1,
            retry_percent,
        },
        ..POLICY
    };
    use PolicyError::*;
    vec![
        (
            "zero_attempts",
            (with(|p| p.max_attempts = 0), Err(ZeroAttempts)),
        ),
        (
            "zero_attempts_is_checked_first",
            (
                with(|p| {
                    p.max_attempts = 0;
                    p.base = Duration::ZERO;
                    p.budget.ttl = Duration::ZERO;
                }),
                Err(ZeroAttempts),
            ),
        ),
        (
            "zero_base",
            (with(|p| p.base = Duration::ZERO), Err(ZeroBase)),
        ),
        (
            "cap_below_base",
            (
                with(|p| p.cap = p.base - Duration::from_nanos(1)),
                Err(CapBelowBase),
            ),
        ),
        (
            "cap_below_base_before_the_budget",
            (
                with(|p| {
                    p.cap = Duration::ZERO;
                    p.budget.retry_percent = 1001;
                }),
                Err(CapBelowBase),
            ),
        ),
        ("zero_ttl", (budget(Duration::ZERO, 20), Err(TtlOutOfRange))),
        (
            "ttl_of_61_seconds",
            (budget(Duration::from_secs(61), 20), Err(TtlOutOfRange)),
        ),
        (
            "ttl_not_whole_seconds",
            (budget(Duration::from_millis(1500), 20), Err(TtlOutOfRange)),
        ),
        (
            "ttl_before_the_percent",
            (budget(Duration::ZERO, 1001), Err(TtlOutOfRange)),
        ),
        (
            "percent_over_1000",
            (
                budget(Duration::from_secs(10), 1001),
                Err(PercentOutOfRange),
            ),
        ),
        ("one_attempt", (with(|p| p.max_attempts = 1), Ok(()))),
        ("cap_equal_to_base", (with(|p| p.cap = p.base), Ok(()))),
        (
            "ttl_of_60_seconds_and_percent_of_1000",
            (budget(Duration::from_secs(60), 1000), Ok(())),
        ),
        (
            "largest_values",
            (
                with(|p| {
                    p.max_attempts = u32::MAX;
                    p.base = Duration::from_nanos(1);
                    p.cap = Duration::MAX;
                    p.budget.min_per_sec = u32::MAX;
                }),
                Ok(()),
            ),
        ),
    ]
}
