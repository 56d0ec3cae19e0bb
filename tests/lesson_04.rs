//! Lesson 04: the sliding window counter.
//! Run: `cargo test --test lesson_04` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use rstest::rstest;

kata::lesson! {
    number: 4,
    title: "sliding counter",
    algorithm: SlidingCounter,
    limiter: SlidingCounter,
    concurrent: true,
    learner: "../lessons/lesson_04.rs",
    stub: "../lessons/stubs/lesson_04.rs",
    reference: "../solutions/lesson_04.rs",
    mistakes: {
        check_then_act: "../mistakes/lesson_04/check_then_act.rs",
        filtered_log: "../mistakes/lesson_04/filtered_log.rs",
        float_weights: "../mistakes/lesson_04/float_weights.rs",
        late_timestamp_rolls_back: "../mistakes/lesson_04/late_timestamp_rolls_back.rs",
        previous_kept_after_a_gap: "../mistakes/lesson_04/previous_kept_after_a_gap.rs",
        retry_at_the_next_window: "../mistakes/lesson_04/retry_at_the_next_window.rs",
        u64_products: "../mistakes/lesson_04/u64_products.rs",
        weight_grows_with_time: "../mistakes/lesson_04/weight_grows_with_time.rs",
    },
    alternatives: {
        search_the_wait: "alternatives/lesson_04/search_the_wait.rs",
    },
}

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
#[rstest]
#[case::counts_down_in_the_first_window(2, 1_000, "a@0 a@0 a@0", "+1 +0 -1001")]
#[case::the_previous_window_weighs_what_still_overlaps(
    4,
    100,
    "a@0 a@0 a@0 a@0 a@100 a@150 a@150 a@150",
    "+3 +2 +1 +0 -1 +1 +0 -1"
)]
#[case::a_full_previous_window_blocks_its_successor_s_first_nanosecond(
    2,
    1_000,
    "a@500 a@900 a@1000 a@1499 a@1500 a@1501",
    "+1 +0 -1 +0 -1 +0"
)]
#[case::two_windows_on_nothing_counts(2, 1_000, "a@500 a@900 a@3000 a@3000", "+1 +0 +1 +0")]
#[case::no_boundary_burst(2, 1_000, "a@999 a@999 a@1000 a@1000 a@1999", "+1 +0 -1 -1 +1")]
#[case::with_one_nanosecond_windows_the_wait_crosses_two(1, 1, "a@5 a@5 a@6 a@7", "+0 -2 -1 +0")]
#[case::keys_are_independent(2, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+1 +1 +0 +0 +1")]
fn examples(
    #[case] limit: u64,
    #[case] window: u64,
    #[case] requests: &str,
    #[case] expected: &str,
) {
    lesson().example(limit, window, requests, expected);
}

kata::config_tests!();

kata::property_tests!();

kata::snapshot_tests!();

kata::loom_tests!();
