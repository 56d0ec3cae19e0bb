//! Lesson 12's checks. `kata::lesson!()` defines the lesson from
//! `lessons/lessons.toml` with the standard checks of its kind
//! (`in-flight`); this file adds its examples of the delay queue. Run:
//! `cargo test --test lesson_12` (your file) or with
//! `KATA_SUBJECT=reference` (the reference solution).

use std::time::Duration;

use kata::inflight::{Admit, DelayPolicy};
use kata::trial::{Named, Trials};

kata::lesson!();

/// A delay queue's policy, the arrivals (ms) and what each is answered.
type Example = (DelayPolicy, &'static [u64], &'static [Admit]);

const fn policy(rate: u32, burst: u32, delay: u32) -> DelayPolicy {
    DelayPolicy { rate, burst, delay }
}

const fn after(ms: u64) -> Admit {
    Admit::After(Duration::from_millis(ms))
}

const fn reject(ms: u64) -> Admit {
    Admit::Reject(Duration::from_millis(ms))
}

const EXAMPLES: &[Named<Example>] = &[
    (
        "the_first_goes_at_once",
        (policy(10, 0, 0), &[0], &[Admit::Now]),
    ),
    (
        "no_burst_refuses_the_second",
        (policy(10, 0, 0), &[0, 50], &[Admit::Now, reject(50)]),
    ),
    (
        "each_waits_for_the_one_before_it_plus_an_interval",
        (
            policy(10, 3, 0),
            &[0, 1, 2, 3, 4],
            &[Admit::Now, after(99), after(198), after(297), reject(96)],
        ),
    ),
    (
        "nodelay_sends_the_burst_at_once",
        (
            policy(10, 3, 3),
            &[0, 1, 2, 3, 4],
            &[Admit::Now, Admit::Now, Admit::Now, Admit::Now, reject(96)],
        ),
    ),
    (
        "delay_2_sends_two_at_once_then_delays",
        (
            policy(10, 3, 2),
            &[0, 1, 2, 3],
            &[Admit::Now, Admit::Now, Admit::Now, after(97)],
        ),
    ),
    (
        "a_refused_request_takes_no_place",
        (
            policy(10, 1, 0),
            &[0, 1, 2, 150],
            &[Admit::Now, after(99), reject(98), after(50)],
        ),
    ),
    (
        "the_queue_drains_at_the_rate",
        (
            policy(10, 1, 0),
            &[0, 1, 300],
            &[Admit::Now, after(99), Admit::Now],
        ),
    ),
    (
        "a_second_apart_and_a_deep_queue",
        (
            policy(1, 5, 5),
            &[0, 0, 0, 0, 0, 0, 0],
            &[
                Admit::Now,
                Admit::Now,
                Admit::Now,
                Admit::Now,
                Admit::Now,
                Admit::Now,
                reject(1_000),
            ],
        ),
    ),
    (
        "an_interval_is_whole_nanoseconds",
        (
            policy(3, 1, 0),
            &[0, 0],
            &[Admit::Now, Admit::After(Duration::from_nanos(333_333_333))],
        ),
    ),
];

fn examples(t: &mut Trials) {
    t.examples(EXAMPLES, |(policy, arrivals, expected)| {
        lesson().admits(policy, arrivals, expected);
    });
}
