//! Lesson 09: a flood of 1,000,000 distinct keys, a new one every 50 ns
//! (20,000 per millisecond) with ten steady keys among them, through
//! limiters of 2 requests per ms per key:
//!
//! - lesson 09's reference, `max_keys = 10_000`, overflow `Deny`, and its
//!   going-further version (`solutions/lesson_09_further.rs`), the same;
//! - governor 0.10's keyed limiter on its manual clock (`FakeRelativeClock`,
//!   moved on 50 ns per request), `retain_recent()` every 10,000 requests,
//!   as governor's documentation suggests (on a timer);
//! - the same governor never cleaned.
//!
//! For each: ns per decision over the whole flood (the median of three
//! runs), the most keys held at any moment it was looked at (every 10,000
//! requests; lesson 09's after every request), and the bytes held at the
//! end, counted by this binary's allocator, per key held.
//!
//! `cargo bench -p ratelimit-kata-bench --bench memory`

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use kata::memory::{Bounds, Overflow, Rule};
use kata::{RateLimiter, Timestamp};
use ratelimit_kata_bench::{lesson_09, lesson_09_further};

/// The harness's counting allocator: the bytes held at any moment.
#[global_allocator]
static ALLOCATOR: kata::memory::Counting = kata::memory::Counting;

const FLOOD: usize = 1_000_000;
const MAX_KEYS: usize = 10_000;
const STEP: u64 = 50;

/// The flood's keys, made before any run so that making them is not timed.
fn keys() -> Vec<String> {
    let total = FLOOD + FLOOD / 99;
    (0..total)
        .map(|i| {
            if i % 100 == 0 {
                format!("steady-{}", i / 100 % 10)
            } else {
                format!("flood-{i:07}")
            }
        })
        .collect()
}

struct Outcome {
    ns_per_decision: f64,
    most_keys: usize,
    bytes: usize,
    keys_at_end: usize,
    allowed: usize,
}

trait Flooded {
    // `&String`: governor's keyed limiter takes `&K` with `K = String`.
    #[allow(clippy::ptr_arg)]
    fn decide(&mut self, key: &String, now: u64) -> bool;
    /// Called every 10,000 requests; returns the keys held.
    fn every_10k(&mut self) -> usize;
    fn keys(&self) -> usize;
}

/// A lesson 09 limiter, with the way to ask it how many keys it holds.
struct Bounded<L>(L, fn(&L) -> usize);

impl<L: RateLimiter> Flooded for Bounded<L> {
    fn decide(&mut self, key: &String, now: u64) -> bool {
        self.0.check(key, Timestamp::from_nanos(now)).is_allowed()
    }
    fn every_10k(&mut self) -> usize {
        (self.1)(&self.0)
    }
    fn keys(&self) -> usize {
        (self.1)(&self.0)
    }
}

type FakeGovernor = governor::RateLimiter<
    String,
    governor::state::keyed::DefaultKeyedStateStore<String>,
    governor::clock::FakeRelativeClock,
    governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
>;

struct Governor {
    limiter: FakeGovernor,
    clean: bool,
}

impl Flooded for Governor {
    fn decide(&mut self, key: &String, _now: u64) -> bool {
        self.limiter.clock().advance(Duration::from_nanos(STEP));
        self.limiter.check_key(key).is_ok()
    }
    fn every_10k(&mut self) -> usize {
        if self.clean {
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        self.limiter.len()
    }
    fn keys(&self) -> usize {
        self.limiter.len()
    }
}

fn run(keys: &[String], make: &dyn Fn() -> Box<dyn Flooded>) -> Outcome {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let before = kata::memory::Counting::held();
        let mut limiter = make();
        let mut most = 0;
        let mut allowed = 0;
        let started = Instant::now();
        for (i, key) in keys.iter().enumerate() {
            if black_box(limiter.decide(black_box(key), i as u64 * STEP)) {
                allowed += 1;
            }
            if i % 10_000 == 9_999 {
                most = most.max(limiter.every_10k());
            }
        }
        times.push(started.elapsed().as_nanos() as f64 / keys.len() as f64);
        most = most.max(limiter.keys());
        let bytes = kata::memory::Counting::held().saturating_sub(before);
        last = Some((most, bytes, limiter.keys(), allowed));
        drop(limiter);
    }
    times.sort_by(f64::total_cmp);
    let (most_keys, bytes, keys_at_end, allowed) = last.expect("three runs");
    Outcome {
        ns_per_decision: times[1],
        most_keys,
        bytes,
        keys_at_end,
        allowed,
    }
}

fn main() {
    let keys = keys();
    let one_per_ms = NonZeroU32::new(1_000).expect("non-zero");
    let burst = NonZeroU32::new(2).expect("non-zero");
    let governor = |clean: bool| {
        move || -> Box<dyn Flooded> {
            Box::new(Governor {
                limiter: governor::RateLimiter::new(
                    governor::Quota::per_second(one_per_ms).allow_burst(burst),
                    governor::state::keyed::DefaultKeyedStateStore::default(),
                    governor::clock::FakeRelativeClock::default(),
                ),
                clean,
            })
        }
    };
    let rule = || Rule::TokenBucket {
        capacity: 2,
        refill_every: Duration::from_millis(1),
    };
    let bounds = || Bounds::new("flood", MAX_KEYS, Overflow::Deny);
    type Make = Box<dyn Fn() -> Box<dyn Flooded>>;
    let rows: Vec<(&str, Make)> = vec![
        (
            "09 reference, max_keys 10_000",
            Box::new(move || {
                let limiter = lesson_09::BoundedLimiter::new(rule(), bounds())
                    .expect("a valid configuration");
                Box::new(Bounded(limiter, lesson_09::BoundedLimiter::keys_held)) as Box<dyn Flooded>
            }),
        ),
        (
            "09 going further, max_keys 10_000",
            Box::new(move || {
                let limiter = lesson_09_further::BoundedLimiter::new(rule(), bounds())
                    .expect("a valid configuration");
                Box::new(Bounded(
                    limiter,
                    lesson_09_further::BoundedLimiter::keys_held,
                )) as Box<dyn Flooded>
            }),
        ),
        (
            "governor, retain_recent every 10k requests",
            Box::new(governor(true)),
        ),
        ("governor, never cleaned", Box::new(governor(false))),
    ];
    println!(
        "{} distinct keys, one every {STEP} ns, ten steady keys among them; 2 per ms per key\n",
        FLOOD
    );
    println!("| limiter | ns per decision | most keys held | keys held at the end | bytes held at the end | bytes per key held | allowed |");
    println!("|---|---|---|---|---|---|---|");
    for (name, make) in &rows {
        let o = run(&keys, make.as_ref());
        println!(
            "| {name} | {:.1} | {} | {} | {} | {:.0} | {} |",
            o.ns_per_decision,
            o.most_keys,
            o.keys_at_end,
            o.bytes,
            o.bytes as f64 / o.keys_at_end.max(1) as f64,
            o.allowed
        );
    }
}
