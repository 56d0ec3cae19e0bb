//! Lesson 13's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind (`cost`);
//! this file adds its examples of costs on one bucket. Run:
//! `cargo test --test lesson_13` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use std::time::Duration;

use kata::cost::{CostError, Limit};
use kata::trial::{Named, Trials};
use kata::Decision;

kata::lesson!();

type Answer = Result<Decision, CostError>;

/// A bucket, the requests' costs and instants (ns), and their answers.
type Example = (Limit, &'static [(u64, u64)], &'static [Answer]);

const fn bucket(capacity: u64, t: u64) -> Limit {
    Limit::new("bucket", capacity, Duration::from_nanos(t))
}

const fn ok(remaining: u64) -> Answer {
    Ok(Decision::Allowed { remaining })
}

const fn wait(ns: u64) -> Answer {
    Ok(Decision::Denied {
        retry_after: Duration::from_nanos(ns),
    })
}

const fn above(cost: u64, capacity: u64) -> Answer {
    Err(CostError::AboveCapacity {
        limit: 0,
        cost,
        capacity,
    })
}

const EXAMPLES: &[Named<Example>] = &[
    (
        "a_cost_of_one_is_lesson_05",
        (
            bucket(3, 1_000),
            &[(1, 0), (1, 0), (1, 0), (1, 0)],
            &[ok(2), ok(1), ok(0), wait(1_000)],
        ),
    ),
    (
        "a_cost_takes_that_many_tokens",
        (bucket(5, 1_000), &[(3, 0), (2, 0)], &[ok(2), ok(0)]),
    ),
    (
        "all_or_nothing",
        (
            bucket(5, 1_000),
            &[(3, 0), (3, 0), (2, 0)],
            &[ok(2), wait(1_000), ok(0)],
        ),
    ),
    (
        "the_wait_is_for_the_whole_cost",
        (bucket(5, 1_000), &[(5, 0), (3, 500)], &[ok(0), wait(2_500)]),
    ),
    (
        "after_the_wait_it_fits",
        (bucket(5, 1_000), &[(5, 0), (3, 3_000)], &[ok(0), ok(0)]),
    ),
    (
        "the_whole_capacity_at_once",
        (bucket(4, 10), &[(4, 0), (4, 40)], &[ok(0), ok(0)]),
    ),
    (
        "above_the_capacity_is_an_error_at_once",
        (bucket(4, 10), &[(5, 0), (4, 0)], &[above(5, 4), ok(0)]),
    ),
    (
        "a_cost_of_zero_is_an_error",
        (bucket(4, 10), &[(0, 0)], &[Err(CostError::ZeroCost)]),
    ),
    (
        "the_largest_cost_of_the_largest_bucket",
        (
            bucket(u64::MAX, 1),
            &[(u64::MAX, 0), (1, 0)],
            &[ok(0), wait(1)],
        ),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(limit, requests, expected)| {
        lesson().costs(limit, requests, expected);
    });
}
