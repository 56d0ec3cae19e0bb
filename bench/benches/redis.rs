//! Lessons 08 and 10's references on a real redis-server, beside
//! `redis-benchmark` sending the very same EVALSHA to the same server: the
//! ceiling of one command per decision, with no client code around it.
//!
//! `cargo bench -p ratelimit-kata-bench --bench redis` starts a server of
//! its own on a free loopback port and measures, for 1, 16 and 64
//! concurrent callers, decisions per second and each decision's latency
//! (p50, p99): lesson 08's blocking `check` (N threads, each call on a
//! connection of its own) and lesson 10's async `check` (N tasks on a
//! current-thread tokio runtime, one multiplexed connection). The ceilings:
//! `redis-benchmark -c N` (N clients), and `-c 1 -P N` (N commands in flight
//! on one connection, as a multiplexed connection keeps them). Every
//! decision is an allowed one (a limit no run reaches), on 1,000 keys taken
//! in turn (redis-benchmark: at random, `-r 1000`).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kata::async_redis::Settings as AsyncSettings;
use kata::infra::proxy::Proxy;
use kata::infra::server::RedisServer;
use kata::redis::{Clock, Rule, Settings};
use kata::{AsyncRateLimiter, RateLimiter, Timestamp};
use ratelimit_kata_bench::lesson_08::RedisLimiter;
use ratelimit_kata_bench::lesson_10::AsyncRedisLimiter;

/// Decisions per measurement.
const CALLS: usize = 60_000;
const KEYS: usize = 1_000;
/// The numbers of concurrent callers, each a column group of the table.
const CALLERS: [usize; 3] = [1, 16, 64];

fn settings(url: &str) -> Settings {
    let mut s = Settings::new(url).expect("a valid URL");
    s.prefix = "bench:".into();
    s.timeout = Duration::from_secs(5);
    s
}

/// Decisions per second, and every decision's latency.
struct Measured {
    per_second: f64,
    latencies: Vec<Duration>,
}

impl Measured {
    fn new(started: Instant, mut latencies: Vec<Duration>) -> Measured {
        let per_second = CALLS as f64 / started.elapsed().as_secs_f64();
        latencies.sort_unstable();
        Measured {
            per_second,
            latencies,
        }
    }

    fn percentile(&self, p: usize) -> Duration {
        self.latencies[(self.latencies.len() - 1) * p / 100]
    }

    /// `decisions/s | p50 | p99`, for a table's row.
    fn cells(&self) -> String {
        format!(
            "{:.0} | {:.0} µs | {:.0} µs",
            self.per_second,
            self.percentile(50).as_secs_f64() * 1e6,
            self.percentile(99).as_secs_f64() * 1e6
        )
    }
}

/// `callers` threads sharing one blocking limiter.
fn blocking(limiter: &Arc<RedisLimiter>, keys: &Arc<Vec<String>>, callers: usize) -> Measured {
    let now = Timestamp::from_secs(1_000);
    let started = Instant::now();
    let threads: Vec<_> = (0..callers)
        .map(|c| {
            let (l, keys) = (limiter.clone(), keys.clone());
            std::thread::spawn(move || {
                let mut took = Vec::with_capacity(CALLS / callers + 1);
                for i in (c..CALLS).step_by(callers) {
                    let t = Instant::now();
                    let d = l.check(&keys[i % KEYS], now);
                    took.push(t.elapsed());
                    assert!(d.is_allowed(), "every decision of the benchmark is allowed");
                }
                took
            })
        })
        .collect();
    let latencies = threads
        .into_iter()
        .flat_map(|t| t.join().expect("a caller finishes"))
        .collect();
    Measured::new(started, latencies)
}

/// `callers` tasks sharing one async limiter, on `runtime`.
fn concurrent(
    runtime: &tokio::runtime::Runtime,
    limiter: &Arc<AsyncRedisLimiter>,
    keys: &Arc<Vec<String>>,
    callers: usize,
) -> Measured {
    let now = Timestamp::from_secs(1_000);
    runtime.block_on(async {
        let started = Instant::now();
        let tasks: Vec<_> = (0..callers)
            .map(|c| {
                let (l, keys) = (limiter.clone(), keys.clone());
                tokio::spawn(async move {
                    let mut took = Vec::with_capacity(CALLS / callers + 1);
                    for i in (c..CALLS).step_by(callers) {
                        let t = Instant::now();
                        let d = l.check(&keys[i % KEYS], now).await;
                        took.push(t.elapsed());
                        assert!(d.is_allowed(), "every decision of the benchmark is allowed");
                    }
                    took
                })
            })
            .collect();
        let mut latencies = Vec::with_capacity(CALLS);
        for t in tasks {
            latencies.extend(t.await.expect("a caller finishes"));
        }
        Measured::new(started, latencies)
    })
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

/// redis-benchmark's requests per second for `command` with `clients`,
/// each keeping `pipeline` commands in flight.
fn redis_benchmark(
    server: &RedisServer,
    command: &[String],
    clients: usize,
    pipeline: usize,
) -> Option<f64> {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &server.port().to_string()])
        .args(["-n", &CALLS.to_string(), "-c", &clients.to_string()])
        .args(["-P", &pipeline.to_string()])
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    print!("| rule | contender |");
    for n in CALLERS {
        let callers = if n == 1 { "caller" } else { "callers" };
        print!(" {n} {callers}: decisions/s | p50 | p99 |");
    }
    println!("\n|---|---|{}", "---|---|---|".repeat(CALLERS.len()));
    let most = CALLERS[CALLERS.len() - 1];
    for (name, rule) in rules {
        let limiter =
            Arc::new(RedisLimiter::new(rule, settings(&server.url())).expect("a valid rule"));
        // Warm: the script loaded, connections open.
        blocking(&limiter, &keys, most);
        let cells: Vec<String> = CALLERS
            .iter()
            .map(|&n| blocking(&limiter, &keys, n).cells())
            .collect();
        println!(
            "| {name} | 08 reference, blocking (`check`, a connection per caller) | {} |",
            cells.join(" | ")
        );
        let limiter = {
            let _inside = runtime.enter();
            let settings = AsyncSettings::from(settings(&server.url()));
            Arc::new(AsyncRedisLimiter::new(rule, settings).expect("a valid rule"))
        };
        concurrent(&runtime, &limiter, &keys, most);
        let cells: Vec<String> = CALLERS
            .iter()
            .map(|&n| concurrent(&runtime, &limiter, &keys, n).cells())
            .collect();
        println!(
            "| {name} | 10 reference, async (`check().await`, one multiplexed connection) | {} |",
            cells.join(" | ")
        );
        let command = command_of(&server, rule);
        let ceiling = |clients, pipeline| {
            redis_benchmark(&server, &command, clients, pipeline)
                .map(|r| format!("{r:.0} | – | –"))
                .unwrap_or_else(|| "(redis-benchmark did not run) | – | –".into())
        };
        let cells: Vec<String> = CALLERS.iter().map(|&n| ceiling(n, 1)).collect();
        println!(
            "| {name} | redis-benchmark, the same EVALSHA (`-c N`, N clients) | {} |",
            cells.join(" | ")
        );
        let cells: Vec<String> = CALLERS
            .iter()
            .map(|&n| {
                if n == 1 {
                    "– | – | –".to_string()
                } else {
                    ceiling(1, n)
                }
            })
            .collect();
        println!(
            "| {name} | redis-benchmark, pipelined on one connection (`-c 1 -P N`) | {} |",
            cells.join(" | ")
        );
    }
}
