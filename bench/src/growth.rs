//! Lesson 06's going-further GCRA grows its table while other threads
//! decide: no decision may be lost, whichever table a thread found its key
//! in. Once under loom, over the kata's facade, on a table that grows once
//! while another thread decides; once on std threads, through 16 growths.

use std::time::Duration;

use kata::{Decision, RateLimiter, Timestamp};

use crate::lesson_06_further;

/// Under loom: six keys fill the first table (8 slots) to three quarters,
/// then one thread asks for a short key and a long one while another adds
/// a seventh key, which makes the table grow. Every interleaving (within
/// two preemptions) must count every ask.
#[test]
fn lesson_06_going_further_grows_under_loom() {
    use crate::on_loom::lesson_06_further::Gcra;
    use crate::on_loom::sync::Arc;
    const DEEP: u64 = 1 << 20;
    const LONG: &str = "a-client-key-longer-than-15-bytes";
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let limiter = Arc::new(Gcra::new(DEEP, Duration::from_nanos(1)).expect("a valid GCRA"));
        let now = Timestamp::from_nanos(0);
        for key in ["hot", LONG, "k2", "k3", "k4", "k5"] {
            limiter.check(key, now);
        }
        let asker = {
            let limiter = limiter.clone();
            loom::thread::spawn(move || (limiter.check("hot", now), limiter.check(LONG, now)))
        };
        let added = limiter.check("new", now);
        let (hot, long) = asker.join().expect("no panic");
        assert_eq!(
            added,
            Decision::Allowed {
                remaining: DEEP - 1
            }
        );
        assert_eq!(
            hot,
            Decision::Allowed {
                remaining: DEEP - 2
            }
        );
        assert_eq!(
            long,
            Decision::Allowed {
                remaining: DEEP - 2
            }
        );
        for (key, asked) in [("hot", 3), (LONG, 3), ("new", 2), ("k5", 2)] {
            assert_eq!(
                limiter.check(key, now),
                Decision::Allowed {
                    remaining: DEEP - asked
                },
                "{key:?} asked {asked} times in all"
            );
        }
    });
}

/// The going-further table grows while another thread decides: every
/// decision on a key counts once, whichever table the thread found it in.
/// One thread asks for a hot key until the other has added 200,000 keys
/// (the table grows 16 times meanwhile), all at one instant with a bucket too
/// deep to empty; then the hot key's next answer must count every ask, and
/// the new keys each one.
#[test]
fn lesson_06_going_further_loses_no_decision_while_it_grows() {
    const DEEP: u64 = 1 << 40;
    let limiter =
        lesson_06_further::Gcra::new(DEEP, Duration::from_nanos(1)).expect("a valid GCRA");
    let now = Timestamp::from_nanos(0);
    let added = std::sync::atomic::AtomicBool::new(false);
    let hot = "hot";
    let asked: u64 = std::thread::scope(|scope| {
        let asker = scope.spawn(|| {
            let mut asked = 0u64;
            // Bounded: the other thread ends, and so does this loop.
            while !added.load(std::sync::atomic::Ordering::Acquire) && asked < 100_000_000 {
                limiter.check(hot, now);
                asked += 1;
            }
            asked
        });
        for i in 0..200_000 {
            limiter.check(&format!("new-{i}"), now);
        }
        added.store(true, std::sync::atomic::Ordering::Release);
        asker.join().expect("no panic")
    });
    let want = DEEP - asked - 1;
    assert_eq!(
        limiter.check(hot, now),
        Decision::Allowed { remaining: want },
        "after {asked} asks of a bucket of {DEEP}, the next must leave {want}: fewer asks were counted"
    );
    assert_eq!(
        limiter.check("new-7", now),
        Decision::Allowed {
            remaining: DEEP - 2
        },
        "a key added once, asked again"
    );
}
