//! The checks of lesson 09's kind, `bounded-limiter`, as trials: for each
//! rule, those every lesson shares on a limiter swept whenever the clock
//! moves on, the loom scenarios, and the kind's own. The test binary
//! counts the bytes it holds, for the flood ([`super::Counting`]).

use super::checks::Race;
use super::drive::{RuleKind, RULES};
use super::Lesson;
use crate::checks::trials::{self, compare};
use crate::trial::{group, Get, Named, Trials};

/// One of the kind's own checks of a rule.
type Check = fn(&Lesson, RuleKind);

/// One of the kind's loom races, for a rule.
type MakeRace = fn(RuleKind) -> Race;

/// The kind's checks.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
    });
    t.group(group::CONFIG, |t| {
        // `max_keys: 0` is refused, after the rule's own errors.
        t.test("zero_keys", move || lesson().refuses_zero_keys());
    });
    for rule in RULES {
        t.module(rule.module(), |t| per_rule(t, lesson, rule));
    }
    t.group(group::SNAPSHOT, |t| {
        // A store of three keys under pressure, step by step, with its metrics.
        t.test("store_under_pressure", move || lesson().store_snapshot());
    });
    compare(&mut t, move |which: &str| lesson().print_comparison(which));
    t
}

/// The checks of one rule of lesson 09.
fn per_rule(t: &mut Trials, whole: impl Get<Lesson>, rule: RuleKind) {
    let lesson = move || whole().rule(rule);
    t.group(group::SOURCE, |t| {
        t.test("uses_only_the_sync_facade", move || {
            lesson().uses_only_the_sync_facade()
        });
    });
    t.group(group::CONFIG, |t| trials::config_grid(t, lesson));
    t.group(group::PROPERTY, |t| {
        trials::properties(t, lesson);
        let own: [Named<Check>; 7] = [
            // Step by step against the model: answers, keys held, sweeps,
            // overflow answers and metrics, with a bound of 1 to 4 keys.
            (
                "agrees_with_model_under_a_bound",
                Lesson::agrees_with_model_under_a_bound,
            ),
            // Sweeps one nanosecond either side of the instant a key
            // becomes fresh.
            (
                "forgets_a_key_exactly_when_it_is_fresh",
                Lesson::forgets_a_key_exactly_when_it_is_fresh,
            ),
            // Shadow mode decides and counts, and never denies.
            ("shadow_mode_never_denies", Lesson::shadow_never_denies),
            // Thousands of keys forgotten by one sweep, and by a full store
            // taking a new one.
            (
                "forgets_thousands_at_once",
                Lesson::forgets_thousands_at_once,
            ),
            (
                "forgets_thousands_to_make_room",
                Lesson::forgets_thousands_to_make_room,
            ),
            // Fresh instants past, and on, the end of `u64` time; a full
            // store there.
            (
                "forgets_exactly_at_the_end_of_time",
                Lesson::forgets_exactly_at_the_end_of_time,
            ),
            (
                "is_full_at_the_end_of_time",
                Lesson::is_full_at_the_end_of_time,
            ),
        ];
        for (name, check) in own {
            t.test(name, move || check(whole(), rule));
        }
    });
    t.group(group::SLOW, |t| {
        trials::slow(t, lesson);
        // A million keys through a store of ten thousand.
        t.test("holds_at_most_max_keys_under_a_flood", move || {
            whole().holds_at_most_max_keys_under_a_flood(rule)
        });
    });
    t.group(group::LOOM, |t| {
        trials::loom(t, lesson);
        // Sweeps and a full store, raced under loom.
        let races: [Named<MakeRace>; 4] = [
            ("a_sweep_races_an_update", Race::sweep_races_an_update),
            ("two_new_keys_with_room", Race::two_new_keys_with_room),
            ("two_new_keys_and_one_slot", Race::two_new_keys_and_one_slot),
            ("one_clock_for_two_calls", Race::one_clock_for_two_calls),
        ];
        for (name, race) in races {
            t.test(name, move || whole().race(race(rule)));
        }
    });
}
