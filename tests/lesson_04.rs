//! Lesson 04's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_04` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution).

use kata::trial::{Named, Trials};

kata::lesson!();

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
const EXAMPLES: &[Named<(u64, u64, &str, &str)>] = &[
    (
        "counts_down_in_the_first_window",
        (2, 1_000, "a@0 a@0 a@0", "+1 +0 -1001"),
    ),
    (
        "the_previous_window_weighs_what_still_overlaps",
        (
            4,
            100,
            "a@0 a@0 a@0 a@0 a@100 a@150 a@150 a@150",
            "+3 +2 +1 +0 -1 +1 +0 -1",
        ),
    ),
    (
        "a_full_previous_window_blocks_its_successor_s_first_nanosecond",
        (
            2,
            1_000,
            "a@500 a@900 a@1000 a@1499 a@1500 a@1501",
            "+1 +0 -1 +0 -1 +0",
        ),
    ),
    (
        "two_windows_on_nothing_counts",
        (2, 1_000, "a@500 a@900 a@3000 a@3000", "+1 +0 +1 +0"),
    ),
    (
        "no_boundary_burst",
        (
            2,
            1_000,
            "a@999 a@999 a@1000 a@1000 a@1999",
            "+1 +0 -1 -1 +1",
        ),
    ),
    (
        "with_one_nanosecond_windows_the_wait_crosses_two",
        (1, 1, "a@5 a@5 a@6 a@7", "+0 -2 -1 +0"),
    ),
    (
        "keys_are_independent",
        (2, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+1 +1 +0 +0 +1"),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(limit, window, requests, expected)| {
        lesson().example(limit, window, requests, expected);
    });
}
