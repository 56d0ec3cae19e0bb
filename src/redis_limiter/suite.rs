//! The checks of lesson 08's kind, `redis-limiter`, as trials: for each
//! rule, the checks every lesson shares, as one app server and as three,
//! races between app servers, and its keys and times to live; then
//! faults, the server's clock and the drawings.

use super::drive::{RuleKind, RULES};
use super::Lesson;
use crate::checks::trials::{compare, config_grid, exact_properties, scenarios};
use crate::trial::{group, Get, Named, Trials};

/// The kind's checks.
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
    shared(&mut t, lesson, move || lesson().serve_app_server());
    faults(&mut t, lesson, |_| {});
    t.group(group::SNAPSHOT, |t| {
        for (name, rule) in [
            ("three_servers_fixed_window", RuleKind::FixedWindow),
            ("three_servers_gcra", RuleKind::Gcra),
        ] {
            t.test(name, move || lesson().three_servers_snapshot(rule));
        }
    });
    t
}

/// What lessons 08 and 10 share: the app server process, the checks every
/// limiter passes for each rule, and the comparison `cargo run -- compare`
/// runs (the timeline under each rule, yours beside the reference's).
/// `serve` is the kind's app server.
pub fn shared(t: &mut Trials, lesson: impl Get<Lesson>, serve: impl FnOnce() + Send + 'static) {
    // Not a check: an app server process the checks start (this test
    // binary run again, as `app_server`); it does nothing elsewhere.
    t.ignored(
        "app_server",
        "an app server process the checks start",
        serve,
    );
    for rule in RULES {
        t.module(rule.module(), |t| per_rule(t, lesson, rule));
    }
    compare(t, move |which: &str| {
        for kind in RULES {
            crate::trial::println(format_args!("== {}", kind.name()));
            lesson().rule(kind).print_comparison(which);
        }
    });
}

/// The checks every lesson shares, for one rule of lesson 08.
fn per_rule(t: &mut Trials, whole: impl Get<Lesson>, rule: RuleKind) {
    let lesson = move || whole().rule(rule);
    t.group(group::CONFIG, |t| config_grid(t, lesson));
    t.group(group::PROPERTY, |t| exact_properties(t, lesson));
    t.group(group::RACE, |t| {
        scenarios(t, move |scenario| whole().race(rule, scenario))
    });
    t.group(group::SLOW, |t| {
        // Every key under the client's hash tag, and each one's time to
        // live exactly as long as its state matters.
        t.test("keys_live_under_their_hash_tag_and_expire", move || {
            whole().keys_live_under_their_hash_tag_and_expire(rule)
        });
        // Three app servers taking requests in turn answer as one limiter.
        t.test("three_app_servers_agree_with_model", move || {
            whole().servers(rule).agrees_with_model()
        });
    });
}

/// Lesson 08's failures and its server clock, which lesson 10's checks run
/// too; `more` adds a kind's own faults.
pub fn faults(t: &mut Trials, lesson: impl Get<Lesson>, more: impl FnOnce(&mut Trials)) {
    t.group(group::FAULT, |t| {
        more(t);
        let all: [Named<fn(&Lesson)>; 7] = [
            (
                "server_paused",
                Lesson::follows_its_failure_policy_when_the_server_is_paused,
            ),
            (
                "server_killed_and_restarted",
                Lesson::follows_its_failure_policy_when_the_server_is_killed_and_restarted,
            ),
            (
                "server_out_of_memory",
                Lesson::follows_its_failure_policy_when_the_server_is_out_of_memory,
            ),
            (
                "server_read_only",
                Lesson::follows_its_failure_policy_when_the_server_is_read_only,
            ),
            (
                "script_fails",
                Lesson::follows_its_failure_policy_when_the_script_fails,
            ),
            (
                "server_unreachable",
                Lesson::follows_its_failure_policy_when_the_server_is_unreachable,
            ),
            (
                "cut_off_between_commands",
                Lesson::leaves_no_key_without_a_ttl_when_cut_off,
            ),
        ];
        for (name, check) in all {
            t.test(name, move || check(lesson()));
        }
    });
    t.group(group::PROPERTY, |t| {
        t.test(
            "server_clock_is_one_clock_for_every_app_server",
            move || lesson().server_clock_is_one_clock_for_every_app_server(),
        );
    });
}
