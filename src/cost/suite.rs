//! The checks of lesson 13's kind, `cost`, as trials.

use std::time::Duration;

use super::checks::{OnRedis, Which};
use super::race::Race;
use super::{ConfigError, Lesson, Limit, SetupError};
use crate::checks::trials::compare;
use crate::trial::{group, Get, Named, Trials};

/// How many cases each property runs.
const CASES: u32 = 200;

/// How many cases the property on Redis runs: as many, since a round trip
/// on loopback costs microseconds.
const REDIS_CASES: u32 = CASES;

/// The kind's checks: its source, the constructors, each type against the
/// model, the GCRA and the limits under loom, the same on a real Redis (in
/// every order of two app servers' commands) and on a real Redis Cluster,
/// and the drawings.
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
        for (module, which) in [("token_bucket", Which::TokenBucket), ("gcra", Which::Gcra)] {
            t.cases(module, bucket_cases(), move |(capacity, period)| {
                lesson().bucket_config(which, capacity, period)
            });
        }
        for (module, which) in [
            ("limits", Which::Limits),
            ("redis_limits", Which::RedisLimits),
        ] {
            t.cases(module, limits_cases(), move |(limits, want)| {
                lesson().limits_config(which, limits, want)
            });
        }
    });
    t.group(group::PROPERTY, |t| {
        let each: [Named<Which>; 3] = [
            ("token_bucket_agrees_with_model", Which::TokenBucket),
            ("gcra_agrees_with_model", Which::Gcra),
            ("limits_agree_with_model", Which::Limits),
        ];
        for (name, which) in each {
            t.test(name, move || lesson().agrees_with_model(which, CASES));
        }
    });
    let races: [Named<Race>; 5] = [
        ("two_take_the_last_tokens", Race::TwoTakeTheLastTokens),
        ("two_take_a_new_key", Race::TwoTakeANewKey),
        ("a_denial_charges_nothing", Race::ADenialChargesNothing),
        (
            "two_requests_one_global_limit",
            Race::TwoRequestsOneGlobalLimit,
        ),
        ("a_peek_beside_a_check", Race::APeekBesideACheck),
    ];
    t.group(group::LOOM, |t| {
        for (name, race) in races {
            t.test(name, move || lesson().race(race));
        }
    });
    t.module("redis", |t| {
        t.group(group::PROPERTY, |t| {
            t.test("agrees_with_model", move || {
                lesson().agrees_with_model(Which::RedisLimits, REDIS_CASES)
            });
        });
        t.group(group::RACE, |t| {
            for (name, race) in races.into_iter().filter(|(_, r)| !r.single()) {
                t.test(name, move || lesson().on_redis(OnRedis::Race(race)));
            }
        });
        t.group(group::SLOW, |t| {
            t.test("one_script_per_request", move || {
                lesson().on_redis(OnRedis::OneScript)
            });
            t.test("keys_expire", move || lesson().on_redis(OnRedis::Expires));
            t.test("a_peek_writes_nothing", move || {
                lesson().on_redis(OnRedis::PeekWritesNothing)
            });
            t.test("redis_gone_is_an_error", move || {
                lesson().on_redis(OnRedis::Unreachable)
            });
        });
    });
    t.module("cluster", |t| {
        t.group(group::SLOW, |t| {
            t.test("one_hash_tag_one_slot", move || {
                lesson().on_redis(OnRedis::OneTag)
            });
            t.test("keys_in_two_slots_are_refused", move || {
                lesson().on_redis(OnRedis::CrossSlot)
            });
        });
    });
    t.group(group::SNAPSHOT, |t| {
        for name in super::gen::SNAPSHOTS.iter().map(|s| s.name) {
            t.test(name, move || lesson().named_snapshot(name));
        }
    });
    compare(&mut t, move |which: &str| lesson().print_comparison(which));
    t
}

/// Lesson 05's constructor: each error in its order, and the extremes.
fn bucket_cases() -> Vec<Named<(u64, Duration)>> {
    let ns = Duration::from_nanos;
    vec![
        ("zero_capacity", (0, ns(1_000))),
        (
            "zero_capacity_before_a_period_too_large",
            (0, ns(u64::MAX) + ns(1)),
        ),
        ("zero_period", (1, ns(0))),
        ("period_beyond_u64_nanos", (1, ns(u64::MAX) + ns(1))),
        (
            "capacity_times_period_beyond_u64",
            (2, ns(u64::MAX / 2 + 1)),
        ),
        ("capacity_times_period_just_fits", (2, ns(u64::MAX / 2))),
        ("largest_capacity_of_one_nanosecond", (u64::MAX, ns(1))),
        ("one_token", (1, ns(1_000))),
    ]
}

type LimitsCase = (Vec<Limit>, Result<(), SetupError>);

/// `Limits::new`'s errors, in the contract's order.
fn limits_cases() -> Vec<Named<LimitsCase>> {
    let ms = Duration::from_millis;
    let ok = |c| Limit::new("user", c, ms(100));
    let wrong = |index, error| Err(SetupError::Limit { index, error });
    vec![
        ("no_limits", (vec![], Err(SetupError::NoLimits))),
        ("one_limit", (vec![ok(1)], Ok(()))),
        (
            "the_second_of_three_refused",
            (
                vec![ok(2), ok(0), Limit::new("global", 5, ms(0))],
                wrong(1, ConfigError::ZeroLimit),
            ),
        ),
        (
            "the_last_refused",
            (
                vec![ok(2), ok(3), Limit::new("global", 5, ms(0))],
                wrong(2, ConfigError::ZeroPeriod),
            ),
        ),
        (
            "a_limit_too_large",
            (
                vec![ok(2), Limit::new("global", u64::MAX, ms(1))],
                wrong(1, ConfigError::TooLarge),
            ),
        ),
        ("three_limits", (vec![ok(2), ok(3), ok(9)], Ok(()))),
    ]
}
