//! proptest generators of timelines that aim at the edges: timestamps on and one
//! nanosecond either side of window boundaries and of the instants a past request
//! expires, bursts at one instant, keys that differ only slightly (the empty key
//! among them), idle gaps from a few periods to the whole `u64` time line,
//! timestamps near `u64::MAX`, and late-delivered timestamps.

use proptest::prelude::*;

use crate::models::Algorithm;
use crate::time::Timestamp;
use crate::timeline::{Config, Request, Timeline};

/// Which kind of timeline to draw.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// Every key's timestamps are non-decreasing: the contract fixes every answer.
    InOrder,
    /// Some timestamps arrive late, as from concurrent callers.
    OutOfOrder,
    /// Periods up to `u64::MAX` ns and timestamps near `u64::MAX`, some late.
    Extreme,
    /// Limits in the hundreds to thousands, and bursts that reach them: of
    /// one key, and of several keys at once (thousands of requests), so that
    /// a limiter whose state is silently capped shows it.
    Long,
}

/// Each timeline draws its keys from one of these sets: keys that differ
/// only slightly, in every way bytes can, so that a limiter which merges two
/// distinct keys (by normalising them, keeping a lossy form of them, or
/// keeping state per bucket of a hash) answers one of them wrongly. Which
/// keys merge does not depend on the limiter's hasher: these differ in case,
/// padding, length with a shared prefix, bytes past a long shared prefix,
/// Unicode normal form and compatibility form. (Many distinct keys, more than
/// any fixed number of buckets, are `Lesson::keeps_many_keys_apart`'s, and
/// keys that collide under the usual hashes `Lesson::keeps_look_alike_keys_apart`'s.)
const KEY_SETS: [[&str; 3]; 14] = [
    ["a", "b", ""],
    // Case and padding.
    ["a", "A", "a "],
    [" a", "a", "a\t"],
    // One key a prefix of another; a NUL byte.
    ["user:1", "user:10", "user:1\0"],
    // Past a long shared prefix (a key truncated to 8, 16, 32 or 64 bytes).
    [
        "tenant-00042/user-0000000001/route-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/1",
        "tenant-00042/user-0000000001/route-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/2",
        "tenant-00042/user-0000000001/route-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/",
    ],
    // Precomposed, decomposed and plain: one letter to a reader, three keys.
    ["\u{e9}", "e\u{301}", "e"],
    // Fullwidth forms, which compatibility normalisation folds to ASCII.
    ["\u{ff41}", "a", "\u{ff21}"],
    // Case folding beyond ASCII.
    ["\u{df}", "ss", "SS"],
    ["\u{130}", "i", "I"],
    // The empty key and keys that trim or strip to it.
    ["", " ", "\0"],
    // The empty key beside names a limiter might give it.
    ["", "anonymous", "-"],
    // Keys ending in digits (with windows numbered past 9, `a1` in window 0
    // and `a` in window 10 share a name made without a separator).
    ["a1", "a", "a10"],
    // Byte 32 inside a three-byte character: a key cut there panics.
    [
        "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{20ac}\u{20ac}\u{20ac}1",
        "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{20ac}\u{20ac}\u{20ac}2",
        "\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{e9}\u{20ac}\u{20ac}\u{20ac}",
    ],
    // Byte 16 inside a four-byte character.
    ["tenant-0000042/\u{1f600}1", "tenant-0000042/\u{1f600}2", "tenant-0000042/\u{1f600}"],
];

/// How many keys one timeline uses.
const KEYS: usize = 3;

/// One step of a timeline: which key calls, and how the clock moves first.
#[derive(Clone, Copy, Debug)]
struct Step {
    key: usize,
    moves: Move,
}

#[derive(Clone, Copy, Debug)]
enum Move {
    /// Same instant as the previous request: bursts.
    Stay,
    /// Onto the next period boundary (a multiple of W), or one ns either side.
    Boundary(i8),
    /// Onto the instant an earlier request (`back` requests ago) leaves the
    /// interval, `t + W`, or one ns either side.
    Expiry(usize, i8),
    /// Onto `a/b` of the way through the current period (or the next, if that
    /// instant has passed), or one ns either side: where a sliding counter's
    /// weighted count ties with its limit.
    Fraction(u64, u64, i8),
    /// Forward by a little (under 2·W).
    Forward(u64),
    /// Forward by several whole periods and a bit: idle gaps. The number of
    /// periods goes up to 2^63, so that a count of periods or a timestamp kept
    /// in too narrow an integer, or compared with wrapping arithmetic, shows.
    Idle(u64, u64),
    /// Forward by 2^k nanoseconds, or one either side, whatever the period:
    /// an elapsed time kept in too narrow an integer.
    Jump(u32, i8),
    /// Backward by a little (out-of-order shapes only).
    Back(u64),
    /// A burst of the step's key at one instant, `limit · n / 1000` requests
    /// and one more (long shapes only).
    Burst(u64),
    /// Bursts of `keys` keys at one instant, round robin, each of
    /// `limit · n / 1000` requests and one more (long shapes only).
    Spread(usize, u64),
}

fn moves(shape: Shape) -> BoxedStrategy<Move> {
    let offset = -1i8..=1;
    let in_order = prop_oneof![
        4 => Just(Move::Stay),
        3 => offset.clone().prop_map(Move::Boundary),
        3 => (0usize..8, offset.clone()).prop_map(|(b, o)| Move::Expiry(b, o)),
        2 => (2u64..=6, 1u64..6, offset.clone()).prop_map(|(b, a, o)| Move::Fraction(a % b, b, o)),
        3 => (0u64..2_000).prop_map(Move::Forward),
        1 => (2u64..6, 0u64..1_000).prop_map(|(n, f)| Move::Idle(n, f)),
        1 => (0u32..64, offset.clone(), 0u64..1_000).prop_map(|(k, o, f)| {
            Move::Idle((1u64 << k).saturating_add_signed(i64::from(o)).max(1), f)
        }),
        1 => (0u32..64, offset).prop_map(|(k, o)| Move::Jump(k, o)),
    ];
    match shape {
        Shape::InOrder => in_order.boxed(),
        Shape::Long => prop_oneof![
            3 => in_order,
            2 => (500u64..=1_100).prop_map(Move::Burst),
            1 => (2usize..=8, 300u64..=1_050).prop_map(|(k, n)| Move::Spread(k, n)),
        ]
        .boxed(),
        Shape::OutOfOrder | Shape::Extreme => prop_oneof![
            6 => in_order,
            1 => (0u64..2_000).prop_map(Move::Back),
        ]
        .boxed(),
    }
}

fn steps(shape: Shape) -> impl Strategy<Value = Vec<Step>> {
    let key = prop_oneof![5 => Just(0usize), 3 => Just(1usize), 2 => Just(2usize)];
    // Long timelines are long through their bursts, not their steps.
    let steps = match shape {
        Shape::Long => 1..8,
        Shape::InOrder | Shape::OutOfOrder | Shape::Extreme => 1..40,
    };
    proptest::collection::vec(
        (key, moves(shape)).prop_map(|(key, moves)| Step { key, moves }),
        steps,
    )
}

fn configs(shape: Shape) -> BoxedStrategy<Config> {
    // Mostly small limits, so that timelines reach them; now and then one
    // that only 64-bit counting survives.
    let limit = match shape {
        Shape::Long => prop_oneof![
            3 => 100u64..=1_000,
            2 => 1_000u64..=3_000,
            1 => Just(4_097u64),
        ]
        .boxed(),
        Shape::InOrder | Shape::OutOfOrder | Shape::Extreme => prop_oneof![
            12 => 1u64..=3,
            4 => 4u64..=6,
            1 => Just((1u64 << 32) + 1),
            1 => Just(u64::MAX),
        ]
        .boxed(),
    };
    let period = match shape {
        Shape::InOrder | Shape::OutOfOrder | Shape::Long => prop_oneof![
            2 => Just(1u64),
            1 => Just(2u64),
            1 => Just(3u64),
            2 => Just(10u64),
            3 => Just(1_000u64),
            1 => Just(1_000_000_000u64),
            2 => 1u64..5_000,
            // Past 2^53 ns a float cannot hold every instant of the window.
            1 => Just((1u64 << 53) + 1),
            1 => Just(u64::MAX / 4),
        ]
        .boxed(),
        Shape::Extreme => prop_oneof![
            Just(1u64),
            Just(1_000u64),
            Just(u64::MAX / 4),
            Just(u64::MAX / 2),
            Just(u64::MAX / 2 + 1),
            Just(u64::MAX - 1),
            Just(u64::MAX),
        ]
        .boxed(),
    };
    (limit, period)
        .prop_map(|(limit, period)| Config::new(limit, period))
        .boxed()
}

fn starts(shape: Shape) -> BoxedStrategy<(u8, u64)> {
    match shape {
        // 0: the origin; 1: k·W; 2: anywhere in the first periods.
        Shape::InOrder | Shape::OutOfOrder | Shape::Long => (0u8..3, 0u64..50).boxed(),
        // 3: u64::MAX minus a little.
        Shape::Extreme => (Just(3u8), 0u64..5_000).boxed(),
    }
}

/// Timelines of the given shape for an algorithm. Forward moves are scaled to
/// the drawn period so that small and large windows see the same edges.
///
/// In a third of the timelines every key has a clock of its own: each key's
/// timestamps still only move forward, but one key can be far ahead of another,
/// as when keys are served by different callers.
pub fn timelines(algorithm: Algorithm, shape: Shape) -> BoxedStrategy<Timeline> {
    let own_clocks = prop_oneof![2 => Just(false), 1 => Just(true)];
    // Only configurations the algorithm accepts (a bucket's C·T must fit).
    let valid = configs(shape).prop_filter("a valid configuration", move |c| {
        algorithm.validate(c.limit, c.period).is_ok()
    });
    // The plain keys half the time; otherwise a set of keys that look alike.
    let key_set = prop_oneof![
        9 => Just(0usize),
        9 => 1..KEY_SETS.len(),
    ];
    (valid, starts(shape), key_set, steps(shape), own_clocks)
        .prop_map(move |(config, start, key_set, steps, own_clocks)| {
            build(config, start, key_set, &steps, own_clocks)
        })
        .boxed()
}

fn build(
    config: Config,
    (start_kind, start): (u8, u64),
    key_set: usize,
    steps: &[Step],
    own_clocks: bool,
) -> Timeline {
    let w = config.period_nanos();
    let scale = |n: u64| -> u64 {
        // `n` is in thousandths of a period.
        (u128::from(w) * u128::from(n) / 1_000).min(u128::from(u64::MAX)) as u64
    };
    let mut now: u64 = match start_kind {
        0 => 0,
        1 => w.saturating_mul(start),
        2 => scale(start.saturating_mul(100)),
        _ => u64::MAX - start,
    };
    let mut clocks = [now; KEYS];
    let mut burst_clock = 0u64;
    let mut requests: Vec<Request> = Vec::with_capacity(steps.len());
    for step in steps {
        if own_clocks {
            now = clocks[step.key];
        }
        now = match step.moves {
            Move::Stay => now,
            Move::Boundary(offset) => {
                let next = (u128::from(now) / u128::from(w) + 1) * u128::from(w);
                shift(next, offset)
                    .max(u128::from(now))
                    .min(u128::from(u64::MAX)) as u64
            }
            Move::Expiry(back, offset) => match requests.iter().rev().nth(back) {
                Some(earlier) => {
                    let at = u128::from(earlier.now.as_nanos()) + u128::from(w);
                    shift(at, offset)
                        .max(u128::from(now))
                        .min(u128::from(u64::MAX)) as u64
                }
                None => now,
            },
            Move::Fraction(a, b, offset) => {
                let (w128, now128) = (u128::from(w), u128::from(now));
                let start = now128 / w128 * w128;
                let mut at = shift(start + w128 * u128::from(a) / u128::from(b), offset);
                if at < now128 {
                    at = shift(start + w128 + w128 * u128::from(a) / u128::from(b), offset);
                }
                at.max(now128).min(u128::from(u64::MAX)) as u64
            }
            Move::Forward(n) => now.saturating_add(scale(n)),
            Move::Idle(periods, n) => now
                .saturating_add(w.saturating_mul(periods))
                .saturating_add(scale(n)),
            Move::Jump(k, offset) => {
                let gap = (1u64 << k).saturating_add_signed(i64::from(offset)).max(1);
                now.saturating_add(gap)
            }
            Move::Back(n) => now.saturating_sub(scale(n).max(1)),
            Move::Burst(n) | Move::Spread(_, n) => {
                let keys = match step.moves {
                    Move::Spread(k, _) => k as u64,
                    _ => 1,
                };
                let each = burst_size(config.limit, n).min(MOST_AT_ONCE / keys);
                let room = MOST_REQUESTS.saturating_sub(requests.len() as u64);
                // The burst keys keep one clock of their own, so that with
                // per-key clocks they are never sent late.
                let at = match step.moves {
                    Move::Spread(..) => now.max(burst_clock),
                    _ => now,
                };
                if matches!(step.moves, Move::Spread(..)) {
                    burst_clock = at;
                }
                for i in 0..(each * keys).min(room) {
                    let key = match step.moves {
                        Move::Spread(..) => format!("burst-{}", i % keys),
                        _ => KEY_SETS[key_set][step.key].to_string(),
                    };
                    requests.push(Request {
                        key,
                        now: Timestamp::from_nanos(at),
                    });
                }
                continue;
            }
        };
        clocks[step.key] = now;
        requests.push(Request {
            key: KEY_SETS[key_set][step.key].to_string(),
            now: Timestamp::from_nanos(now),
        });
    }
    Timeline { config, requests }
}

/// The most requests of one burst, over all its keys.
const MOST_AT_ONCE: u64 = 12_000;
/// The most requests of a long timeline.
const MOST_REQUESTS: u64 = 20_000;

/// A burst of `limit · n / 1000` requests and one more, up to a limit a bit
/// past 4_096 (a state capped at a round number shows).
fn burst_size(limit: u64, n: u64) -> u64 {
    (u128::from(limit) * u128::from(n) / 1_000 + 1).min(4_200) as u64
}

fn shift(at: u128, offset: i8) -> u128 {
    match offset {
        -1 => at.saturating_sub(1),
        1 => at + 1,
        _ => at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    fn sample(shape: Shape, n: usize) -> Vec<Timeline> {
        let mut runner = TestRunner::deterministic();
        let strategy = timelines(Algorithm::FixedWindow, shape);
        (0..n)
            .map(|_| strategy.new_tree(&mut runner).unwrap().current())
            .collect()
    }

    #[test]
    fn long_timelines_are_in_order_and_reach_their_limits() {
        let all = sample(Shape::Long, 40);
        assert!(all.iter().all(Timeline::in_order));
        assert!(all
            .iter()
            .any(|t| t.config.limit >= 1_000 && t.requests.len() as u64 > t.config.limit));
        assert!(all
            .iter()
            .any(|t| t.requests.iter().any(|r| r.key == "burst-3")));
    }

    #[test]
    fn in_order_timelines_reach_the_edges() {
        let all = sample(Shape::InOrder, 300);
        assert!(all.iter().all(Timeline::in_order));
        let on_edge = |d: i128| {
            all.iter().any(|t| {
                let w = i128::from(t.config.period_nanos());
                w > 2
                    && t.requests.iter().any(|r| {
                        (i128::from(r.now.as_nanos()) - d) % w == 0 && r.now.as_nanos() > 0
                    })
            })
        };
        assert!(on_edge(0) && on_edge(1) && on_edge(-1));
        let bursts = all
            .iter()
            .filter(|t| t.requests.windows(2).any(|p| p[0] == p[1]))
            .count();
        assert!(bursts > 100, "{bursts}");
        assert!(all
            .iter()
            .any(|t| t.requests.iter().any(|r| r.key.is_empty())));
        let keys_apart = all
            .iter()
            .filter(|t| t.requests.windows(2).any(|p| p[1].now < p[0].now))
            .count();
        assert!(keys_apart > 30, "{keys_apart}");
    }

    #[test]
    fn other_shapes_go_back_and_near_the_end_of_time() {
        assert!(sample(Shape::OutOfOrder, 200).iter().any(|t| !t.in_order()));
        let extreme = sample(Shape::Extreme, 200);
        assert!(extreme
            .iter()
            .any(|t| t.requests.iter().any(|r| r.now == Timestamp::MAX)));
        assert!(extreme.iter().any(|t| t.config.period_nanos() == u64::MAX));
        assert!(extreme.iter().any(|t| t.config.limit == u64::MAX));
    }
}
