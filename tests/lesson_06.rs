//! Lesson 06's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind; this file
//! adds its examples. Run: `cargo test --test lesson_06` (your file) or
//! with `KATA_SUBJECT=reference` (the reference solution).

use kata::trial::{Named, Trials};

kata::lesson!();

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
/// The first two numbers are the capacity C and the refill interval T in ns.
const EXAMPLES: &[Named<(u64, u64, &str, &str)>] = &[
    (
        "a_new_key_s_bucket_is_full",
        (3, 1_000, "a@0 a@0 a@0 a@0", "+2 +1 +0 -1000"),
    ),
    (
        "one_token_every_t",
        (
            2,
            1_000,
            "a@0 a@0 a@400 a@1000 a@1000",
            "+1 +0 -600 +0 -1000",
        ),
    ),
    (
        "a_fraction_of_t_counts_toward_the_next_token",
        (2, 1_000, "a@0 a@0 a@1500 a@1500 a@2000", "+1 +0 +0 -500 +0"),
    ),
    (
        "the_bucket_never_holds_more_than_c",
        (2, 1_000, "a@0 a@5000 a@5000 a@5000", "+1 +1 +0 -1000"),
    ),
    (
        "exactly_on_the_refill",
        (1, 3, "a@0 a@1 a@2 a@3", "+0 -2 -1 +0"),
    ),
    (
        "keys_are_independent",
        (1, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+0 +0 -999 -999 +0"),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(capacity, refill_every, requests, expected)| {
        lesson().example(capacity, refill_every, requests, expected);
    });
}
