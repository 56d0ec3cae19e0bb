//! Lesson 09's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_09` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution).

use kata::memory::drive::RuleKind;
use kata::memory::Overflow;
use kata::trial::{Named, Trials};

kata::lesson!();

/// A rule, its limit and period, its bound and overflow, the steps and the
/// answers.
type Example = (
    RuleKind,
    (u64, u64),
    (usize, Overflow),
    &'static str,
    &'static str,
);

/// Steps as `key@nanos` (a request) or `sweep@nanos`; answers as
/// `+remaining`, `-retry_after_nanos`, or `=n` for a sweep that forgot n
/// keys. Then the rule's limit (or capacity) and window (or refill
/// interval) in ns, and the store's `max_keys` and overflow answer.
const EXAMPLES: &[Named<Example>] = &[
    (
        "a_fixed_window_key_is_forgotten_when_its_window_ends",
        (
            RuleKind::FixedWindow,
            (2, 1_000),
            (10, Overflow::Deny),
            "a@0 a@10 sweep@999 sweep@1000 a@1000",
            "+1 +0 =0 =1 +1",
        ),
    ),
    (
        "a_bucket_is_forgotten_when_it_is_full_again_not_one_interval_before",
        (
            RuleKind::TokenBucket,
            (3, 1_000),
            (10, Overflow::Deny),
            "a@0 a@0 a@0 sweep@2999 a@2999 sweep@3999 sweep@4000",
            "+2 +1 +0 =0 +1 =0 =1",
        ),
    ),
    (
        "a_full_store_denies_a_new_key_until_the_first_key_is_fresh",
        (
            RuleKind::TokenBucket,
            (2, 1_000),
            (2, Overflow::Deny),
            "a@0 b@400 c@600 c@1000 c@1000",
            "+1 +1 -400 +1 +0",
        ),
    ),
    (
        "a_full_store_admits_a_new_key_untracked",
        (
            RuleKind::FixedWindow,
            (1, 1_000),
            (1, Overflow::Admit),
            "a@0 b@0 b@0 a@0 b@1000",
            "+0 +0 +0 -1000 +0",
        ),
    ),
    (
        "a_late_request_is_answered_at_the_latest_instant",
        (
            RuleKind::FixedWindow,
            (1, 1_000),
            (10, Overflow::Deny),
            "b@1500 a@999 a@10",
            "+0 +0 -500",
        ),
    ),
    (
        "a_sweep_moves_the_clock_on_for_every_later_request",
        (
            RuleKind::FixedWindow,
            (1, 1_000),
            (10, Overflow::Deny),
            "a@0 sweep@1500 a@999 a@999",
            "+0 =1 +0 -500",
        ),
    ),
    (
        "held_keys_keep_their_answers_while_new_ones_overflow",
        (
            RuleKind::FixedWindow,
            (2, 1_000),
            (1, Overflow::Deny),
            "a@0 b@0 a@0 a@0 b@1000",
            "+1 -1000 +0 -1000 +1",
        ),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(rule, limits, bounds, steps, expected)| {
        lesson().example(rule, limits, bounds, steps, expected);
    });
}
