//! The checks every limiter passes, as trials: each kind puts those that
//! apply to it in its list (`limiter::trials`, and again per rule for the
//! kinds that run them once per rule).

use std::time::Duration;

use super::Lesson;
use crate::decision::ConfigError::{self, TooLarge, ZeroLimit, ZeroPeriod};
use crate::scenarios::Scenario;
use crate::timeline::STANDARD;
use crate::trial::{group, Get, Named, Trials};

/// What the limiter kinds check, whatever carries the state: the
/// constructor, the properties, the slow checks, the drawings and the
/// comparison `cargo run -- compare` asks for.
pub fn behaviour(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.group(group::CONFIG, |t| config(t, lesson));
    t.group(group::PROPERTY, |t| properties(t, lesson));
    t.group(group::SLOW, |t| slow(t, lesson));
    t.group(group::SNAPSHOT, |t| {
        for standard in STANDARD {
            t.test(standard.name, move || {
                lesson().standard_snapshot(standard.name)
            });
        }
    });
    compare(t, move |which: &str| lesson().print_comparison(which));
}

/// `compare_with_reference`, run by `cargo run -- compare N [TIMELINE]` (it
/// sets `KATA_COMPARE`): prints the learner's and the reference's answers
/// side by side.
pub fn compare(t: &mut Trials, print: impl Fn(&str) + Send + 'static) {
    t.ignored(
        "compare_with_reference",
        "run by `cargo run -- compare`",
        move || print(&std::env::var("KATA_COMPARE").unwrap_or_default()),
    );
}

type Answer = Result<(), ConfigError>;

/// The constructor cases every lesson shares: each `ConfigError` in the
/// contract's order, and the extreme valid configurations. Each case gives
/// the answer of the windowed lessons (01–04) and of the token buckets
/// (05, 06), where a capacity times a refill interval beyond u64
/// nanoseconds is `TooLarge` as well.
fn constructor_cases() -> [Named<(u64, Duration, Answer, Answer)>; 11] {
    let nanos = Duration::from_nanos;
    let past_u64 = nanos(u64::MAX) + nanos(1);
    [
        (
            "zero_limit",
            (0, nanos(1_000_000_000), Err(ZeroLimit), Err(ZeroLimit)),
        ),
        (
            "zero_limit_is_checked_first",
            (0, nanos(0), Err(ZeroLimit), Err(ZeroLimit)),
        ),
        (
            "zero_limit_is_checked_before_a_period_too_large",
            (0, past_u64, Err(ZeroLimit), Err(ZeroLimit)),
        ),
        (
            "zero_period",
            (1, nanos(0), Err(ZeroPeriod), Err(ZeroPeriod)),
        ),
        (
            "period_beyond_u64_nanos",
            (1, past_u64, Err(TooLarge), Err(TooLarge)),
        ),
        (
            "limit_times_period_beyond_u64_nanos",
            (2, nanos(u64::MAX / 2 + 1), Ok(()), Err(TooLarge)),
        ),
        (
            "limit_times_period_just_fits",
            (2, nanos(u64::MAX / 2), Ok(()), Ok(())),
        ),
        (
            "largest_limit_of_one_second",
            (u64::MAX, nanos(1_000_000_000), Ok(()), Err(TooLarge)),
        ),
        (
            "largest_limit_of_one_nanosecond",
            (u64::MAX, nanos(1), Ok(()), Ok(())),
        ),
        ("longest_period", (1, nanos(u64::MAX), Ok(()), Ok(()))),
        ("one_nanosecond", (5, nanos(1), Ok(()), Ok(()))),
    ]
}

/// The constructor's cases, and every pair of a limit and a period from
/// the edges of each fault, so that every pair of faults that can occur
/// together is tried.
fn config(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.cases(
        "constructor",
        constructor_cases(),
        move |(limit, period, windowed, bucket)| lesson().config(limit, period, windowed, bucket),
    );
    config_grid(t, lesson);
}

/// Every pair of faults of the configuration together (a rule's own
/// `validate` makes them, for the kinds run once per rule, where the table
/// of single cases would test the harness).
pub fn config_grid(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.test("every_pair_of_faults", move || lesson().config_grid());
}

/// The properties every limiter passes.
pub fn properties(t: &mut Trials, lesson: impl Get<Lesson>) {
    exact_properties(t, lesson);
    t.test("answers_do_not_depend_on_the_thread", move || {
        lesson().answers_do_not_depend_on_the_thread()
    });
    // A call's cost does not grow with the idle time before it.
    t.test("stays_quick_after_idle_gaps", move || {
        lesson().stays_quick_after_idle_gaps()
    });
    // Keys that look alike, end in digits, are long, or collide under the
    // usual hashes: each its own.
    t.test("keeps_look_alike_keys_apart", move || {
        lesson().keeps_look_alike_keys_apart()
    });
}

/// The properties of answers, request by request, that every kind of
/// limiter runs, whatever carries its state: agreement with the reference
/// and the model, the limit kept (late timestamps included) and over long
/// bursts, `remaining` and `retry_after` replayed, and extremes survived.
pub fn exact_properties(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.test("agrees_with_reference", move || {
        lesson().agrees_with_reference()
    });
    t.test("agrees_with_model", move || lesson().agrees_with_model());
    t.test("keeps_the_limit", move || lesson().keeps_the_limit());
    t.test("keeps_long_bursts", move || lesson().keeps_long_bursts());
    t.test("answers_mean_what_they_say", move || {
        lesson().answers_mean_what_they_say()
    });
    t.test("survives_extremes", move || lesson().survives_extremes());
}

/// The slow checks every limiter passes, a quarter of a million calls
/// each: distinct keys (and keys whose clocks lag), and a limit past 2^16
/// reached at one instant.
pub fn slow(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.test("keeps_many_keys_apart", move || {
        lesson().keeps_many_keys_apart()
    });
    t.test("counts_past_2_16", move || lesson().counts_past_2_16());
}

/// The loom scenarios every concurrent limiter passes, by their names;
/// `race` runs one (under loom, or through another kind's scheduler).
pub fn scenarios(t: &mut Trials, race: impl Fn(Scenario) + Copy + Send + 'static) {
    let all: [Named<fn() -> Scenario>; 7] = [
        ("burst_at_one_instant", Scenario::burst),
        ("window_rollover", Scenario::rollover),
        ("denial_at_rollover", Scenario::denial_at_rollover),
        ("new_key", Scenario::new_key),
        ("straddling_a_boundary", Scenario::straddle),
        ("key_after_an_idle_gap", Scenario::idle_key),
        ("units_left", Scenario::units_left),
    ];
    for (name, scenario) in all {
        t.test(name, move || race(scenario()));
    }
}

/// The loom scenarios, under loom.
pub fn loom(t: &mut Trials, lesson: impl Get<Lesson>) {
    scenarios(t, move |scenario| lesson().loom(scenario));
}
