//! A lesson's checks run in stages, the way `cargo run -- test N` and
//! `watch` run them: milestone by milestone (a lesson without milestones is
//! one), and within each, tier by tier ([`Tier`]: quick checks, properties,
//! races, slow checks). The run stops after the first stage with a failure
//! unless asked for everything, so a learner hears of a wrong key from an
//! example in a second instead of after the million-key flood.

use std::path::Path;

use crate::runner::Entry;
use crate::suite::{self, Outcome, Tier, Until};

/// One stage: the checks of one tier of one milestone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The milestone's number (1, 2, …), or `None` in a lesson without
    /// milestones.
    pub milestone: Option<usize>,
    pub tier: Tier,
    pub tests: Vec<String>,
}

/// How far a staged run goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reach {
    /// Run every stage, failing or not (`--all`).
    pub all: bool,
    /// Only milestones 1 to K (`--milestone K`).
    pub upto: Option<usize>,
}

/// What a staged run did.
#[derive(Debug)]
pub struct Staged {
    /// Every stage run, with its outcome, in order.
    pub ran: Vec<(Stage, Outcome)>,
    /// The stages not run, in order: those after the first failing one
    /// (unless [`Reach::all`]).
    pub not_run: Vec<Stage>,
    /// The stages' outcomes as one: every test's result, the build's or
    /// the stages' output, and whether anything timed out or crashed.
    pub outcome: Outcome,
}

impl Staged {
    /// The first stage that failed, if one did.
    pub fn first_failed(&self) -> Option<&(Stage, Outcome)> {
        self.ran.iter().find(|(_, o)| !passed(o))
    }

    /// The failure messages of every stage that failed, as libtest printed
    /// them (see [`crate::runner::failure_details`]).
    pub fn details(&self) -> String {
        self.ran
            .iter()
            .filter(|(_, o)| !passed(o))
            .map(|(_, o)| crate::runner::failure_details(&o.failures))
            .filter(|d| !d.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

/// Whether every check of a stage's run passed.
pub fn passed(outcome: &Outcome) -> bool {
    outcome.ran && !outcome.timed_out && outcome.failed().next().is_none()
}

/// The stages of a lesson whose checks are `tests`, in the order they run:
/// by milestone, then by tier; only milestones 1 to `upto` when given. A
/// check no milestone's pattern takes (the self-check proves there is none)
/// runs with the last milestone.
pub fn plan(entry: &Entry, tests: &[String], upto: Option<usize>) -> Vec<Stage> {
    let milestones: Vec<Option<usize>> = if entry.milestones.is_empty() {
        vec![None]
    } else {
        entry
            .milestones
            .iter()
            .map(|m| Some(m.number))
            .filter(|m| upto.is_none_or(|k| m.is_some_and(|m| m <= k)))
            .collect()
    };
    let last = entry.milestones.len();
    let milestone_of = |test: &str| {
        if entry.milestones.is_empty() {
            return None;
        }
        Some(kata_catalog::milestone_of(&entry.milestones, test).map_or(last, |m| m.number))
    };
    let mut stages = Vec::new();
    for milestone in milestones {
        for tier in Tier::ALL {
            let tests: Vec<String> = tests
                .iter()
                .filter(|t| milestone_of(t) == milestone && Tier::of(t) == tier)
                .cloned()
                .collect();
            if !tests.is_empty() {
                stages.push(Stage {
                    milestone,
                    tier,
                    tests,
                });
            }
        }
    }
    stages
}

/// Test threads for a lesson: its Redis checks mostly wait on sockets and
/// servers, so they run four times as many as the machine has cores.
pub fn threads(entry: &Entry) -> usize {
    threads_for(entry.kind)
}

/// [`threads`], for a lesson of `kind`: what the self-check runs its
/// subjects with too.
pub fn threads_for(kind: kata_catalog::Kind) -> usize {
    let threads = suite::test_threads();
    if kind.needs_redis() {
        threads * 4
    } else {
        threads
    }
}

/// How many stages run at once once the first has passed: while one runs,
/// the next ones start, so that a run that passes takes little longer than
/// one that is not staged. Their results are still taken, and shown, in
/// order. A Redis lesson's checks mostly wait (on round trips, on timeouts
/// that must pass), so all of its stages but a few run together; the other
/// lessons' checks keep both cores busy with two.
pub fn depth(entry: &Entry) -> usize {
    if entry.kind.needs_redis() {
        8
    } else {
        2
    }
}

/// Runs `stages` in order with `run`, and hands each one's outcome to
/// `shown` in order. The first stage runs alone, so that a learner failing
/// it hears of it as fast as the machine allows; once it has passed, up to
/// `depth` run at once. After the first stage that fails
/// (unless `all`), the stages already started are stopped (`run` is given
/// a test that says so) and no other starts. Returns the stages taken, with
/// their outcomes, and those not run.
pub fn pipelined(
    stages: &[Stage],
    all: bool,
    depth: usize,
    run: impl Fn(&Stage, &(dyn Fn() -> bool + Sync)) -> Outcome + Sync,
    shown: &mut impl FnMut(&Stage, &Outcome),
) -> (Vec<(Stage, Outcome)>, Vec<Stage>) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc;
    // Stages from `failed_at` on are no longer wanted.
    let failed_at = AtomicUsize::new(usize::MAX);
    let stop_starting = AtomicBool::new(false);
    let mut ran: Vec<(Stage, Outcome)> = Vec::new();
    let mut first_not_run = stages.len();
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, Outcome)>();
        let mut started = 0;
        let mut done: std::collections::BTreeMap<usize, Outcome> = Default::default();
        let start = |i: usize, tx: mpsc::Sender<(usize, Outcome)>| {
            let stage = &stages[i];
            let failed_at = &failed_at;
            let run = &run;
            scope.spawn(move || {
                let unwanted = move || i > failed_at.load(Ordering::SeqCst);
                // A stage that panics is a failed stage, said as such: its
                // outcome must arrive, or the run would wait for it forever.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run(stage, &unwanted)
                }))
                .unwrap_or_else(|panic| {
                    let said = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("(no message)");
                    let text = format!("the runner failed running this stage: {said}");
                    Outcome {
                        crash: Some(text.clone()),
                        output: text,
                        ..Outcome::default()
                    }
                });
                let _ = tx.send((i, outcome));
            });
        };
        if !stages.is_empty() {
            start(0, tx.clone());
            started = 1;
        }
        let mut next = 0;
        while next < started {
            let Ok((i, outcome)) = rx.recv() else { break };
            done.insert(i, outcome);
            while let Some(outcome) = done.remove(&next) {
                let stage = &stages[next];
                shown(stage, &outcome);
                let failed = !passed(&outcome);
                ran.push((stage.clone(), outcome));
                next += 1;
                if failed && !all {
                    failed_at.store(next - 1, Ordering::SeqCst);
                    stop_starting.store(true, Ordering::SeqCst);
                    first_not_run = next;
                }
                while !stop_starting.load(Ordering::SeqCst)
                    && started < stages.len().min(next + depth.max(1))
                {
                    start(started, tx.clone());
                    started += 1;
                }
                if stop_starting.load(Ordering::SeqCst) {
                    break;
                }
            }
            if stop_starting.load(Ordering::SeqCst) {
                // Wait for the stages already started to stop; their
                // outcomes are not taken.
                drop(tx);
                while rx.recv().is_ok() {}
                break;
            }
        }
    });
    (ran, stages[first_not_run..].to_vec())
}

/// Builds the lesson's tests, then runs them stage by stage as `reach`
/// says, with `KATA_SUBJECT=<subject>`; `shown` hears of each stage as it
/// ends. A build that fails is an outcome that did not run, whose output is
/// the compiler's.
pub fn run(
    root: &Path,
    entry: &Entry,
    subject: &str,
    reach: Reach,
    mut shown: impl FnMut(&Stage, &Outcome),
) -> Staged {
    // Nothing ran: the build failed, or the test binary could not list
    // its checks.
    let nothing_ran = |output: String, timed_out: bool, crash: Option<String>| Staged {
        ran: Vec::new(),
        not_run: Vec::new(),
        outcome: Outcome {
            timed_out,
            crash,
            output,
            ..Outcome::default()
        },
    };
    let exe = match suite::build_lesson(root, &entry.name) {
        Ok(exe) => exe,
        Err(output) => {
            let timed_out = output.contains("\nstopped: building");
            return nothing_ran(output, timed_out, None);
        }
    };
    let tests = match suite::list(&exe) {
        Ok(tests) => tests,
        Err(e) => return nothing_ran(e.clone(), false, Some(e)),
    };
    let stages = plan(entry, &tests, reach.upto);
    let (ran, not_run) = pipelined(
        &stages,
        reach.all,
        depth(entry),
        |stage, unwanted| {
            suite::run_binary_unless(
                root,
                &exe,
                subject,
                Some(&stage.tests),
                Until::End,
                threads(entry),
                unwanted,
            )
        },
        &mut shown,
    );
    let outcome = Outcome {
        tests: ran.iter().flat_map(|(_, o)| o.tests.clone()).collect(),
        failures: ran.iter().flat_map(|(_, o)| o.failures.clone()).collect(),
        ran: ran.iter().all(|(_, o)| o.ran),
        timed_out: ran.iter().any(|(_, o)| o.timed_out),
        crash: ran.iter().find_map(|(_, o)| o.crash.clone()),
        output: ran
            .iter()
            .map(|(_, o)| o.output.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        took: ran.iter().map(|(_, o)| o.took).sum(),
    };
    Staged {
        ran,
        not_run,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn entry(milestones: &[(&str, &str)]) -> Entry {
        Entry {
            number: 9,
            name: "lesson_09".into(),
            title: "Bounded".into(),
            kind: kata_catalog::Kind::BoundedLimiter,
            milestones: milestones
                .iter()
                .enumerate()
                .map(|(i, (title, checks))| kata_catalog::Milestone {
                    number: i + 1,
                    title: title.to_string(),
                    checks: checks.split_whitespace().map(String::from).collect(),
                })
                .collect(),
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn outcome(test: &str, ok: bool) -> Outcome {
        Outcome {
            tests: vec![(test.to_string(), ok)],
            ran: true,
            ..Outcome::default()
        }
    }

    fn stage(test: &str) -> Stage {
        Stage {
            milestone: None,
            tier: Tier::Quick,
            tests: vec![test.to_string()],
        }
    }

    /// A stage whose run panics ends as a failed stage with the panic's
    /// message, and the run ends (bounded: a run that waited for it
    /// forever fails here after 10 s).
    #[test]
    fn a_stage_that_panics_fails_and_the_run_ends() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let stages: Vec<Stage> = ["a", "b", "c"].iter().map(|t| stage(t)).collect();
            let (ran, not_run) = pipelined(
                &stages,
                false,
                2,
                |stage, _| {
                    if stage.tests[0] == "b" {
                        panic!("a bug of the runner's");
                    }
                    outcome(&stage.tests[0], true)
                },
                &mut |_: &Stage, _: &Outcome| {},
            );
            let _ = tx.send((ran, not_run.len()));
        });
        let (ran, not_run) = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the run waited forever for a stage that panicked");
        assert_eq!(ran.len(), 2);
        assert!(!passed(&ran[1].1));
        assert!(
            ran[1].1.output.contains("a bug of the runner's"),
            "{}",
            ran[1].1.output
        );
        assert_eq!(not_run, 1);
    }

    /// The first stage runs alone; once it has passed, `depth` run at once.
    #[test]
    fn the_first_stage_runs_alone_then_depth_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let stages: Vec<Stage> = ["a", "b", "c", "d", "e"].iter().map(|t| stage(t)).collect();
        let running = AtomicUsize::new(0);
        let peaked = std::sync::atomic::AtomicBool::new(false);
        let most = std::sync::Mutex::new(Vec::new());
        let (ran, _) = pipelined(
            &stages,
            false,
            3,
            |stage, _| {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                if now >= 3 {
                    peaked.store(true, Ordering::SeqCst);
                }
                let mut seen = now;
                if stage.tests[0] == "a" {
                    // Watches for others while it runs (100 ms).
                    let deadline = std::time::Instant::now() + Duration::from_millis(100);
                    while std::time::Instant::now() < deadline {
                        seen = seen.max(running.load(Ordering::SeqCst));
                        std::thread::yield_now();
                    }
                }
                most.lock().unwrap().push((stage.tests[0].clone(), seen));
                if stage.tests[0] != "a" {
                    // Waits (bounded) until three have run at once.
                    let deadline = std::time::Instant::now() + Duration::from_secs(2);
                    while !peaked.load(Ordering::SeqCst) && std::time::Instant::now() < deadline {
                        std::thread::yield_now();
                    }
                }
                let o = outcome(&stage.tests[0], true);
                running.fetch_sub(1, Ordering::SeqCst);
                o
            },
            &mut |_: &Stage, _: &Outcome| {},
        );
        assert_eq!(ran.len(), 5);
        let most = most.into_inner().unwrap();
        assert_eq!(most[0], ("a".to_string(), 1), "{most:?}");
        assert!(most.iter().any(|(_, n)| *n == 3), "{most:?}");
        assert!(most.iter().all(|(_, n)| *n <= 3), "{most:?}");
    }

    /// The next stage runs while one runs; after a failure it is told to
    /// stop, and no stage after it starts. Results come in order.
    #[test]
    fn a_failure_stops_the_stages_after_it() {
        let stages: Vec<Stage> = ["a", "b", "c", "d"].iter().map(|t| stage(t)).collect();
        let started = std::sync::Mutex::new(Vec::new());
        let told = std::sync::Mutex::new(Vec::new());
        let mut shown = Vec::new();
        let (ran, not_run) = pipelined(
            &stages,
            false,
            2,
            |stage, unwanted| {
                let test = stage.tests[0].clone();
                started.lock().unwrap().push(test.clone());
                if test == "c" {
                    // Runs until it is told it is no longer wanted (bounded).
                    let deadline = std::time::Instant::now() + Duration::from_secs(10);
                    while !unwanted() && std::time::Instant::now() < deadline {
                        std::thread::yield_now();
                    }
                    told.lock().unwrap().push(unwanted());
                }
                outcome(&test, test != "b")
            },
            &mut |stage: &Stage, o: &Outcome| shown.push((stage.tests[0].clone(), passed(o))),
        );
        assert_eq!(shown, [("a".to_string(), true), ("b".to_string(), false)]);
        assert_eq!(ran.len(), 2);
        let not_run: Vec<&str> = not_run.iter().map(|s| s.tests[0].as_str()).collect();
        assert_eq!(not_run, ["c", "d"]);
        let mut started = started.into_inner().unwrap();
        started.sort();
        assert!(!started.contains(&"d".to_string()), "{started:?}");
        assert_eq!(told.into_inner().unwrap(), [true][..started.len() - 2]);
        // With `all`, every stage runs and is shown.
        let mut every = Vec::new();
        let (ran, not_run) = pipelined(
            &stages,
            true,
            3,
            |stage, _| outcome(&stage.tests[0], stage.tests[0] != "a"),
            &mut |stage: &Stage, _: &Outcome| every.push(stage.tests[0].clone()),
        );
        assert_eq!(every, ["a", "b", "c", "d"]);
        assert_eq!((ran.len(), not_run.len()), (4, 0));
    }

    #[test]
    fn stages_go_by_milestone_then_by_tier() {
        let tests = names(&[
            "fixed_window::slow::keeps_many_keys_apart",
            "fixed_window::loom::new_key",
            "fixed_window::property::agrees_with_model",
            "fixed_window::property::under_a_bound",
            "examples::case_1_x",
            "examples::case_3_y",
            "fault::server_paused",
        ]);
        let lesson = entry(&[
            (
                "One",
                "examples::case_1_* fixed_window::property::* fixed_window::slow::*",
            ),
            (
                "Two",
                "examples::case_3_* *::property::under_a_bound fault::*",
            ),
            ("Three", "*::loom::*"),
        ]);
        let stages: Vec<(Option<usize>, Tier, Vec<String>)> = plan(&lesson, &tests, None)
            .into_iter()
            .map(|s| (s.milestone, s.tier, s.tests))
            .collect();
        assert_eq!(
            stages,
            [
                (Some(1), Tier::Quick, names(&["examples::case_1_x"])),
                (
                    Some(1),
                    Tier::Properties,
                    names(&["fixed_window::property::agrees_with_model"])
                ),
                (
                    Some(1),
                    Tier::Slow,
                    names(&["fixed_window::slow::keeps_many_keys_apart"])
                ),
                (Some(2), Tier::Quick, names(&["examples::case_3_y"])),
                (
                    Some(2),
                    Tier::Properties,
                    names(&["fixed_window::property::under_a_bound"])
                ),
                (Some(2), Tier::Slow, names(&["fault::server_paused"])),
                (
                    Some(3),
                    Tier::Races,
                    names(&["fixed_window::loom::new_key"])
                ),
            ]
        );
        let upto: Vec<Option<usize>> = plan(&lesson, &tests, Some(1))
            .iter()
            .map(|s| s.milestone)
            .collect();
        assert_eq!(upto, [Some(1), Some(1), Some(1)]);
        let whole = plan(&entry(&[]), &tests, None);
        let tiers: Vec<(Option<usize>, Tier, usize)> = whole
            .iter()
            .map(|s| (s.milestone, s.tier, s.tests.len()))
            .collect();
        assert_eq!(
            tiers,
            [
                (None, Tier::Quick, 2),
                (None, Tier::Properties, 2),
                (None, Tier::Races, 1),
                (None, Tier::Slow, 2)
            ]
        );
    }
}
