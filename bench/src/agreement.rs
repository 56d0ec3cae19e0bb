//! Lessons 05 and 06 against governor, decision for decision: the token
//! bucket's reference, the GCRA's reference and its going-further solution
//! each answer every request of seeded timelines exactly as governor's keyed
//! limiter on its manual clock does (allowed or denied, the requests left,
//! the wait), so the benchmark tables compare limiters that do the same work.

use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::FakeRelativeClock;
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::Quota;
use kata::{Decision, RateLimiter, Timestamp};

use crate::{lesson_05, lesson_06, lesson_06_further};

type Keyed = governor::RateLimiter<
    String,
    DefaultKeyedStateStore<String>,
    FakeRelativeClock,
    StateInformationMiddleware,
>;

/// governor's answer, as the kata writes answers.
fn governor_decides(limiter: &Keyed, clock: &FakeRelativeClock, key: &String) -> Decision {
    match limiter.check_key(key) {
        Ok(snapshot) => Decision::Allowed {
            remaining: u64::from(snapshot.remaining_burst_capacity()),
        },
        Err(not_until) => Decision::Denied {
            retry_after: not_until.wait_time_from(governor::clock::Clock::now(clock)),
        },
    }
}

/// SplitMix64: the same timelines on every run.
struct Seeded(u64);

impl Seeded {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Requests of `keys` distinct keys (short ones and ones past 15 bytes),
/// bursts at one instant and gaps up to three refills apart.
fn timeline(seed: u64, requests: usize, keys: u64, refill_every: u64) -> Vec<(String, u64)> {
    let mut random = Seeded(seed);
    let mut now = 0u64;
    (0..requests)
        .map(|_| {
            now += match random.below(4) {
                0 | 1 => 0,
                2 => random.below(refill_every + 1),
                _ => random.below(3 * refill_every + 1),
            };
            let k = random.below(keys);
            let key = if k.is_multiple_of(3) {
                format!("a-client-key-longer-than-15-bytes-{k}")
            } else {
                format!("k{k}")
            };
            (key, now)
        })
        .collect()
}

fn agree(
    name: &str,
    limiter: &dyn RateLimiter,
    capacity: u32,
    refill_every: u64,
    seed: u64,
    keys: u64,
) {
    let clock = FakeRelativeClock::default();
    let quota = Quota::with_period(Duration::from_nanos(refill_every))
        .expect("a period")
        .allow_burst(NonZeroU32::new(capacity).expect("a capacity"));
    let governor: Keyed =
        governor::RateLimiter::<_, _, _, governor::middleware::NoOpMiddleware<_>>::new(
            quota,
            DefaultKeyedStateStore::default(),
            clock.clone(),
        )
        .with_middleware::<StateInformationMiddleware>();
    let mut at = 0u64;
    for (i, (key, now)) in timeline(seed, 3_000, keys, refill_every)
        .into_iter()
        .enumerate()
    {
        clock.advance(Duration::from_nanos(now - at));
        at = now;
        let want = governor_decides(&governor, &clock, &key);
        let got = limiter.check(&key, Timestamp::from_nanos(now));
        assert_eq!(
            got, want,
            "{name} (capacity {capacity}, refill every {refill_every} ns, seed {seed}): request {i}, {key:?} at {now} ns, answered {got:?} where governor answers {want:?}"
        );
    }
}

/// Every configuration and seed, for one limiter built by `build`.
fn agree_everywhere<L: RateLimiter>(name: &str, build: impl Fn(u64, Duration) -> L) {
    for (capacity, refill_every) in [(1, 1_000), (3, 1_000), (10, 7), (100, 1_000_000)] {
        for (seed, keys) in [(1, 1), (2, 5), (3, 40), (4, 2_000)] {
            let limiter = build(u64::from(capacity), Duration::from_nanos(refill_every));
            agree(name, &limiter, capacity, refill_every, seed, keys);
        }
    }
}

#[test]
fn lesson_05_reference_answers_as_governor_does() {
    agree_everywhere("lesson 05's reference", |c, t| {
        lesson_05::TokenBucket::new(c, t).expect("a valid bucket")
    });
}

#[test]
fn lesson_06_reference_answers_as_governor_does() {
    agree_everywhere("lesson 06's reference", |c, t| {
        lesson_06::Gcra::new(c, t).expect("a valid GCRA")
    });
}

#[test]
fn lesson_06_going_further_answers_as_governor_does() {
    agree_everywhere("lesson 06's going-further solution", |c, t| {
        lesson_06_further::Gcra::new(c, t).expect("a valid GCRA")
    });
}
