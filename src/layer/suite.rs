//! The checks of lesson 07's kind, `http-layer`, as trials.

use std::time::Duration;

use super::PolicyError::{self, EmptyName, InvalidName, WindowNotWholeSeconds, ZeroQuota};
use super::{checks::SNAPSHOTS, Lesson};
use crate::checks::trials::compare;
use crate::trial::{group, Get, Named, Trials};

/// The kind's checks: its source, its policy's errors, its properties
/// against the model, a real server over loopback, and its drawings.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
        t.test("uses_only_the_sync_facade", move || {
            lesson().uses_only_the_sync_facade()
        });
        // The layer builds and serves over limiters that are not `Clone`,
        // as none of lessons 02–06 is.
        t.test("compiles_over_any_limiter", move || {
            lesson().compiles_over_any_limiter()
        });
    });
    t.group(group::CONFIG, |t| {
        t.cases(
            "policy",
            policy_cases(),
            move |(name, quota, window, expected)| lesson().policy(name, quota, window, expected),
        );
        // Every name, quota and window from the edges of each fault, together.
        t.test("every_pair_of_faults", move || lesson().policy_grid());
    });
    t.group(group::PROPERTY, |t| {
        // Keys, statuses, every rate-limit header byte, the problem body
        // and the inner service's calls, against the model.
        t.test("agrees_with_model", move || lesson().agrees_with_model());
        t.test("agrees_with_reference", move || {
            lesson().agrees_with_reference()
        });
        // What a client writes in front of X-Forwarded-For never changes its key.
        t.test("keys_cannot_be_forged", move || {
            lesson().keys_cannot_be_forged()
        });
        t.test(
            "calls_the_inner_service_once_per_allowed_request",
            move || lesson().calls_the_inner_service_once_per_allowed_request(),
        );
        t.test("reports_a_missing_peer_address_once", move || {
            lesson().reports_a_missing_peer_address_once()
        });
    });
    t.group(group::END_TO_END, |t| {
        // A real axum server on 127.0.0.1:0 and a real HTTP client.
        t.test("over_loopback", move || lesson().end_to_end_over_loopback());
    });
    t.group(group::SNAPSHOT, |t| {
        for name in SNAPSHOTS.iter().map(|s| s.0) {
            t.test(name, move || lesson().named_snapshot(name));
        }
    });
    compare(&mut t, move |which: &str| lesson().print_comparison(which));
    t
}

type Case = (&'static str, u64, Duration, Result<(), PolicyError>);

/// The policy's errors, each in the contract's order, and its extremes.
fn policy_cases() -> [Named<Case>; 16] {
    let secs = Duration::from_secs;
    let millis = Duration::from_millis;
    [
        ("empty_name", ("", 1, secs(1), Err(EmptyName))),
        (
            "empty_name_is_checked_first",
            ("", 0, secs(0), Err(EmptyName)),
        ),
        (
            "name_outside_printable_ascii",
            ("café", 1, secs(1), Err(InvalidName)),
        ),
        (
            "name_of_characters_beyond_latin_1",
            ("限流", 1, secs(1), Err(InvalidName)),
        ),
        (
            "control_character_in_name",
            ("a\tb", 1, secs(1), Err(InvalidName)),
        ),
        (
            "delete_character_in_name",
            ("a\x7fb", 1, secs(1), Err(InvalidName)),
        ),
        ("zero_quota", ("api", 0, secs(1), Err(ZeroQuota))),
        (
            "zero_quota_is_checked_before_the_window",
            ("api", 0, millis(1500), Err(ZeroQuota)),
        ),
        (
            "zero_window",
            ("api", 1, secs(0), Err(WindowNotWholeSeconds)),
        ),
        (
            "under_a_second",
            ("api", 1, millis(999), Err(WindowNotWholeSeconds)),
        ),
        (
            "a_fraction_of_a_second_more",
            ("api", 1, millis(1500), Err(WindowNotWholeSeconds)),
        ),
        (
            "a_nanosecond_more_than_a_second",
            ("api", 1, Duration::new(1, 1), Err(WindowNotWholeSeconds)),
        ),
        (
            "a_nanosecond_past_2_to_the_24_seconds",
            (
                "api",
                1,
                Duration::new(1 << 24, 1),
                Err(WindowNotWholeSeconds),
            ),
        ),
        ("one_second", ("api", 1, secs(1), Ok(()))),
        (
            "quotes_and_backslashes_are_escaped_not_refused",
            ("say \"hi\" \\o/", 1, secs(1), Ok(())),
        ),
        (
            "largest_quota_and_window",
            ("api", u64::MAX, secs(u64::MAX), Ok(())),
        ),
    ]
}
