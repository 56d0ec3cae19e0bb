//! The "three app servers" drawings: each with a limiter in memory, then
//! all three on one Redis.

use super::RedisLesson;
use crate::decision::Decision;
use crate::models::Algorithm;
use crate::redis_limiter::drive::RedisVariant;
use crate::redis_limiter::drive::{RuleKind, SERVERS};
use crate::redis_limiter::processes::servers;
use crate::snapshot::assert_snapshot;
use crate::timeline::{Config, Request, Timeline};

impl RedisLesson {
    /// Three app servers behind a round robin: each with a limiter in
    /// memory, then all three on one Redis. Per window, how many requests
    /// each arrangement admitted.
    pub fn three_servers_snapshot(&self, kind: RuleKind) {
        // Four a second either way: a window of a second, or a token every
        // quarter second.
        let (limit, period) = match kind {
            RuleKind::Gcra => (4, SECOND / 4),
            _ => (4, SECOND),
        };
        let timeline = three_servers_timeline(limit, period);
        let algorithm = kind.algorithm();
        let in_memory = round_robin_in_memory(algorithm, &timeline);
        let contract = crate::models::model_run(algorithm, &timeline);
        let run = |v: RedisVariant| -> Vec<Decision> {
            let mut d = servers(v, kind, limit, timeline.config.period)
                .unwrap_or_else(|e| panic!("new returned Err({e:?})"));
            timeline
                .requests
                .iter()
                .map(|r| d.check(&r.key, r.now))
                .collect()
        };
        let tested = run(self.subjects.tested());
        let reference = run(self.subjects.reference());
        let draw = |shared: &[Decision]| draw_three_servers(kind, &timeline, &in_memory, shared);
        let name = match kind {
            RuleKind::FixedWindow => "three_servers_fixed_window",
            RuleKind::SlidingLog => "three_servers_sliding_log",
            RuleKind::Gcra => "three_servers_gcra",
            RuleKind::TokenBucket => "three_servers_token_bucket",
        };
        assert_snapshot(
            (self.facts.root, self.facts.number, name),
            &format!(
                "Three app servers behind a round robin, 16 requests a second: in-memory {}s against one {} on Redis",
                kind.name(),
                kind.name()
            ),
            [&draw(&tested), &draw(&reference), &draw(&contract)],
            &self.whose(),
        );
    }
}

/// 16 requests a second for three seconds, of one key: the three app
/// servers take them in turn.
const SECOND: u64 = 1_000_000_000;

/// More than the three app servers' limits together.
const PER_SECOND: u64 = 16;

fn three_servers_timeline(limit: u64, period: u64) -> Timeline {
    let requests = (0..3 * PER_SECOND)
        .map(|i| {
            Request::new(
                "k",
                (i / PER_SECOND) * SECOND + (i % PER_SECOND) * (SECOND / PER_SECOND),
            )
        })
        .collect();
    Timeline {
        config: Config::new(limit, period),
        requests,
    }
}

/// Each app server with a model of its own, request `i` on server `i % 3`.
fn round_robin_in_memory(algorithm: Algorithm, t: &Timeline) -> Vec<Decision> {
    let mut models: Vec<_> = (0..SERVERS).map(|_| algorithm.model(t.config)).collect();
    t.requests
        .iter()
        .enumerate()
        .map(|(i, r)| models[i % SERVERS].decide(&r.key, r.now.as_nanos()))
        .collect()
}

fn draw_three_servers(
    kind: RuleKind,
    t: &Timeline,
    in_memory: &[Decision],
    shared: &[Decision],
) -> String {
    let period = SECOND;
    let windows = t
        .requests
        .last()
        .map(|r| r.now.as_nanos() / period + 1)
        .unwrap_or(0);
    let rule = match kind {
        RuleKind::Gcra => format!(
            "a GCRA of capacity {}, a token every {} ms",
            t.config.limit,
            t.config.period.as_millis()
        ),
        _ => format!("a {} of {} a second", kind.name(), t.config.limit),
    };
    let mut out = format!(
        "{rule}; {PER_SECOND} requests a second for one key, app servers 1, 2, 3 in turn\n\n"
    );
    out.push_str(&format!(
        "{:<10} {:<32} {}\n",
        "second", "3 limiters in memory", "3 limiters on one Redis"
    ));
    for w in 0..windows {
        let count = |ds: &[Decision]| {
            t.requests
                .iter()
                .zip(ds)
                .filter(|(r, d)| r.now.as_nanos() / period == w && d.is_allowed())
                .count()
        };
        let width = PER_SECOND as usize;
        let bar = |n: usize| {
            format!(
                "{}{} {n:>2}",
                "#".repeat(n),
                ".".repeat(width - n.min(width))
            )
        };
        out.push_str(&format!(
            "{:<10} {:<32} {}\n",
            format!("[{w}s, {}s)", w + 1),
            bar(count(in_memory)),
            bar(count(shared))
        ));
    }
    let total = |ds: &[Decision]| ds.iter().filter(|d| d.is_allowed()).count();
    out.push_str(&format!(
        "\nadmitted in all: {} in memory, {} on Redis, of {}",
        total(in_memory),
        total(shared),
        crate::text::count(t.requests.len(), "request")
    ));
    out
}
