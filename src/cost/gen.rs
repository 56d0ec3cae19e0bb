//! Scripts of requests for lesson 13: limits, and requests with random
//! keys, costs and instants, some of them peeks. Costs of 1, of a bucket's
//! whole capacity, one past it, 0 and `u64::MAX`; keys that differ only in
//! case, and the wrong number of them; bursts at one instant, waits of a
//! fraction of a token, and idle gaps of many buckets; capacities from 1
//! to `u64::MAX` and refill intervals from 1 ns to a second and a quarter
//! of `u64::MAX` ns. And the named
//! scripts the drawings show.

use std::time::Duration;

use proptest::prelude::*;

use super::model::Model;
use super::{Limit, Timestamp};

/// One request of a script.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Req {
    /// One key per limit (the checks give a wrong number of them too).
    pub keys: Vec<String>,
    pub cost: u64,
    /// Nanoseconds; never earlier than the request before it.
    pub at: u64,
    /// A peek, which must answer as a check would and charge nothing.
    pub peek: bool,
}

impl Req {
    pub fn keys(&self) -> Vec<&str> {
        self.keys.iter().map(String::as_str).collect()
    }

    pub fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.at)
    }

    /// `check(["alice", "acme"], 2) at 1_000ns`.
    pub fn describe(&self, single: bool) -> String {
        let at = super::when(u128::from(self.at));
        let verb = if self.peek { "peek" } else { "check" };
        if single && self.keys.len() == 1 {
            return format!("{verb}_n({:?}, {}) at {at}", self.keys[0], self.cost);
        }
        format!("{verb}({:?}, {}) at {at}", self.keys, self.cost)
    }
}

/// Which of the learner's types a script is for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Shape {
    /// One bucket, one key per request: `TokenBucket` and `Gcra`.
    Single,
    /// Several limits: `Limits`.
    Several,
    /// Several limits on Redis, whose Lua numbers are exact below 2⁵³: every
    /// instant and every bucket's time to fill stay at most 2⁵⁰.
    Redis,
}

/// Limits, and requests in the order they come.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Script {
    /// For a single bucket (`TokenBucket`, `Gcra`), asked with `check_n`.
    pub single: bool,
    /// For `RedisLimits` (its description starts `on redis: `).
    pub on_redis: bool,
    pub limits: Vec<Limit>,
    pub requests: Vec<Req>,
}

impl Script {
    /// `limits user: 2 tokens, one every 1_000ns; …, then check(…) at 0ns; …`.
    pub fn describe(&self) -> String {
        let single = self.single;
        let limits: Vec<String> = self.limits.iter().map(Limit::describe).collect();
        let requests: Vec<String> = self.requests.iter().map(|r| r.describe(single)).collect();
        format!(
            "{}limits {}, then {}",
            if self.on_redis { "on redis: " } else { "" },
            limits.join("; "),
            if requests.is_empty() {
                "no request".to_string()
            } else {
                requests.join("; ")
            }
        )
    }

    /// A script as [`Script::describe`] prints it (and as a failure
    /// prints its smallest script), or a sentence saying what is wrong.
    pub fn parse(text: &str) -> Result<Script, String> {
        let text = text.trim();
        let (on_redis, text) = match text.strip_prefix("on redis: ") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let rest = text
            .strip_prefix("limits ")
            .ok_or("a script starts with `limits `")?;
        let (limits, requests) = rest
            .split_once(", then ")
            .ok_or("a script's limits end with `, then `")?;
        let limits = limits
            .split("; ")
            .map(parse_limit)
            .collect::<Result<Vec<_>, _>>()?;
        let requests: Vec<(bool, Req)> = match requests {
            "no request" => Vec::new(),
            r => r.split("; ").map(parse_req).collect::<Result<_, _>>()?,
        };
        let single = requests.first().is_none_or(|(s, _)| *s) && limits.len() == 1;
        if let Err(e) = Model::new(&limits) {
            return Err(format!("its limits are refused: {e}"));
        }
        if requests.windows(2).any(|w| w[1].1.at < w[0].1.at) {
            return Err("its instants must never go back".into());
        }
        Ok(Script {
            single,
            on_redis,
            limits,
            requests: requests.into_iter().map(|(_, r)| r).collect(),
        })
    }

    /// The contract's model of its limits.
    pub fn model(&self) -> Model {
        Model::new(&self.limits).expect("the checks' limits are valid")
    }
}

/// `150ms` or `1_500ns`, as [`super::when`] writes them.
fn parse_when(text: &str) -> Result<u64, String> {
    let digits = |d: &str| {
        d.replace('_', "")
            .parse::<u64>()
            .map_err(|e| format!("{text:?}: {e}"))
    };
    match (text.strip_suffix("ms"), text.strip_suffix("ns")) {
        (Some(ms), _) => digits(ms)?
            .checked_mul(1_000_000)
            .ok_or_else(|| format!("{text:?} is past u64 nanoseconds")),
        (_, Some(ns)) => digits(ns),
        _ => Err(format!("{text:?} is neither `…ms` nor `…ns`")),
    }
}

/// `user: 2 tokens, one every 1_000ns`, as [`Limit::describe`] writes it.
fn parse_limit(text: &str) -> Result<Limit, String> {
    let bad = || format!("{text:?} is not `name: N tokens, one every T`");
    let (name, rest) = text.split_once(": ").ok_or_else(bad)?;
    let (count, every) = rest.split_once(", one every ").ok_or_else(bad)?;
    let count = count.split(' ').next().ok_or_else(bad)?;
    let capacity = count.parse::<u64>().map_err(|_| bad())?;
    let name: &'static str = Box::leak(name.to_string().into_boxed_str());
    Ok(Limit::new(
        name,
        capacity,
        Duration::from_nanos(parse_when(every)?),
    ))
}

/// `check_n("a", 2) at 0ns` or `peek(["alice", "acme"], 1) at 5ms`, and
/// whether it is a single bucket's.
fn parse_req(text: &str) -> Result<(bool, Req), String> {
    let bad = || format!("{text:?} is not `check(keys, cost) at T` or `check_n(key, cost) at T`");
    let (call, at) = text.rsplit_once(") at ").ok_or_else(bad)?;
    let (verb, args) = call.split_once('(').ok_or_else(bad)?;
    let (keys, cost) = args.rsplit_once(", ").ok_or_else(bad)?;
    let cost = cost.parse::<u64>().map_err(|_| bad())?;
    let unquote = |k: &str| k.trim().trim_matches('"').to_string();
    let (single, peek) = match verb {
        "check_n" => (true, false),
        "peek_n" => (true, true),
        "check" => (false, false),
        "peek" => (false, true),
        _ => return Err(bad()),
    };
    let keys = if single {
        vec![unquote(keys)]
    } else {
        let inner = keys
            .strip_prefix('[')
            .and_then(|k| k.strip_suffix(']'))
            .ok_or_else(bad)?;
        match inner.trim() {
            "" => Vec::new(),
            inner => inner.split(", ").map(unquote).collect(),
        }
    };
    let at = parse_when(at)?;
    Ok((
        single,
        Req {
            keys,
            cost,
            at,
            peek,
        },
    ))
}

const NAMES: [&str; 3] = ["user", "org", "global"];
/// Each limit's keys: one that differs from another only in case, and one
/// spelled as another limit's key (`alice` as a user and as an org), which
/// must still be a bucket of its own.
const KEYS: [&[&str]; 3] = [
    &["alice", "bob", "Alice"],
    &["acme", "initech", "alice"],
    &["all", "acme"],
];

/// The latest instant of a script of this shape whose buckets take
/// `horizon` ns to fill: lesson 05's exact range (`now + C·T` fits in
/// u64), or Lua's.
fn latest(shape: Shape, horizon: u128) -> u64 {
    match shape {
        Shape::Redis => 1 << 50,
        _ => u64::try_from(u128::from(u64::MAX) - horizon).unwrap_or(0),
    }
}

fn period(shape: Shape) -> BoxedStrategy<u64> {
    let common = prop_oneof![
        3 => Just(1_000u64),
        2 => Just(1u64),
        1 => Just(3u64),
        1 => Just(7u64),
        1 => Just(1_000_000_000u64),
        2 => 1..=2_000u64,
    ];
    match shape {
        Shape::Redis => common.boxed(),
        _ => prop_oneof![9 => common, 1 => Just(u64::MAX / 4)].boxed(),
    }
}

fn capacity() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 1..=6u64, 2 => 1..=40u64, 1 => Just(900u64)]
}

fn limit(shape: Shape, name: &'static str) -> BoxedStrategy<Limit> {
    let made = (capacity(), period(shape)).prop_map(move |(c, t)| {
        // A capacity times interval past u64 is refused: keep what fits.
        let c = c.min(u64::MAX / t).max(1);
        Limit::new(name, c, Duration::from_nanos(t))
    });
    match shape {
        // The largest buckets: u64::MAX tokens of 1 ns, and near it.
        Shape::Single => prop_oneof![
            12 => made,
            1 => Just(Limit::new(name, u64::MAX, Duration::from_nanos(1))),
            1 => Just(Limit::new(name, u64::MAX / 1_000, Duration::from_nanos(1_000))),
        ]
        .boxed(),
        _ => made.boxed(),
    }
}

fn limits(shape: Shape) -> BoxedStrategy<Vec<Limit>> {
    match shape {
        Shape::Single => limit(shape, "bucket").prop_map(|l| vec![l]).boxed(),
        // Now and then two limits of one name on the same keys (a burst limit
        // and a per-minute limit, both per user): each is still its own.
        _ => (1..=3usize, proptest::bool::weighted(0.2))
            .prop_flat_map(move |(n, alike)| {
                (0..n)
                    .map(|i| limit(shape, if alike { NAMES[0] } else { NAMES[i] }))
                    .collect::<Vec<_>>()
            })
            .boxed(),
    }
}

/// Keys for `limits`, each from its limit's pool (by the limit's name).
fn keys(shape: Shape, limits: &[Limit]) -> BoxedStrategy<Vec<String>> {
    let n = limits.len();
    let names: Vec<&'static str> = limits.iter().map(|l| l.name).collect();
    let pool = move |i: usize| -> BoxedStrategy<String> {
        let from: &'static [&'static str] = match shape {
            Shape::Single => &["a", "b", "A"],
            // The key one too many takes the last pool.
            _ => {
                KEYS[names
                    .get(i)
                    .and_then(|m| NAMES.iter().position(|n| n == m))
                    .unwrap_or(2)]
            }
        };
        proptest::sample::select(from)
            .prop_map(str::to_string)
            .boxed()
    };
    let right: Vec<BoxedStrategy<String>> = (0..n).map(&pool).collect();
    match shape {
        Shape::Single => right.boxed(),
        // One key too few or too many, now and then.
        _ => prop_oneof![
            12 => right,
            1 => (0..n).map(&pool).collect::<Vec<_>>().prop_map(|mut k| { k.pop(); k }),
            1 => (0..=n).map(&pool).collect::<Vec<_>>(),
        ]
        .boxed(),
    }
}

fn cost(limits: &[Limit]) -> BoxedStrategy<u64> {
    let least = limits.iter().map(|l| l.capacity).min().unwrap_or(1);
    let most = limits.iter().map(|l| l.capacity).max().unwrap_or(1);
    let caps: Vec<u64> = limits.iter().map(|l| l.capacity).collect();
    prop_oneof![
        6 => Just(1u64),
        6 => 1..=least.min(12),
        2 => Just(least),
        2 => proptest::sample::select(caps.clone()),
        1 => proptest::sample::select(caps).prop_map(|c| c.saturating_add(1)),
        1 => 1..=most.saturating_mul(2).min(1 << 40),
        1 => Just(0u64),
        1 => Just(u64::MAX),
    ]
    .boxed()
}

fn gap(limits: &[Limit]) -> BoxedStrategy<u64> {
    let t = limits
        .iter()
        .map(|l| l.refill_every.as_nanos() as u64)
        .min()
        .unwrap_or(1);
    let fill = horizon(limits).min(1 << 45) as u64;
    prop_oneof![
        5 => Just(0u64),
        2 => Just(1u64),
        3 => 0..=t.saturating_mul(2),
        2 => 0..=fill.max(1),
        1 => 0..=fill.saturating_mul(3).max(1),
        1 => 0..=(1u64 << 45),
    ]
    .boxed()
}

/// The time the largest bucket takes to fill from empty.
fn horizon(limits: &[Limit]) -> u128 {
    limits
        .iter()
        .map(|l| u128::from(l.capacity) * l.refill_every.as_nanos())
        .max()
        .unwrap_or(0)
}

/// Random scripts of `shape`: up to 24 requests, one in four a peek.
pub fn script(shape: Shape) -> impl Strategy<Value = Script> {
    limits(shape)
        .prop_flat_map(move |limits| {
            let request = (
                keys(shape, &limits),
                cost(&limits),
                gap(&limits),
                proptest::bool::weighted(0.25),
            );
            let last = latest(shape, horizon(&limits));
            let start = prop_oneof![
                4 => Just(0u64),
                2 => 0..=last.min(1 << 40),
                1 => Just(last),
            ];
            (
                Just(limits),
                start,
                proptest::collection::vec(request, 1..=24),
            )
        })
        .prop_map(move |(limits, start, requests)| {
            let last = latest(shape, horizon(&limits));
            let mut at = start.min(last);
            let requests = requests
                .into_iter()
                .map(|(keys, cost, gap, peek)| {
                    at = at.saturating_add(gap).min(last);
                    Req {
                        keys,
                        cost,
                        at,
                        peek,
                    }
                })
                .collect();
            Script {
                single: shape == Shape::Single,
                on_redis: shape == Shape::Redis,
                limits,
                requests,
            }
        })
}

/// A script the drawings show, by name.
pub struct Named {
    pub name: &'static str,
    /// What it shows, as the snapshot's description says.
    pub what: &'static str,
    /// For the single buckets (`TokenBucket` and `Gcra`, which must draw it
    /// alike), else for `Limits`.
    pub single: bool,
    pub limits: &'static [Limit],
    /// `(keys, cost, at in ms, peek)`.
    pub requests: &'static [(&'static [&'static str], u64, u64, bool)],
}

impl Named {
    pub fn script(&self) -> Script {
        Script {
            single: self.single,
            on_redis: false,
            limits: self.limits.to_vec(),
            requests: self
                .requests
                .iter()
                .map(|(keys, cost, ms, peek)| Req {
                    keys: keys.iter().map(|k| k.to_string()).collect(),
                    cost: *cost,
                    at: ms * 1_000_000,
                    peek: *peek,
                })
                .collect(),
        }
    }
}

const SECOND: Duration = Duration::from_secs(1);

const POINTS: &[Limit] = &[Limit::new("points", 10, Duration::from_millis(100))];
const THREE: &[Limit] = &[
    Limit::new("user", 2, SECOND),
    Limit::new("org", 5, Duration::from_millis(500)),
    Limit::new("global", 8, Duration::from_millis(250)),
];
const TWO: &[Limit] = &[
    Limit::new("user", 4, Duration::from_millis(100)),
    Limit::new("global", 6, Duration::from_millis(200)),
];

const AA: &[&str] = &["alice", "acme", "all"];
const BA: &[&str] = &["bob", "acme", "all"];
const CI: &[&str] = &["carol", "initech", "all"];

/// The scripts the snapshots draw (`cargo run -- compare 13 NAME`).
pub const SNAPSHOTS: &[Named] = &[
    Named {
        name: "first_look",
        what: "a bucket of 10 points, one more every 100ms: a read costs 1, a write 5",
        single: true,
        limits: POINTS,
        requests: &[
            (&["k"], 1, 0, false),
            (&["k"], 5, 0, false),
            (&["k"], 5, 0, false),
            (&["k"], 5, 100, true),
            (&["k"], 5, 100, false),
            (&["k"], 1, 150, false),
            (&["k"], 11, 150, false),
            (&["k"], 10, 1_150, false),
        ],
    },
    Named {
        name: "all_or_nothing",
        what: "per user, per org and global: a denial by one limit charges none of the others",
        single: false,
        limits: THREE,
        requests: &[
            (AA, 2, 0, false),
            (AA, 1, 0, false),
            (BA, 2, 0, false),
            (CI, 2, 0, false),
            (BA, 1, 0, false),
            (CI, 1, 250, false),
            (AA, 1, 1_000, false),
        ],
    },
    Named {
        name: "the_longest_wait",
        what: "two limits deny, the second for longer: the request waits for the longer, \
               and then both admit it",
        single: false,
        limits: TWO,
        requests: &[
            (&["alice", "all"], 4, 0, false),
            (&["bob", "all"], 2, 0, false),
            (&["alice", "all"], 3, 0, false),
            (&["alice", "all"], 3, 599, false),
            (&["alice", "all"], 3, 600, false),
        ],
    },
    Named {
        name: "peek_then_check",
        what: "a peek answers as the check would, and charges nothing",
        single: true,
        limits: POINTS,
        requests: &[
            (&["k"], 8, 0, true),
            (&["k"], 8, 0, true),
            (&["k"], 8, 0, false),
            (&["k"], 3, 0, true),
            (&["k"], 3, 100, true),
            (&["k"], 3, 100, false),
        ],
    },
    Named {
        name: "errors_before_charging",
        what: "a cost of 0, too many keys, and a cost above a capacity: errors at once",
        single: false,
        limits: TWO,
        requests: &[
            (&["alice", "all"], 0, 0, false),
            (&["alice"], 1, 0, false),
            (&["alice", "all"], 5, 0, false),
            (&["alice", "all"], 4, 0, false),
            (&["alice", "all"], 7, 1, false),
        ],
    },
];

/// The named script `name` (one of [`SNAPSHOTS`]).
pub fn named(name: &str) -> &'static Named {
    SNAPSHOTS
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no script is named {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    /// A script reads back as it was printed.
    #[test]
    fn a_printed_script_reads_back() {
        let mut runner = TestRunner::deterministic();
        for shape in [Shape::Single, Shape::Several, Shape::Redis] {
            for _ in 0..200 {
                let s = script(shape).new_tree(&mut runner).unwrap().current();
                assert_eq!(
                    Script::parse(&s.describe()).as_ref(),
                    Ok(&s),
                    "{}",
                    s.describe()
                );
            }
        }
        for named in SNAPSHOTS {
            let s = named.script();
            assert_eq!(Script::parse(&s.describe()), Ok(s));
        }
        assert!(Script::parse("limits nothing").is_err());
        assert!(Script::parse("limits a: 0 tokens, one every 1ns, then no request").is_err());
    }

    /// Scripts stay where the contract's answers are exact, and reach the
    /// families they are for.
    #[test]
    fn scripts_reach_what_they_are_for() {
        let mut runner = TestRunner::deterministic();
        let (mut above, mut zero, mut wrong, mut peeks, mut full) = (0, 0, 0, 0, 0);
        for shape in [Shape::Single, Shape::Several, Shape::Redis] {
            for _ in 0..300 {
                let s = script(shape).new_tree(&mut runner).unwrap().current();
                let h = horizon(&s.limits);
                let mut m = s.model();
                for r in &s.requests {
                    assert!(u128::from(r.at) + h <= u128::from(u64::MAX));
                    if shape == Shape::Redis {
                        assert!(r.at <= 1 << 50 && h < 1 << 50);
                    }
                    peeks += usize::from(r.peek);
                    match m.answer(&r.keys(), r.cost, r.at, r.peek) {
                        Err(super::super::CostError::AboveCapacity { .. }) => above += 1,
                        Err(super::super::CostError::ZeroCost) => zero += 1,
                        Err(super::super::CostError::WrongKeys { .. }) => wrong += 1,
                        Ok(crate::decision::Decision::Allowed { remaining: 0 }) => full += 1,
                        _ => {}
                    }
                }
            }
        }
        assert!(
            above > 100 && zero > 50 && wrong > 50 && peeks > 1000 && full > 200,
            "{above} {zero} {wrong} {peeks} {full}"
        );
    }
}
