//! Lesson 03: the sliding log.
//! Run: `cargo test --test lesson_03` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use rstest::rstest;

kata::lesson! {
    number: 3,
    title: "sliding log",
    algorithm: SlidingLog,
    limiter: SlidingLog,
    concurrent: true,
    learner: "../lessons/lesson_03.rs",
    stub: "../lessons/stubs/lesson_03.rs",
    reference: "../solutions/lesson_03.rs",
    mistakes: {
        check_then_act: "../mistakes/lesson_03/check_then_act.rs",
        clears_whole_log: "../mistakes/lesson_03/clears_whole_log.rs",
        cutoff_keeps_boundary_entry: "../mistakes/lesson_03/cutoff_keeps_boundary_entry.rs",
        late_timestamp_logged: "../mistakes/lesson_03/late_timestamp_logged.rs",
        logs_denied_requests: "../mistakes/lesson_03/logs_denied_requests.rs",
        racy_get_or_insert: "../mistakes/lesson_03/racy_get_or_insert.rs",
        retry_from_newest: "../mistakes/lesson_03/retry_from_newest.rs",
        trim_loop_never_ends: "../mistakes/lesson_03/trim_loop_never_ends.rs",
    },
    alternatives: {
        ring_buffer: "alternatives/lesson_03/ring_buffer.rs",
    },
}

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
#[rstest]
#[case::requests_count_down_then_are_denied(2, 1_000, "a@0 a@0 a@0", "+1 +0 -1000")]
#[case::a_slot_frees_when_the_oldest_entry_is_w_old(
    2,
    1_000,
    "a@0 a@600 a@999 a@1000",
    "+1 +0 -1 +0"
)]
#[case::retry_after_waits_for_the_oldest_entry(
    2,
    1_000,
    "a@0 a@600 a@700 a@1000 a@1000",
    "+1 +0 -300 +0 -600"
)]
#[case::no_boundary_burst(
    2,
    1_000,
    "a@999 a@999 a@1000 a@1000 a@1998 a@1999",
    "+1 +0 -999 -999 -1 +1"
)]
#[case::denied_requests_are_not_logged(1, 1_000, "a@0 a@500 a@999 a@1000", "+0 -500 -1 +0")]
#[case::keys_are_independent(1, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+0 +0 -999 -999 +0")]
#[case::idle_keys_start_over(3, 10, "a@0 a@1 a@2 a@100", "+2 +1 +0 +2")]
#[case::one_nanosecond_windows(1, 1, "a@0 a@0 a@1", "+0 -1 +0")]
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
