//! Lesson 06: GCRA, lock-free.
//! Run: `cargo test --test lesson_06` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use rstest::rstest;

kata::lesson! {
    number: 6,
    title: "lock-free GCRA",
    algorithm: TokenBucket,
    limiter: Gcra,
    concurrent: true,
    learner: "../lessons/lesson_06.rs",
    stub: "../lessons/stubs/lesson_06.rs",
    reference: "../solutions/lesson_06.rs",
    mistakes: {
        cas_without_reload: "../mistakes/lesson_06/cas_without_reload.rs",
        denied_pushes_the_tat: "../mistakes/lesson_06/denied_pushes_the_tat.rs",
        load_then_store: "../mistakes/lesson_06/load_then_store.rs",
        overflows_near_the_end: "../mistakes/lesson_06/overflows_near_the_end.rs",
        racy_insert: "../mistakes/lesson_06/racy_insert.rs",
        tat_from_now: "../mistakes/lesson_06/tat_from_now.rs",
        tolerance_of_c_intervals: "../mistakes/lesson_06/tolerance_of_c_intervals.rs",
    },
    alternatives: {
        going_further: "../solutions/lesson_06_further.rs",
        sharded: "alternatives/lesson_06/sharded.rs",
    },
    baseline: {
        TokenBucket: "../solutions/lesson_05.rs",
    },
}

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
/// The first two numbers are the capacity C and the refill interval T in ns.
#[rstest]
#[case::a_new_key_s_bucket_is_full(3, 1_000, "a@0 a@0 a@0 a@0", "+2 +1 +0 -1000")]
#[case::one_token_every_t(2, 1_000, "a@0 a@0 a@400 a@1000 a@1000", "+1 +0 -600 +0 -1000")]
#[case::a_fraction_of_t_counts_toward_the_next_token(
    2,
    1_000,
    "a@0 a@0 a@1500 a@1500 a@2000",
    "+1 +0 +0 -500 +0"
)]
#[case::the_bucket_never_holds_more_than_c(2, 1_000, "a@0 a@5000 a@5000 a@5000", "+1 +1 +0 -1000")]
#[case::exactly_on_the_refill(1, 3, "a@0 a@1 a@2 a@3", "+0 -2 -1 +0")]
#[case::keys_are_independent(1, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+0 +0 -999 -999 +0")]
fn examples(
    #[case] capacity: u64,
    #[case] refill_every: u64,
    #[case] requests: &str,
    #[case] expected: &str,
) {
    lesson().example(capacity, refill_every, requests, expected);
}

kata::bucket_config_tests!();

kata::property_tests!();

kata::snapshot_tests!();

kata::loom_tests!();

/// GCRA is lesson 05's token bucket kept as one number per key: on random
/// timelines it must answer exactly as lesson 05's reference does.
#[test]
fn decides_like_the_lesson_05_token_bucket() {
    lesson().agrees_with_baseline();
}
