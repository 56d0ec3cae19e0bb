//! Lesson 08's reference on a real redis-server, beside `redis-benchmark`
//! sending the very same EVALSHA to the same server: the ceiling of one
//! command per decision, with no client code around it.
//!
//! `cargo bench -p ratelimit-kata-bench --bench redis` starts a server of
//! its own on a free loopback port, measures decisions per second on one
//! connection (one caller) and with 16 concurrent callers (the reference
//! opens a connection per concurrent call; `redis-benchmark -c 16` keeps 16
//! clients), and prints a table. Every decision is an allowed one (a limit
//! no run reaches), on 1,000 keys taken in turn (redis-benchmark: at
//! random, `-r 1000`).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kata::redis::proxy::Proxy;
use kata::redis::server::RedisServer;
use kata::redis::{Clock, Rule, Settings};
use kata::{RateLimiter, Timestamp};
use ratelimit_kata_bench::lesson_08::RedisLimiter;

/// Decisions per measurement.
const CALLS: usize = 60_000;
const KEYS: usize = 1_000;
const CALLERS: usize = 16;

fn settings(url: &str) -> Settings {
    let mut s = Settings::new(url).expect("a valid URL");
    s.prefix = "bench:".into();
    s.timeout = Duration::from_secs(5);
    s
}

/// Decisions per second of `callers` threads sharing one limiter.
fn measure(limiter: &Arc<RedisLimiter>, keys: &Arc<Vec<String>>, callers: usize) -> f64 {
    let now = Timestamp::from_secs(1_000);
    let started = Instant::now();
    let threads: Vec<_> = (0..callers)
        .map(|c| {
            let (l, keys) = (limiter.clone(), keys.clone());
            std::thread::spawn(move || {
                for i in (c..CALLS).step_by(callers) {
                    let d = l.check(&keys[i % KEYS], now);
                    assert!(d.is_allowed(), "every decision of the benchmark is allowed");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a caller finishes");
    }
    CALLS as f64 / started.elapsed().as_secs_f64()
}

/// The EVALSHA the reference sends for one decision, read off a proxy.
fn command_of(server: &RedisServer, rule: Rule) -> Vec<String> {
    let proxy = Proxy::start(server.addr(), 1);
    let limiter = RedisLimiter::new(rule, settings(&proxy.url(0))).expect("a valid rule");
    assert!(limiter
        .check("bench-0", Timestamp::from_secs(1_000))
        .is_allowed());
    let log = proxy.log();
    let (_, evalsha) = log
        .iter()
        .rev()
        .find(|(_, c)| c.name() == "EVALSHA")
        .expect("the reference sends EVALSHA");
    evalsha
        .args
        .iter()
        .map(|a| String::from_utf8_lossy(a).replace("bench-0", "bench-__rand_int__"))
        .collect()
}

/// redis-benchmark's requests per second for `command` with `clients`.
fn redis_benchmark(server: &RedisServer, command: &[String], clients: usize) -> Option<f64> {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-n", &CALLS.to_string(), "-c", &clients.to_string()])
        .args(["-r", &KEYS.to_string(), "--csv"])
        .args(command)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("\"EVALSHA"))?;
    line.split("\",\"").nth(1)?.trim_matches('"').parse().ok()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let keys: Arc<Vec<String>> = Arc::new((0..KEYS).map(|i| format!("bench-{i}")).collect());
    let rules = [
        (
            "fixed window",
            Rule::FixedWindow {
                limit: 1 << 40,
                window: Duration::from_secs(3600),
            },
        ),
        (
            "GCRA",
            Rule::Gcra {
                capacity: 1 << 30,
                refill_every: Duration::from_nanos(1),
                clock: Clock::Passed,
            },
        ),
    ];
    println!("| rule | contender | 1 connection: decisions/s | {CALLERS} callers: decisions/s |");
    println!("|---|---|---|---|");
    for (name, rule) in rules {
        let limiter =
            Arc::new(RedisLimiter::new(rule, settings(&server.url())).expect("a valid rule"));
        // Warm: the script loaded, connections open.
        measure(&limiter, &keys, CALLERS);
        let one = measure(&limiter, &keys, 1);
        let many = measure(&limiter, &keys, CALLERS);
        println!("| {name} | 08 reference (`check`) | {one:.0} | {many:.0} |");
        let command = command_of(&server, rule);
        let ceiling = |c| {
            redis_benchmark(&server, &command, c)
                .map(|r| format!("{r:.0}"))
                .unwrap_or_else(|| "(redis-benchmark did not run)".into())
        };
        println!(
            "| {name} | redis-benchmark, the same EVALSHA | {} | {} |",
            ceiling(1),
            ceiling(CALLERS)
        );
    }
}
