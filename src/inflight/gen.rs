//! Lesson 12's scripts and samples, as proptest strategies. A script's
//! requests come at whole milliseconds, its inner service's latencies and
//! bodies last whole milliseconds and a microsecond, and its drops fall a
//! further 3 µs past a millisecond: things that happen at one instant are
//! things the contract orders, never a tie of chance.

use std::time::Duration;

use proptest::prelude::*;

use super::sim::{Req, Script, Under};
use super::{AimdPolicy, DelayPolicy, GradientPolicy, Sample, ShedPolicy, Timestamp};
use crate::trial::Named;

/// The families of scripts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// Through the concurrency limit: waits, bodies, drops, give-ups.
    Concurrency,
    /// Through the shedder: keys, priorities and the reserved share.
    Shed,
    /// Through the delay queue: bursts, delays, refusals.
    Delay,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One request at `at` ms, answered after `latency` ms and its body ended
/// `body` ms later (each and a microsecond).
pub fn req(at: u64, latency: u64, body: u64) -> Req {
    Req {
        at: Timestamp::from_millis(at),
        key: None,
        priority: None,
        latency: ms(latency) + Duration::from_micros(1),
        body: ms(body) + Duration::from_micros(1),
        drop_at: None,
        gives_up: false,
        fails: false,
        ready_twice: false,
    }
}

/// The instant a request's caller drops it: `at` ms and 3 µs.
pub fn drop_at(at: u64) -> Option<Timestamp> {
    Some(Timestamp::from_millis(at) + Duration::from_micros(3))
}

/// The keys requests carry: some differ only in case; `""` is the key of a
/// request without one too, and of the two that are not visible ASCII.
const KEYS: &[&str] = &["a", "b", "A", "", "c", "é", "ü"];

/// What `x-priority` says: critical in any case and with spaces around it,
/// or something else, which is normal.
const PRIORITIES: &[&str] = &[
    "critical",
    "Critical",
    " CRITICAL ",
    "low",
    "critical-ish",
    "",
];

fn requests(
    count: std::ops::RangeInclusive<usize>,
    span: u64,
    keys: bool,
) -> impl Strategy<Value = Vec<Req>> {
    prop::collection::vec(
        (
            // Some requests come at one instant: a burst.
            prop_oneof![4 => 0..span, 1 => (0..4u64).prop_map(move |k| k * span / 4)],
            0u64..80,
            0u64..80,
            prop::option::weighted(0.25, 0u64..150),
            (
                prop::bool::weighted(0.1),
                prop::bool::weighted(0.1),
                prop::bool::weighted(0.2),
            ),
            prop::option::weighted(0.8, prop::sample::select(KEYS)),
            prop::option::weighted(0.4, prop::sample::select(PRIORITIES)),
        ),
        count,
    )
    .prop_map(move |mut raw| {
        raw.sort_by_key(|r| r.0);
        raw.into_iter()
            .map(
                |(at, latency, body, dropped, (gives_up, fails, ready_twice), key, priority)| Req {
                    drop_at: dropped.and_then(|d| drop_at(at + d)),
                    gives_up,
                    fails,
                    ready_twice,
                    key: key.filter(|_| keys),
                    priority: priority.filter(|_| keys),
                    ..req(at, latency, body)
                },
            )
            .collect()
    })
}

/// A script of the family.
pub fn script(family: Family) -> BoxedStrategy<Script> {
    match family {
        Family::Concurrency => (1usize..=4, requests(1..=12, 200, false))
            .prop_map(|(limit, requests)| Script {
                under: Under::Concurrency(limit),
                requests,
            })
            .boxed(),
        Family::Shed => (shed_policy(), requests(1..=14, 200, true))
            .prop_map(|(policy, requests)| Script {
                under: Under::Shed(policy),
                requests,
            })
            .boxed(),
        Family::Delay => (delay_policy(), requests(1..=14, 2_000, false))
            .prop_map(|(policy, requests)| Script {
                under: Under::Delay(policy),
                requests,
            })
            .boxed(),
    }
}

pub fn shed_policy() -> impl Strategy<Value = ShedPolicy> {
    (1usize..=4, 0usize..4, 1usize..=3, 1u64..=5).prop_map(|(limit, reserved, per_key, secs)| {
        ShedPolicy {
            limit,
            reserved: reserved.min(limit - 1),
            per_key,
            retry_after: Duration::from_secs(secs),
        }
    })
}

pub fn delay_policy() -> impl Strategy<Value = DelayPolicy> {
    (
        prop_oneof![
            8 => 1u32..=20,
            2 => Just(3),
            2 => Just(7),
            4 => 1_000u32..=1_000_000,
            // Past a billion a second the interval is 0 ns.
            1 => Just(u32::MAX),
        ],
        0u32..=9,
        0u32..=9,
    )
        .prop_map(|(rate, burst, delay)| DelayPolicy {
            rate,
            burst,
            delay: delay.min(burst),
        })
}

/// A delay queue's policy and the arrivals it is asked about (ns, in
/// order, bunched and spread).
pub fn arrivals() -> impl Strategy<Value = (DelayPolicy, Vec<Timestamp>)> {
    (
        delay_policy(),
        prop::collection::vec(
            prop_oneof![
                3 => Just(0u64),
                3 => 0u64..2_000_000,
                3 => 0u64..400_000_000,
                1 => 0u64..5_000_000_000,
            ],
            1..40,
        ),
    )
        .prop_map(|(policy, gaps)| {
            let mut at = 0u64;
            let arrivals = gaps
                .into_iter()
                .map(|g| {
                    at += g;
                    Timestamp::from_nanos(at)
                })
                .collect();
            (policy, arrivals)
        })
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        prop_oneof![
            3 => (1u64..40).prop_map(ms),
            1 => (40u64..400).prop_map(ms),
            1 => Just(ms(10)),
            // To the nanosecond.
            1 => (1u64..5_000_000).prop_map(Duration::from_nanos),
        ],
        0usize..120,
        prop::bool::weighted(0.08),
    )
        .prop_map(|(latency, in_flight, dropped)| Sample {
            latency,
            in_flight,
            dropped,
        })
}

fn bounds() -> impl Strategy<Value = (usize, usize, usize)> {
    (1usize..20, 0usize..200, 0usize..200).prop_map(|(min, span, at)| {
        let max = min + span;
        (min, max, min + at % (span + 1))
    })
}

pub fn aimd() -> impl Strategy<Value = (AimdPolicy, Vec<Sample>)> {
    (
        bounds(),
        1u32..=99,
        1u64..60,
        prop::collection::vec(sample(), 1..120),
    )
        .prop_map(|((min, max, initial), backoff_percent, timeout, samples)| {
            (
                AimdPolicy {
                    min,
                    max,
                    initial,
                    backoff_percent,
                    timeout: ms(timeout),
                },
                samples,
            )
        })
}

pub fn gradient() -> impl Strategy<Value = (GradientPolicy, Vec<Sample>)> {
    (
        bounds(),
        prop_oneof![Just(100u32), 100u32..400],
        prop::collection::vec(sample(), 1..120),
        // A few sequences end with a sample of no latency at all.
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |((min, max, initial), tolerance_percent, mut samples, zero)| {
                if zero {
                    samples.push(Sample {
                        latency: Duration::ZERO,
                        in_flight: 1,
                        dropped: false,
                    });
                }
                (
                    GradientPolicy {
                        min,
                        max,
                        initial,
                        tolerance_percent,
                    },
                    samples,
                )
            },
        )
}

/// What one step of a permits property does.
#[derive(Clone, Copy, Debug)]
pub enum Step {
    /// `try_acquire`, critical or not.
    Take(bool),
    /// `poll_acquire`, critical or not, from a task of its own that waits
    /// if it gets nothing.
    Wait(bool),
    /// The i-th permit held (modulo) is dropped.
    GiveBack(usize),
    SetLimit(usize),
}

impl Step {
    pub fn describe(&self) -> String {
        let p = |c: bool| if c { "Critical" } else { "Normal" };
        match *self {
            Step::Take(c) => format!("try_acquire({})", p(c)),
            Step::Wait(c) => format!("poll_acquire({}) from a task of its own", p(c)),
            Step::GiveBack(i) => format!(
                "a permit held is dropped (number {i} of those held, counting from 0 and around \
                 again)"
            ),
            Step::SetLimit(n) => format!("set_limit({n})"),
        }
    }
}

/// Permits' terms and a sequence of takes (critical or not), give-backs
/// (of the i-th held, modulo) and new limits.
pub fn permit_steps(wait: bool) -> impl Strategy<Value = (usize, usize, Vec<Step>)> {
    (1usize..=5, 0usize..5).prop_flat_map(move |(limit, reserved)| {
        let reserved = reserved.min(limit - 1);
        let step = prop_oneof![
            5 => any::<bool>().prop_map(Step::Take),
            if wait { 3 } else { 0 } => any::<bool>().prop_map(Step::Wait),
            3 => (0usize..8).prop_map(Step::GiveBack),
            1 => (0usize..=6).prop_map(Step::SetLimit),
        ];
        (
            Just(limit),
            Just(reserved),
            prop::collection::vec(step, 1..40),
        )
    })
}

fn shed(limit: usize, reserved: usize, per_key: usize) -> Under {
    Under::Shed(ShedPolicy {
        limit,
        reserved,
        per_key,
        retry_after: Duration::from_secs(2),
    })
}

/// The named scripts: drawn, compared with their snapshots, and shown by
/// `cargo run -- compare 12 NAME`.
pub const SNAPSHOTS: [Named<fn() -> Script>; 8] = [
    // Five requests, two permits: the others wait their turn.
    ("first_look", || Script {
        under: Under::Concurrency(2),
        requests: (0..5).map(|i| req(i * 10, 60, 20)).collect(),
    }),
    // A long body keeps its permit: the next request waits for its end,
    // not for its headers.
    ("the_body_holds_the_permit", || Script {
        under: Under::Concurrency(1),
        requests: vec![req(0, 10, 100), req(5, 10, 0), req(20, 10, 0)],
    }),
    // Callers that drop: one while it waits, one inside, one mid-body,
    // and one that was ready and never called.
    ("what_a_drop_gives_back", || {
        let mut r: Vec<_> = (0..6).map(|i| req(i * 5, 40, 40)).collect();
        r[1].drop_at = drop_at(60);
        r[2].drop_at = drop_at(20);
        r[3].gives_up = true;
        r[4].drop_at = drop_at(80);
        Script {
            under: Under::Concurrency(2),
            requests: r,
        }
    }),
    // Three permits, one kept for critical requests; two per key.
    ("shed_with_a_reserved_share", || {
        let mut r: Vec<_> = (0..7).map(|i| req(i * 5, 60, 0)).collect();
        for (i, x) in r.iter_mut().enumerate() {
            x.key = Some(if i % 3 == 0 { "b" } else { "a" });
        }
        r[3].priority = Some("critical");
        r[5].priority = Some("critical");
        Script {
            under: shed(3, 1, 2),
            requests: r,
        }
    }),
    // nginx's `rate=10r/s burst=3`: each is delayed to its turn, the
    // fifth refused.
    ("delay_queue", || Script {
        under: Under::Delay(DelayPolicy {
            rate: 10,
            burst: 3,
            delay: 0,
        }),
        requests: (0..5)
            .map(|i| req(i, 5, 0))
            .chain([req(450, 5, 0)])
            .collect(),
    }),
    // One a second and no queue: refusals of a whole second and of less,
    // each told in whole seconds, rounded up.
    ("a_refusal_says_when", || Script {
        under: Under::Delay(DelayPolicy {
            rate: 1,
            burst: 0,
            delay: 0,
        }),
        requests: vec![req(0, 5, 0), req(0, 5, 0), req(400, 5, 0), req(1_000, 5, 0)],
    }),
    // Ten thousand a second and no queue: a refusal of a tenth of a
    // millisecond still says `Retry-After: 1`, never 0.
    ("a_refusal_under_a_millisecond", || Script {
        under: Under::Delay(DelayPolicy {
            rate: 10_000,
            burst: 0,
            delay: 0,
        }),
        requests: vec![req(0, 5, 0), req(0, 5, 0)],
    }),
    // The same with `delay=2`: the first three go at once.
    ("delay_queue_two_at_once", || Script {
        under: Under::Delay(DelayPolicy {
            rate: 10,
            burst: 3,
            delay: 2,
        }),
        requests: (0..5).map(|i| req(i, 5, 0)).collect(),
    }),
];
