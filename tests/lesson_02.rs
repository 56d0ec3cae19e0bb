//! Lesson 02: the fixed window, shared between threads.
//! Run: `cargo test --test lesson_02` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use rstest::rstest;

kata::lesson! {
    number: 2,
    title: "concurrent fixed window",
    algorithm: FixedWindow,
    limiter: ConcurrentFixedWindow,
    concurrent: true,
    learner: "../lessons/lesson_02.rs",
    stub: "../lessons/stubs/lesson_02.rs",
    reference: "../solutions/lesson_02.rs",
    mistakes: {
        aligned_to_first_request: "../mistakes/lesson_02/aligned_to_first_request.rs",
        check_then_act: "../mistakes/lesson_02/check_then_act.rs",
        full_window_retry: "../mistakes/lesson_02/full_window_retry.rs",
        last_request_denied: "../mistakes/lesson_02/last_request_denied.rs",
        late_timestamp_reopens: "../mistakes/lesson_02/late_timestamp_reopens.rs",
        racy_get_or_insert: "../mistakes/lesson_02/racy_get_or_insert.rs",
        relocks_while_holding: "../mistakes/lesson_02/relocks_while_holding.rs",
        replaced_window: "../mistakes/lesson_02/replaced_window.rs",
        shared_clock: "../mistakes/lesson_02/shared_clock.rs",
        std_mutex: "../mistakes/lesson_02/std_mutex.rs",
        two_maps_reset: "../mistakes/lesson_02/two_maps_reset.rs",
    },
    alternatives: {
        per_key_locks: "alternatives/lesson_02/per_key_locks.rs",
    },
}

/// Requests as `key@nanos`; answers as `+remaining` or `-retry_after_nanos`.
#[rstest]
#[case::first_requests_count_down(3, 1_000, "a@0 a@0 a@0", "+2 +1 +0")]
#[case::denied_until_the_next_window(2, 1_000, "a@0 a@1 a@2 a@999", "+1 +0 -998 -1")]
#[case::window_opens_exactly_on_its_start(
    2,
    1_000,
    "a@0 a@1 a@1000 a@1000 a@1000",
    "+1 +0 +1 +0 -1000"
)]
#[case::windows_align_to_the_origin_not_to_the_first_request(
    2,
    1_000,
    "a@900 a@950 a@1000",
    "+1 +0 +1"
)]
#[case::boundary_burst_lets_two_limits_through(
    2,
    1_000,
    "a@999 a@999 a@1000 a@1000",
    "+1 +0 +1 +0"
)]
#[case::keys_are_independent(1, 1_000, "a@0 b@0 a@1 b@1 \"\"@1", "+0 +0 -999 -999 +0")]
#[case::idle_windows_are_forgotten(1, 10, "a@5 a@95 a@96", "+0 +0 -4")]
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
