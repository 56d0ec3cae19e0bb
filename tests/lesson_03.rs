//! Lesson 03's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_03` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution).

use kata::trial::{Named, Trials};

kata::lesson!();

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
const EXAMPLES: &[Named<(u64, u64, &str, &str)>] = &[
    (
        "requests_count_down_then_are_denied",
        (2, 1_000, "a@0 a@0 a@0", "+1 +0 -1000"),
    ),
    (
        "a_slot_frees_when_the_oldest_entry_is_w_old",
        (2, 1_000, "a@0 a@600 a@999 a@1000", "+1 +0 -1 +0"),
    ),
    (
        "retry_after_waits_for_the_oldest_entry",
        (
            2,
            1_000,
            "a@0 a@600 a@700 a@1000 a@1000",
            "+1 +0 -300 +0 -600",
        ),
    ),
    (
        "no_boundary_burst",
        (
            2,
            1_000,
            "a@999 a@999 a@1000 a@1000 a@1998 a@1999",
            "+1 +0 -999 -999 -1 +1",
        ),
    ),
    (
        "denied_requests_are_not_logged",
        (1, 1_000, "a@0 a@500 a@999 a@1000", "+0 -500 -1 +0"),
    ),
    (
        "keys_are_independent",
        (1, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+0 +0 -999 -999 +0"),
    ),
    (
        "idle_keys_start_over",
        (3, 10, "a@0 a@1 a@2 a@100", "+2 +1 +0 +2"),
    ),
    ("one_nanosecond_windows", (1, 1, "a@0 a@0 a@1", "+0 -1 +0")),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(limit, window, requests, expected)| {
        lesson().example(limit, window, requests, expected);
    });
}
