//! Lesson 11's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind
//! (`http-client`); this file adds its examples of `server_wait`. Run:
//! `cargo test --test lesson_11` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use std::time::Duration;

use kata::trial::{Named, Trials};

kata::lesson!();

/// An answer's headers, how long after the checks' wall clock's origin
/// (Thu, 01 Jan 2026 00:00:00 GMT) it came, and the wait it asks for.
type Example = (
    &'static [(&'static str, &'static str)],
    Duration,
    Option<Duration>,
);

const EXAMPLES: &[Named<Example>] = &[
    (
        "retry_after_in_seconds",
        (
            &[("retry-after", "120")],
            Duration::ZERO,
            Some(Duration::from_secs(120)),
        ),
    ),
    (
        "retry_after_with_spaces_around_it",
        (
            &[("retry-after", " 5 ")],
            Duration::ZERO,
            Some(Duration::from_secs(5)),
        ),
    ),
    (
        "a_tab_before_it_too",
        (
            &[("retry-after", "\t5")],
            Duration::ZERO,
            Some(Duration::from_secs(5)),
        ),
    ),
    (
        "a_plus_sign_is_not_a_digit",
        (&[("retry-after", "+5")], Duration::ZERO, None),
    ),
    (
        "a_number_past_u64_waits_for_ever",
        (
            &[("retry-after", "99999999999999999999999")],
            Duration::ZERO,
            Some(Duration::from_secs(u64::MAX)),
        ),
    ),
    (
        "retry_after_zero_is_no_wait",
        (
            &[("retry-after", "0")],
            Duration::ZERO,
            Some(Duration::ZERO),
        ),
    ),
    (
        "retry_after_is_seconds_never_milliseconds",
        (
            &[("retry-after", "2")],
            Duration::from_millis(300),
            Some(Duration::from_secs(2)),
        ),
    ),
    (
        "an_http_date_two_minutes_ahead",
        (
            &[("retry-after", "Thu, 01 Jan 2026 00:02:00 GMT")],
            Duration::ZERO,
            Some(Duration::from_secs(120)),
        ),
    ),
    (
        "an_http_date_from_the_answer_s_instant",
        (
            &[("retry-after", "Thu, 01 Jan 2026 00:00:10 GMT")],
            Duration::from_millis(2500),
            Some(Duration::from_millis(7500)),
        ),
    ),
    (
        "an_http_date_in_the_past_is_no_wait",
        (
            &[("retry-after", "Wed, 31 Dec 2025 23:59:00 GMT")],
            Duration::ZERO,
            Some(Duration::ZERO),
        ),
    ),
    (
        "ratelimit_t_when_nothing_remains",
        (
            &[("ratelimit", "\"api\";r=0;t=7")],
            Duration::ZERO,
            Some(Duration::from_secs(7)),
        ),
    ),
    (
        "t_is_a_wait_not_an_instant",
        (
            &[("ratelimit", "\"api\";r=0;t=1767225607")],
            Duration::ZERO,
            Some(Duration::from_secs(1_767_225_607)),
        ),
    ),
    (
        "no_wait_while_quota_remains",
        (&[("ratelimit", "\"api\";r=3;t=7")], Duration::ZERO, None),
    ),
    (
        "the_longest_t_of_the_exhausted_policies",
        (
            &[(
                "ratelimit",
                "\"minute\";r=0;t=20, \"day\";r=0;t=3600, \"burst\";r=5;t=1",
            )],
            Duration::ZERO,
            Some(Duration::from_secs(3600)),
        ),
    ),
    (
        "retry_after_before_t",
        (
            &[("retry-after", "3"), ("ratelimit", "\"api\";r=0;t=30")],
            Duration::ZERO,
            Some(Duration::from_secs(3)),
        ),
    ),
    (
        "an_unreadable_retry_after_leaves_t",
        (
            &[("retry-after", "soon"), ("ratelimit", "\"api\";r=0;t=30")],
            Duration::ZERO,
            Some(Duration::from_secs(30)),
        ),
    ),
    (
        "a_negative_retry_after_is_unreadable",
        (&[("retry-after", "-5")], Duration::ZERO, None),
    ),
    (
        "an_unreadable_ratelimit_field_is_no_wait",
        (&[("ratelimit", "\"api;r=0;t=30")], Duration::ZERO, None),
    ),
    (
        "nothing_asked",
        (&[("content-type", "text/plain")], Duration::ZERO, None),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(headers, after, expected)| {
        lesson().server_wait(headers, after, expected);
    });
}
