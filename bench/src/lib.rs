//! The contenders: every lesson's reference from 02 on, the going-further
//! GCRA and bounded limiter, a naive `Mutex<HashMap>` fixed window, and governor, each behind one
//! small trait so that every benchmark runs the same keys the same way.
//!
//! The references are compiled here over plain `std::sync` (not the kata's
//! instrumented facade), as they would run in production.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::Duration;

use kata::{RateLimiter, Timestamp};

/// `super::sync` for the references: std itself.
pub mod sync {
    pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    pub use std::sync::{Arc, Mutex, RwLock};

    pub fn spin_loop() {
        std::hint::spin_loop();
    }
}

macro_rules! reference {
    ($module:ident, $file:literal) => {
        #[path = $file]
        #[allow(dead_code)]
        pub mod $module;
    };
}

reference!(lesson_02, "../../solutions/lesson_02.rs");
reference!(lesson_03, "../../solutions/lesson_03.rs");
reference!(lesson_04, "../../solutions/lesson_04.rs");
reference!(lesson_05, "../../solutions/lesson_05.rs");
reference!(lesson_06, "../../solutions/lesson_06.rs");
reference!(lesson_06_further, "../../solutions/lesson_06_further.rs");
reference!(lesson_07, "../../solutions/lesson_07.rs");
reference!(lesson_08, "../../solutions/lesson_08.rs");
reference!(lesson_09, "../../solutions/lesson_09.rs");
reference!(lesson_09_further, "../../solutions/lesson_09_further.rs");
reference!(lesson_10, "../../solutions/lesson_10.rs");
reference!(lesson_12, "../../solutions/lesson_12.rs");

pub mod inflight;
pub mod layer;

#[cfg(test)]
mod agreement;
#[cfg(test)]
mod growth;

#[cfg(test)]
mod on_loom;

/// One limiter under measurement. Keys are `String`s because governor's keyed
/// limiter takes `&String`; every contender gets the very same ones.
pub trait Contender: Send + Sync {
    /// Decides one request; true if allowed.
    // `&String`, not `&str`: governor's keyed limiter takes `&K` with
    // `K = String`, and every contender must get the very same keys.
    #[allow(clippy::ptr_arg)]
    fn decide(&self, key: &String, now: u64) -> bool;
}

struct Kata<L>(L);

impl<L: RateLimiter> Contender for Kata<L> {
    fn decide(&self, key: &String, now: u64) -> bool {
        self.0.check(key, Timestamp::from_nanos(now)).is_allowed()
    }
}

/// The limiter people write first: one `Mutex<HashMap<String, (window, count)>>`.
pub struct NaiveMutexMap {
    limit: u32,
    window: u64,
    keys: Mutex<HashMap<String, (u64, u32)>>,
}

impl Contender for NaiveMutexMap {
    fn decide(&self, key: &String, now: u64) -> bool {
        let mut keys = self.keys.lock().unwrap();
        let entry = keys.entry(key.clone()).or_insert((now / self.window, 0));
        if entry.0 != now / self.window {
            *entry = (now / self.window, 0);
        }
        entry.1 += 1;
        entry.1 <= self.limit
    }
}

/// governor 0.10, keyed, `String` keys, its default store (a `DashMap`) and
/// its default clock: it reads the time itself and ignores `now`.
pub struct Governor(governor::DefaultKeyedRateLimiter<String>);

impl Contender for Governor {
    fn decide(&self, key: &String, _now: u64) -> bool {
        self.0.check_key(key).is_ok()
    }
}

/// governor 0.10 keyed as [`Governor`], on its manual clock
/// (`FakeRelativeClock`): time is given, not read, as the kata's limiters
/// are given `now`, so both do the same work.
pub struct GovernorFakeClock(
    governor::RateLimiter<
        String,
        governor::state::keyed::DefaultKeyedStateStore<String>,
        governor::clock::FakeRelativeClock,
        governor::middleware::NoOpMiddleware<governor::nanos::Nanos>,
    >,
);

impl GovernorFakeClock {
    /// One token a nanosecond and a burst so deep (2^32 − 1) that no run
    /// reaches its end with the clock standing at 0: every decision is an
    /// allowed one, as for the other contenders, without the cost of moving
    /// a shared clock on.
    pub fn new() -> GovernorFakeClock {
        let burst = NonZeroU32::new(u32::MAX).expect("non-zero");
        let per_ns = NonZeroU32::new(1_000_000_000).expect("non-zero");
        GovernorFakeClock(governor::RateLimiter::new(
            governor::Quota::per_second(per_ns).allow_burst(burst),
            governor::state::keyed::DefaultKeyedStateStore::default(),
            governor::clock::FakeRelativeClock::default(),
        ))
    }
}

impl Default for GovernorFakeClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Contender for GovernorFakeClock {
    fn decide(&self, key: &String, _now: u64) -> bool {
        self.0.check_key(key).is_ok()
    }
}

/// The limit of every kata limiter here: 2^32 requests per window of
/// 1,000 ns, or a bucket of 2^32 tokens with one back every nanosecond, as
/// deep as governor's burst. No stream of one request per nanosecond
/// reaches it, nor do two threads whose instants drift apart by less than
/// four billion requests: every decision is an allowed one, as governor's
/// are, whatever the order the two threads' requests arrive in.
pub const BUCKET: u64 = 1 << 32;

/// Every contender, named (names safe for file paths: criterion stores its
/// results under them), configured so that a steady stream of one request
/// per nanosecond is always allowed, from one thread or two (each taking
/// every other instant): the hot path all of them share, with bounded state
/// (a sliding log holds at most its limit). Callers advance `now` by one
/// nanosecond per request; the benchmarks fail if any decision is denied.
pub fn contenders() -> Vec<(&'static str, Box<dyn Contender>)> {
    const WINDOW: Duration = Duration::from_nanos(1_000);
    // As deep as the manual clock's: on a real clock, two threads' requests
    // come in bursts faster than one a nanosecond.
    let burst = NonZeroU32::new(u32::MAX).expect("non-zero");
    let per_ns = NonZeroU32::new(1_000_000_000).expect("non-zero");
    vec![
        ("governor", Box::new(GovernorFakeClock::new())),
        (
            "governor-real-clock",
            Box::new(Governor(governor::RateLimiter::keyed(
                governor::Quota::per_second(per_ns).allow_burst(burst),
            ))),
        ),
        (
            "naive-mutex-hashmap",
            Box::new(NaiveMutexMap {
                limit: u32::MAX,
                window: 1_000_000_000,
                keys: Mutex::new(HashMap::new()),
            }),
        ),
        (
            "02-fixed-window",
            Box::new(Kata(
                lesson_02::ConcurrentFixedWindow::new(BUCKET, WINDOW).unwrap(),
            )),
        ),
        (
            "03-sliding-log",
            Box::new(Kata(lesson_03::SlidingLog::new(BUCKET, WINDOW).unwrap())),
        ),
        (
            "04-sliding-counter",
            Box::new(Kata(
                lesson_04::SlidingCounter::new(BUCKET, WINDOW).unwrap(),
            )),
        ),
        (
            "05-token-bucket",
            Box::new(Kata(
                lesson_05::TokenBucket::new(BUCKET, Duration::from_nanos(1)).unwrap(),
            )),
        ),
        (
            "06-gcra",
            Box::new(Kata(
                lesson_06::Gcra::new(BUCKET, Duration::from_nanos(1)).unwrap(),
            )),
        ),
        (
            "06-gcra-further",
            Box::new(Kata(
                lesson_06_further::Gcra::new(BUCKET, Duration::from_nanos(1)).unwrap(),
            )),
        ),
        (
            // Room for every key the benchmarks use: nothing is ever full.
            "09-bounded-gcra",
            Box::new(Kata(
                lesson_09::BoundedLimiter::new(
                    kata::memory::Rule::TokenBucket {
                        capacity: BUCKET,
                        refill_every: Duration::from_nanos(1),
                    },
                    kata::memory::Bounds::new("bench", 2_000_000, kata::memory::Overflow::Deny),
                )
                .unwrap(),
            )),
        ),
        (
            "09-bounded-further",
            Box::new(Kata(
                lesson_09_further::BoundedLimiter::new(
                    kata::memory::Rule::TokenBucket {
                        capacity: BUCKET,
                        refill_every: Duration::from_nanos(1),
                    },
                    kata::memory::Bounds::new("bench", 2_000_000, kata::memory::Overflow::Deny),
                )
                .unwrap(),
            )),
        ),
    ]
}

/// One lesson's limiters for `cargo run -- bench N` (the `versus` binary).
pub struct Lesson {
    pub number: u32,
    pub title: &'static str,
    /// The rule, as `lessons/lessons.toml` names it.
    pub algorithm: &'static str,
    /// Whether the type is shared between threads (lessons 02 and later).
    pub shared: bool,
    pub learner: Build,
    pub reference: Build,
    /// The going-further solutions (`solutions/lesson_NN_<name>.rs`), by name.
    pub further: &'static [(&'static str, Build)],
}

/// Lesson 07, whose subject is a layer: `cargo run -- bench 7`.
pub struct LayerLesson {
    pub number: u32,
    pub title: &'static str,
    pub learner: BuildLayer,
    pub reference: BuildLayer,
    /// The going-further solutions (`solutions/lesson_NN_<name>.rs`), by name.
    pub further: &'static [(&'static str, BuildLayer)],
}

/// Builds one layer of lesson 07 over the benchmark's service.
pub type BuildLayer = fn() -> Result<layer::Svc, kata::http::PolicyError>;

/// Builds one contender of a lesson from a limit and a period.
pub type Build = fn(u64, Duration) -> Result<Box<dyn Contender>, kata::ConfigError>;

/// The learner's limiter and the reference of the lesson `KATA_BENCH_LESSON`
/// names, compiled in by the build script (see `build.rs`).
pub mod versus {
    #[allow(unused_imports)]
    use super::{LayerLesson, Lesson};
    include!(concat!(env!("OUT_DIR"), "/versus.rs"));
}

/// governor, configured as [`contenders`] configures it, for the lessons it
/// implements (the token bucket and GCRA).
pub fn governor_bucket() -> Box<dyn Contender> {
    let burst = NonZeroU32::new(1_000).expect("non-zero");
    let per_ns = NonZeroU32::new(1_000_000_000).expect("non-zero");
    Box::new(Governor(governor::RateLimiter::keyed(
        governor::Quota::per_second(per_ns).allow_burst(burst),
    )))
}

/// `count` distinct keys of 13 bytes each: `key-000000042`.
pub fn keys(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("key-{i:09}")).collect()
}
