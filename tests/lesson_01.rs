//! Lesson 01's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_01` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution).

use kata::trial::{Named, Trials};

kata::lesson!();

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
const EXAMPLES: &[Named<(u64, u64, &str, &str)>] = &[
    (
        "a_fresh_key_starts_with_the_full_limit",
        (3, 1_000, "a@0", "+2"),
    ),
    (
        "requests_count_down_then_are_denied",
        (2, 1_000, "a@0 a@0 a@0", "+1 +0 -1000"),
    ),
    (
        "retry_after_is_the_time_left_in_the_window",
        (2, 1_000, "a@10 a@20 a@30 a@999", "+1 +0 -970 -1"),
    ),
    (
        "the_window_end_belongs_to_the_next_window",
        (1, 1_000, "a@0 a@999 a@1000", "+0 -1 +0"),
    ),
    (
        "windows_align_to_the_origin_not_to_the_first_request",
        (2, 1_000, "a@900 a@950 a@1000", "+1 +0 +1"),
    ),
    (
        "boundary_burst_lets_two_limits_through",
        (2, 1_000, "a@999 a@999 a@1000 a@1000", "+1 +0 +1 +0"),
    ),
    (
        "denied_requests_do_not_count",
        (1, 1_000, "a@0 a@500 a@999 a@1000", "+0 -500 -1 +0"),
    ),
    (
        "keys_are_independent",
        (1, 1_000, "a@0 b@0 a@1 b@1", "+0 +0 -999 -999"),
    ),
    (
        "the_empty_key_is_a_key",
        (1, 1_000, "\"\"@0 a@0 \"\"@1", "+0 +0 -999"),
    ),
    (
        "idle_windows_are_forgotten",
        (1, 10, "a@5 a@95 a@96", "+0 +0 -4"),
    ),
    ("one_nanosecond_windows", (1, 1, "a@0 a@0 a@1", "+0 -1 +0")),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(limit, window, requests, expected)| {
        lesson().example(limit, window, requests, expected);
    });
}
