//! Lesson 08's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_08` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution). The tests start
//! their own redis-server on a free loopback port and stop it.

use kata::redis::drive::RuleKind;
use kata::trial::{Named, Trials};

kata::lesson!();

/// A rule, its limit and its period in ns, the requests and the answers.
type Example = (RuleKind, u64, u64, &'static str, &'static str);

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
/// The two numbers are the limit (or capacity) and the window (or refill
/// interval) in ns. Every answer comes from Redis.
const EXAMPLES: &[Named<Example>] = &[
    (
        "fixed_window_counts_down_then_waits_for_the_next_window",
        (
            RuleKind::FixedWindow,
            2,
            1_000,
            "a@0 a@1 a@2 a@999 a@1000",
            "+1 +0 -998 -1 +1",
        ),
    ),
    (
        "fixed_window_keys_are_independent",
        (
            RuleKind::FixedWindow,
            1,
            1_000,
            "a@0 b@0 a@1 \"\"@1",
            "+0 +0 -999 +0",
        ),
    ),
    (
        "sliding_log_two_requests_at_one_instant_are_two_entries",
        (
            RuleKind::SlidingLog,
            3,
            1_000,
            "a@5 a@5 a@5 a@5 a@1005",
            "+2 +1 +0 -1000 +2",
        ),
    ),
    (
        "gcra_a_new_key_s_bucket_is_full",
        (
            RuleKind::Gcra,
            3,
            1_000,
            "a@0 a@0 a@0 a@0",
            "+2 +1 +0 -1000",
        ),
    ),
    (
        "gcra_a_fraction_of_t_counts_toward_the_next_token",
        (
            RuleKind::Gcra,
            2,
            1_000,
            "a@0 a@0 a@1500 a@1500 a@2000",
            "+1 +0 +0 -500 +0",
        ),
    ),
    (
        "past_2_to_the_53_nanoseconds_every_nanosecond_counts",
        (
            RuleKind::Gcra,
            1,
            1,
            "a@9007199254740993 a@9007199254740993 a@9007199254740994",
            "+0 -1 +0",
        ),
    ),
    (
        "a_window_of_u64_max_nanoseconds",
        (
            RuleKind::FixedWindow,
            1,
            18_446_744_073_709_551_615,
            "a@18446744073709551614 a@18446744073709551614",
            "+0 -1",
        ),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(rule, limit, period, requests, expected)| {
        lesson()
            .rule(rule)
            .example(limit, period, requests, expected);
    });
}
