use super::trace::collapse_repeats;
use super::*;
use crate::decision::{Decision, RateLimiter};
use std::time::Duration;

#[test]
fn app_servers_count_from_one_and_threads_as_loom_does() {
    let s = Scenario::burst();
    assert_eq!(
        show_order(&s, &[(1, 0), (0, 0)], "app server"),
        "app server 2 check(\"k\", 0ns), then app server 1 check(\"k\", 0ns)"
    );
    assert_eq!(
        show_order(&s, &[(1, 0), (0, 0)], "thread"),
        "thread 1 check(\"k\", 0ns), then thread 0 check(\"k\", 0ns)"
    );
    let got = Answers {
        before: vec![],
        threads: vec![vec![Decision::Allowed { remaining: 1 }]; 3],
        after: vec![],
    };
    assert!(show_answers(&s, &got, "app server").contains("  app server 1:"));
    assert!(!show_answers(&s, &got, "app server").contains("app server 0"));
    assert!(compact(&got, "app server").starts_with("app server 1: "));
}

/// A fixed window that admits one request too many: wrong whatever
/// the order of its calls, each under a lock.
struct OneTooMany {
    limit: u64,
    counts: loom::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl RateLimiter for OneTooMany {
    fn check(&self, key: &str, _: crate::time::Timestamp) -> Decision {
        let mut counts = self.counts.lock().unwrap();
        let n = counts.entry(key.to_string()).or_default();
        *n += 1;
        if *n <= self.limit + 1 {
            Decision::Allowed {
                remaining: (self.limit + 1) - *n,
            }
        } else {
            Decision::Denied {
                retry_after: Duration::from_nanos(1),
            }
        }
    }
}

/// A fixed window that reads its count under the lock and writes it
/// back under another: right one call at a time, wrong when two
/// calls overlap.
struct LostUpdate {
    limit: u64,
    count: loom::sync::Mutex<u64>,
}

impl RateLimiter for LostUpdate {
    fn check(&self, _: &str, _: crate::time::Timestamp) -> Decision {
        let n = *self.count.lock().unwrap();
        if n >= self.limit {
            return Decision::Denied {
                retry_after: Duration::from_nanos(1_000),
            };
        }
        *self.count.lock().unwrap() = n + 1;
        Decision::Allowed {
            remaining: self.limit - n - 1,
        }
    }
}

/// Answers that are wrong even one call at a time are said to be so,
/// with the first wrong one against the contract's, not blamed on the
/// interleaving.
#[test]
fn wrong_answers_one_call_at_a_time_are_not_a_race() {
    let build: BuildShared = &|limit, _| {
        Ok(Arc::new(OneTooMany {
            limit,
            counts: Default::default(),
        }))
    };
    let e = explore(Algorithm::FixedWindow, build, Scenario::burst()).unwrap_err();
    assert!(
        e.contains("even one call at a time, these answers are not the contract's:"),
        "{e}"
    );
    assert!(
        e.contains(
            "these answers are not the contract's: thread 0: check(\"k\", 0ns) answered \
             allowed, 2 remaining; the contract says allowed, 1 remaining."
        ),
        "{e}"
    );
    assert!(!e.contains("match no one-at-a-time order"), "{e}");
}

/// A real race is still reported as one.
#[test]
fn overlapping_calls_are_a_race() {
    let build: BuildShared = &|limit, _| {
        Ok(Arc::new(LostUpdate {
            limit,
            count: Default::default(),
        }))
    };
    let e = explore(Algorithm::FixedWindow, build, Scenario::burst()).unwrap_err();
    assert!(
        e.contains("loom found a schedule in which the answers match no one-at-a-time order"),
        "{e}"
    );
    assert!(!e.contains("even one call at a time"), "{e}");
}

#[test]
fn repeated_lines_are_written_once_with_a_count() {
    let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let got = collapse_repeats(lines(&["a", "b", "c", "b", "c", "b", "c", "d", "e", "e"]));
    assert_eq!(
        got,
        lines(&[
            "a",
            "b",
            "c",
            "  ... the 2 lines above repeated × 3",
            "d",
            "e",
            "e"
        ])
    );
    let got = collapse_repeats(lines(&["x"; 80]));
    assert_eq!(got, lines(&["x", "  ... the line above repeated × 80"]));
}

#[test]
fn linearizations_of_the_burst() {
    let all = linearizations(Algorithm::FixedWindow, &Scenario::burst());
    // Who gets +1, who +0 and who is denied: 3! outcomes.
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(all
        .iter()
        .all(|a| a.threads.iter().filter(|d| !d[0].is_allowed()).count() == 1));
}

#[test]
fn rollover_admits_two_and_denies_the_third() {
    let all = linearizations(Algorithm::FixedWindow, &Scenario::rollover());
    assert_eq!(all.len(), 2);
    assert!(all.iter().all(|a| !a.after[0].is_allowed()));
    for a in &all {
        assert!(linearizable(
            Algorithm::FixedWindow,
            &Scenario::rollover(),
            a
        ));
    }
    let mut lost_update = all[0].clone();
    lost_update.threads[1] = lost_update.threads[0].clone();
    assert!(!linearizable(
        Algorithm::FixedWindow,
        &Scenario::rollover(),
        &lost_update
    ));
}

#[test]
fn denial_at_rollover_denies_the_last_call() {
    let s = Scenario::denial_at_rollover();
    for algorithm in Algorithm::ALL {
        let all = linearizations(algorithm, &s);
        assert!(
            all.iter().all(|a| !a.after[0].is_allowed()),
            "{algorithm:?}"
        );
    }
}

#[test]
fn a_call_that_is_late_in_some_order_may_be_denied() {
    let s = Scenario::straddle();
    let d = |text: &str| crate::timeline::parse_decisions(text).unwrap();
    // 1_000 first, then the late 999 denied: the contract allows it...
    let denied_late = Answers {
        before: d("+1"),
        threads: vec![d("-1"), d("+1")],
        after: d("+0 -1000"),
    };
    assert!(linearizable(Algorithm::TokenBucket, &s, &denied_late));
    // ...but an in-order call must still be exact.
    let mut wrong = denied_late.clone();
    wrong.after = d("+1 -1000");
    assert!(!linearizable(Algorithm::TokenBucket, &s, &wrong));
    // And a late call may be allowed only where the rule admits it.
    let too_many = Answers {
        before: d("+0"),
        threads: vec![d("+0"), d("+0")],
        after: d("-1 -1"),
    };
    assert!(!linearizable(
        Algorithm::FixedWindow,
        &Scenario {
            config: crate::timeline::Config::new(1, 1_000),
            ..s
        },
        &too_many
    ));
}

/// What the harness notes of a call (written in this folder) is shown
/// without its file and line: the learner's own operations carry theirs.
#[test]
fn the_harness_s_own_notes_carry_no_file() {
    let op = Op {
        thread: 1,
        at: std::panic::Location::caller(),
        what: "check(\"a\", 0ns) called".into(),
    };
    assert_eq!(
        super::trace::show_trace(&[op]),
        "  thread 1  check(\"a\", 0ns) called\n"
    );
}
