//! Lesson 11's scripts: random ones, by family, for the properties, each
//! call at its own instant (so the log's order is the only order there
//! is), and the named ones the drawings and examples use.

use std::time::Duration;

use axum::http::Method;
use proptest::prelude::*;

use super::script::{Call, Phase, Reply, Script, Wait};
use super::{BudgetPolicy, ClientPolicy, Timestamp};

/// What a family of scripts exercises.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    /// 429s and 503s with every form of wait, on two hosts.
    Waits,
    /// Methods, keys and statuses: what is retried, and how often.
    Retries,
    /// Outages under a small budget, several clients.
    Budget,
    /// A server that keeps a limit and tells it.
    Pace,
    /// Calls dropped by their caller while they wait.
    Cancel,
    /// All of it at once.
    Everything,
}

fn policy(family: Family) -> impl Strategy<Value = ClientPolicy> {
    let attempts = match family {
        Family::Budget | Family::Cancel => 3..=5u32,
        _ => 1..=5u32,
    };
    // Budgets that run out where they are the point: without them a retry
    // given back changes nothing a later request can see.
    // The families of milestones before the budget's get a budget that
    // never runs out (a thousand retries a second).
    let (min, ttl) = match family {
        Family::Budget => (0..=1u32, 1..=10u64),
        Family::Cancel => (0..=1, 5..=10),
        Family::Everything => (0..=3, 1..=10),
        Family::Waits | Family::Retries | Family::Pace => (1000..=1000, 1..=10),
    };
    (
        attempts,
        prop_oneof![Just(10u64), Just(100), Just(250), Just(1000)],
        prop_oneof![Just(1u64), Just(2), Just(4), Just(30)],
        ttl,
        min,
        prop_oneof![
            Just(0u32),
            Just(10),
            Just(20),
            Just(50),
            Just(100),
            Just(1000)
        ],
        any::<u64>(),
    )
        .prop_map(
            |(max_attempts, base_ms, times, ttl, min_per_sec, retry_percent, seed)| ClientPolicy {
                max_attempts,
                base: Duration::from_millis(base_ms),
                cap: Duration::from_millis(base_ms * times),
                budget: BudgetPolicy {
                    ttl: Duration::from_secs(ttl),
                    min_per_sec,
                    retry_percent,
                },
                seed,
            },
        )
}

fn wait() -> impl Strategy<Value = Option<Wait>> {
    prop_oneof![
        Just(None),
        (0..=5u64).prop_map(|s| Some(Wait::Secs(s))),
        (0..=5u64).prop_map(|s| Some(Wait::Date(s))),
        Just(Some(Wait::Garbage)),
    ]
}

fn reply(family: Family) -> BoxedStrategy<Reply> {
    let waits = prop_oneof![
        (
            wait(),
            proptest::option::of(0..=4u64),
            proptest::option::of(0..=6u64)
        )
            .prop_map(|(retry_after, t, also)| Reply::Limited {
                retry_after,
                t,
                also
            }),
        wait().prop_map(|retry_after| Reply::Unavailable { retry_after }),
    ];
    let others = prop_oneof![
        prop_oneof![
            Just(408u16),
            Just(500),
            Just(501),
            Just(502),
            Just(504),
            Just(505)
        ]
        .prop_map(Reply::Status),
        Just(Reply::NoAnswer),
    ];
    match family {
        Family::Waits => waits.boxed(),
        // Long waits, so that callers give up during them.
        Family::Cancel => prop_oneof![
            proptest::option::of((0..=3u64).prop_map(Wait::Secs))
                .prop_map(|retry_after| Reply::Unavailable { retry_after }),
            Just(Reply::NoAnswer),
        ]
        .boxed(),
        Family::Budget => prop_oneof![
            Just(Reply::Unavailable { retry_after: None }),
            Just(Reply::NoAnswer),
            Just(Reply::Status(500)),
        ]
        .boxed(),
        _ => prop_oneof![waits, others].boxed(),
    }
}

fn phases(family: Family) -> BoxedStrategy<Vec<Phase>> {
    let count = match family {
        Family::Pace => 0..=1usize,
        _ => 1..=4,
    };
    proptest::collection::vec(
        (
            prop_oneof![Just('a'), Just('b')],
            0..12_000u64,
            200..9_000u64,
            reply(family),
        )
            .prop_map(|(host, from, length, reply)| Phase {
                host,
                from: Timestamp::from_millis(from),
                until: Timestamp::from_millis(from + length),
                reply,
            }),
        count,
    )
    .boxed()
}

fn method() -> impl Strategy<Value = (Method, bool)> {
    prop_oneof![
        4 => Just((Method::GET, false)),
        1 => Just((Method::PUT, false)),
        1 => Just((Method::DELETE, false)),
        1 => Just((Method::HEAD, false)),
        1 => Just((Method::OPTIONS, false)),
        1 => Just((Method::TRACE, false)),
        2 => Just((Method::POST, false)),
        1 => Just((Method::PATCH, false)),
        2 => Just((Method::POST, true)),
    ]
}

fn calls(family: Family, clients: usize) -> BoxedStrategy<Vec<Call>> {
    let (count, gap) = match family {
        Family::Pace => (4..=16usize, 0..400u64),
        Family::Cancel => (3..=12, 0..800),
        Family::Budget => (6..=24, 0..600),
        _ => (1..=8, 0..2_500),
    };
    let cancel = matches!(family, Family::Cancel | Family::Everything);
    let one = (
        gap,
        1..1_000u64,
        0..clients,
        method(),
        prop_oneof![3 => Just('a'), 1 => Just('b')],
        prop_oneof![9 => Just(None), 1 => prop_oneof![Just(400u16), Just(404), Just(409)].prop_map(Some)],
        if cancel {
            proptest::option::weighted(0.5, (1..2_000u64, 1..1000u64)).boxed()
        } else {
            Just(None).boxed()
        },
    );
    proptest::collection::vec(one, count)
        .prop_map(move |parts| {
            let mut at = 0u64;
            parts
                .into_iter()
                .map(
                    |(gap, ns, client, (method, key), host, answer_with, drop)| {
                        at += gap * 1_000_000 + ns;
                        let method = if family == Family::Budget {
                            Method::GET
                        } else {
                            method
                        };
                        Call {
                            at: Timestamp::from_nanos(at),
                            client,
                            method,
                            host,
                            idempotency_key: key,
                            answer_with: if family == Family::Budget {
                                None
                            } else {
                                answer_with
                            },
                            drop_at: drop
                                .map(|(ms, ns)| Timestamp::from_nanos(at + ms * 1_000_000 + ns)),
                        }
                    },
                )
                .collect()
        })
        .boxed()
}

/// Random scripts of a family.
pub fn scripts(family: Family) -> BoxedStrategy<Script> {
    let clients = match family {
        Family::Budget | Family::Everything => 1..=3usize,
        _ => 1..=2,
    };
    let limit = match family {
        Family::Pace | Family::Cancel | Family::Everything => {
            proptest::option::weighted(0.8, (1..=5u64, 1..=3u64)).boxed()
        }
        _ => Just(None).boxed(),
    };
    // Mostly a server that answers at once; sometimes one that takes a
    // while, so that an answer comes after its attempt and after others.
    let latency = prop_oneof![
        2 => Just(0u64),
        1 => Just(30),
        1 => Just(250),
        1 => Just(1_100),
    ];
    (policy(family), clients, phases(family), limit, latency)
        .prop_flat_map(move |(policy, clients, phases, limit, latency)| {
            calls(family, clients).prop_map(move |calls| Script {
                policy,
                clients,
                calls,
                phases: phases.clone(),
                limit,
                latency: Duration::from_millis(latency),
            })
        })
        .boxed()
}

/// The policy of the named scripts: 3 attempts, a first retry of at most
/// 100 ms doubling up to 1 s, a budget of one retry a second over 10 s
/// plus 20 % of the requests, and seed 11.
pub const POLICY: ClientPolicy = ClientPolicy {
    max_attempts: 3,
    base: Duration::from_millis(100),
    cap: Duration::from_secs(1),
    budget: BudgetPolicy {
        ttl: Duration::from_secs(10),
        min_per_sec: 1,
        retry_percent: 20,
    },
    seed: 11,
};

/// A call of a named script: a GET to `a`, made at `ms` milliseconds.
pub fn get(ms: u64) -> Call {
    Call {
        at: Timestamp::from_millis(ms),
        client: 0,
        method: Method::GET,
        host: 'a',
        idempotency_key: false,
        answer_with: None,
        drop_at: None,
    }
}

/// The server during `[from, until)` ms on host `a`.
pub fn phase(from: u64, until: u64, reply: Reply) -> Phase {
    Phase {
        host: 'a',
        from: Timestamp::from_millis(from),
        until: Timestamp::from_millis(until),
        reply,
    }
}

/// A script of the named ones.
pub fn script(calls: Vec<Call>, phases: Vec<Phase>, limit: Option<(u64, u64)>) -> Script {
    Script {
        policy: POLICY,
        clients: 1,
        calls,
        phases,
        limit,
        latency: Duration::ZERO,
    }
}
