//! Loom scenarios: small concurrent situations in which the classic races of
//! rate limiters show up, explored over every thread interleaving (up to a
//! preemption bound) and judged against the model: the answers of calls that
//! overlap must be those of some one-at-a-time order of the same calls.
//!
//! Here, the scenarios and the bounded search over their schedules;
//! `judge`, one execution and its judgement against the model; `trace`, the
//! failing execution's operations as a learner reads them.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::drive::BuildShared;
use crate::models::Algorithm;
use crate::sync::{take_trace, Op};
use crate::text::count;
use crate::timeline::{Config, Request};
use crate::watchdog::{take_panic, time_limit, watched};

mod judge;
mod trace;

pub(crate) use judge::*;
use trace::show_trace;

/// A concurrent situation: calls made before the threads start, the calls of
/// each thread (thread 0 is the model's main thread, which also spawns and
/// joins the others), and calls made after every thread has been joined.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub what: &'static str,
    pub config: Config,
    pub before: Vec<Request>,
    pub threads: Vec<Vec<Request>>,
    pub after: Vec<Request>,
}

fn calls(list: &[(&str, u64)]) -> Vec<Request> {
    list.iter().map(|(k, t)| Request::new(k, *t)).collect()
}

impl Scenario {
    /// Three threads call for one key at one instant with a limit of 2: lost
    /// updates and check-then-act races let all three in.
    pub fn burst() -> Scenario {
        Scenario {
            name: "burst",
            what: "three threads call for one key at the same instant, limit 2",
            config: Config::new(2, 1_000),
            before: vec![],
            threads: vec![calls(&[("k", 0)]), calls(&[("k", 0)]), calls(&[("k", 0)])],
            after: vec![],
        }
    }

    /// The key used its whole limit at 0; two threads arrive when the period has
    /// passed and race to reset the expired state, then one more call follows.
    pub fn rollover() -> Scenario {
        Scenario {
            name: "rollover",
            what: "a key's limit is used up at 0; two threads arrive together one period later and race to reset it",
            config: Config::new(2, 1_000),
            before: calls(&[("k", 0), ("k", 0)]),
            threads: vec![calls(&[("k", 1_000)]), calls(&[("k", 1_000)])],
            after: calls(&[("k", 1_000)]),
        }
    }

    /// The key is at its limit; one thread is denied in that window while
    /// another opens the next one, then one more call follows in the next.
    /// A denied caller that undoes its count after another has reset it (an
    /// increment taken back outside the lock) takes a request away from the
    /// new window, which then admits one too many.
    pub fn denial_at_rollover() -> Scenario {
        Scenario {
            name: "denial at rollover",
            what: "a key's limit of 1 is used at 0; one thread is denied at 999 while another opens the next period at 1_000, then one more call at 1_000",
            config: Config::new(1, 1_000),
            before: calls(&[("k", 0)]),
            threads: vec![calls(&[("k", 999)]), calls(&[("k", 1_000)])],
            after: calls(&[("k", 1_000)]),
        }
    }

    /// Two threads make the first call of a brand-new key at once while a third
    /// creates another key; a racy get-or-insert gives one key two states.
    pub fn new_key() -> Scenario {
        Scenario {
            name: "new key",
            what: "two threads create state for the new key k at once while a third creates key j",
            config: Config::new(2, 1_000),
            before: vec![],
            threads: vec![calls(&[("k", 5)]), calls(&[("k", 5)]), calls(&[("j", 5)])],
            after: calls(&[("k", 5), ("j", 5)]),
        }
    }

    /// The key was used, then went idle for ten thousand periods; two threads
    /// call at once. A limiter that drops or replaces an idle key's state
    /// (to save memory, or to reset it) while another thread still holds the
    /// old state lets both in where only one may pass.
    pub fn idle_key() -> Scenario {
        Scenario {
            name: "idle key",
            what: "key k is used at 0, then idle for 10_000 periods; two threads call for it at once, limit 1",
            config: Config::new(1, 1_000),
            before: calls(&[("k", 0)]),
            threads: vec![calls(&[("k", 10_000_000)]), calls(&[("k", 10_000_000)])],
            after: calls(&[("k", 10_000_000)]),
        }
    }

    /// An existing key with three units left (requests or tokens); two
    /// threads call at once. Both are allowed, so every answer's `remaining`
    /// is checked: a limiter that computes it from a state it did not act on
    /// (read before another thread's update, or re-read after it) gives two
    /// callers the same count.
    pub fn units_left() -> Scenario {
        Scenario {
            name: "units left",
            what: "key k has used one of four units at 0; two threads call for it at 1, and one more call follows",
            config: Config::new(4, 1_000),
            before: calls(&[("k", 0)]),
            threads: vec![calls(&[("k", 1)]), calls(&[("k", 1)])],
            after: calls(&[("k", 1)]),
        }
    }

    /// One thread calls just before a period boundary and one on it, after a
    /// call that used half the limit: a reset that is not atomic with the
    /// count lets one side of the boundary undo the other side's count.
    pub fn straddle() -> Scenario {
        Scenario {
            name: "straddle",
            what: "one thread calls at 999 and one at 1_000, either side of a period boundary, limit 2",
            config: Config::new(2, 1_000),
            before: calls(&[("k", 0)]),
            threads: vec![calls(&[("k", 999)]), calls(&[("k", 1_000)])],
            after: calls(&[("k", 1_000), ("k", 1_000)]),
        }
    }
}

/// What loom's own messages mean for a limiter; `bound` is the preemption
/// bound of the search that stopped.
fn explain(message: String, bound: usize) -> String {
    if message.contains("exceeded maximum number of branches") {
        format!(
            "loom stopped an execution that ran past its bound of {} (\"Model exceeded \
             maximum number of branches\"), even with at most {}: most often a \
             loop that retries without anything changing, such as a compare-and-swap retried with \
             the same stale expected value (retry with the value the failed exchange returned), or \
             a wait for a state no other thread will make. If the design really takes that many \
             lock and atomic operations, raise the bound: LOOM_MAX_BRANCHES={}.",
            count(branches(), "branch|branches"),
            count(bound, "preemption"),
            branches() * 4
        )
    } else {
        message
    }
}

/// loom's bound on the branches of one execution (`LOOM_MAX_BRANCHES`).
fn branches() -> usize {
    loom::model::Builder::new().max_branches
}

/// How many schedules a search explores at most: at the preemption bound of
/// 2 ([`FIRST`]), then, if that outgrew it, every schedule with one
/// preemption ([`SECOND`]). `KATA_LOOM_SCHEDULES` raises the second.
const FIRST: (usize, usize) = (2, 2_000);
const SECOND: (usize, usize) = (1, 50_000);

fn second_cap() -> usize {
    std::env::var("KATA_LOOM_SCHEDULES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(SECOND.1)
}

/// How one bounded search ended.
enum Search {
    /// Every schedule within the bound explored, all fine.
    Done,
    /// The bound on schedules reached, all fine so far.
    Outgrown(usize),
    /// An execution went past loom's bound on branches.
    Branches(String, Vec<Op>),
    /// An execution broke something (or panicked, or deadlocked).
    Broken(String, Vec<Op>),
}

/// One loom search of `execution` with a preemption bound and a cap on the
/// schedules explored.
fn search(
    name: &str,
    bound: usize,
    cap: usize,
    execution: Arc<dyn Fn() -> Option<String> + Send + Sync>,
) -> Search {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(bound);
    builder.max_permutations = Some(cap + 1);
    // loom looks at the cap once every `checkpoint_interval` schedules.
    builder.checkpoint_interval = 1;
    let executions = Arc::new(AtomicUsize::new(0));
    let counted = executions.clone();
    // The account of the execution that broke something, when one did.
    let broken = Arc::new(std::sync::Mutex::new(None::<String>));
    let found = broken.clone();
    let started = Instant::now();
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        crate::signals::in_model(|| {
            builder.check(move || {
                counted.fetch_add(1, Ordering::Relaxed);
                // The trace shown is the breaking execution's alone.
                crate::sync::reset_trace();
                if let Some(broken) = execution() {
                    *found.lock().unwrap_or_else(|p| p.into_inner()) = Some(broken.clone());
                    panic!("{broken}");
                }
            })
        })
    }));
    let n = executions.load(Ordering::Relaxed);
    // Shown with `--nocapture`: how much loom explored.
    crate::trial::println(format_args!(
        "loom explored {} of {name} (preemption bound {bound}) in {:.2}s",
        count(n, "execution"),
        started.elapsed().as_secs_f64()
    ));
    match result {
        Ok(()) if n >= cap => Search::Outgrown(n),
        Ok(()) => Search::Done,
        Err(payload) => {
            let found = broken.lock().unwrap_or_else(|p| p.into_inner()).take();
            let message = found
                .filter(|m| payload.downcast_ref::<String>() == Some(m))
                .or_else(take_panic)
                .unwrap_or_else(|| "the model panicked".into());
            let trace = take_trace();
            if message.contains("exceeded maximum number of branches") {
                Search::Branches(message, trace)
            } else {
                Search::Broken(message, trace)
            }
        }
    }
}

/// A loom thread running `work` whose panic does not unwind out of it (the
/// process would abort): [`both`] raises it again once it has joined.
fn spawn<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> loom::thread::JoinHandle<std::thread::Result<T>> {
    loom::thread::spawn(move || panic::catch_unwind(AssertUnwindSafe(work)))
}

/// `one` on a loom thread and `two` on this one, at once; a panic in
/// either is raised again once both have ended (one raised while the other
/// thread still runs would abort the process).
pub fn both<A: Send + 'static, B>(
    one: impl FnOnce() -> A + Send + 'static,
    two: impl FnOnce() -> B,
) -> (A, B) {
    let h = spawn(one);
    let second = panic::catch_unwind(AssertUnwindSafe(two));
    let first = h.join().unwrap_or_else(Err);
    match (first, second) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(p), _) | (_, Err(p)) => panic::resume_unwind(p),
    }
}

/// Explores a scenario with loom (preemption bound 2 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise) and returns a readable account of
/// the first execution that went wrong.
pub fn explore(algorithm: Algorithm, build: BuildShared, scenario: Scenario) -> Result<(), String> {
    let allowed = linearizations(algorithm, &scenario);
    let s = scenario.clone();
    let header = format!("loom scenario \"{}\" ({})", scenario.name, scenario.what);
    explore_with(header, move || {
        let log = CallLog::default();
        let got = execution(build, &s, &log);
        if linearizable(algorithm, &s, &got) {
            return None;
        }
        let answers = show_answers(&s, &got, "thread");
        if let Some(order) = log.one_at_a_time() {
            if let Some(wrong) = first_wrong_in_order(algorithm, &s, &got, &order, "thread") {
                let order = show_order(&s, &order, "thread");
                return Some(format!(
                    "{}{answers}",
                    not_a_race(&wrong, &order, "schedule")
                ));
            }
        }
        let mut text = format!(
            "{A_RACE}\n{answers}One-at-a-time orders give one of these (a call that comes late for its key in that order may also be denied):\n",
        );
        for a in &allowed {
            text.push_str(&format!("  {}\n", compact(a, "thread")));
        }
        Some(text)
    })
}

/// Runs `execution` under loom over the interleavings of its threads and
/// returns what the first execution that broke something broke, with its
/// schedule operation by operation. The search is bounded so that any design
/// finishes in seconds: first every schedule with up to two preemptions, at
/// most [`FIRST`]`.1` of them; if that outgrows its bound (a design with
/// spin loops or many atomics has far more schedules), every schedule with
/// one preemption, at most [`SECOND`]`.1`. A search that outgrows even that
/// is reported as such, with the bound to raise; never as a hang.
/// `LOOM_MAX_PREEMPTIONS` runs one search at that bound instead.
pub fn explore_with(
    header: String,
    execution: impl Fn() -> Option<String> + Send + Sync + 'static,
) -> Result<(), String> {
    let name = header.clone();
    let execution: Arc<dyn Fn() -> Option<String> + Send + Sync> = Arc::new(execution);
    let work = move || {
        crate::signals::before_loom();
        let fixed = loom::model::Builder::new().preemption_bound;
        let steps = match fixed {
            Some(bound) => vec![(bound, second_cap())],
            None => vec![FIRST, (SECOND.0, second_cap())],
        };
        let mut outgrown = None;
        for (bound, cap) in steps {
            match search(&name, bound, cap, execution.clone()) {
                Search::Done => return Ok(()),
                Search::Broken(message, trace) => return Err((explain(message, bound), trace)),
                Search::Branches(message, trace) if bound <= SECOND.0 || fixed.is_some() => {
                    return Err((explain(message, bound), trace))
                }
                // Too big at this bound: the next, smaller search decides.
                Search::Branches(..) => {
                    outgrown = Some(format!("past {}", count(branches(), "branch|branches")))
                }
                Search::Outgrown(n) => outgrown = Some(count(n, "schedule")),
            }
        }
        let (bound, cap) = (SECOND.0, second_cap());
        Err((
            format!(
                "loom's search outgrew its bound: it explored {} with at most {} and had more \
                 to go (with two preemptions it had already gone {}). \
                 This is not a hang: every schedule ended, and none broke anything. A call with \
                 many lock and atomic operations (a spin loop, a retry) has that many more \
                 schedules; to explore them all, raise the bound: KATA_LOOM_SCHEDULES={}.",
                count(cap, "schedule"),
                count(bound, "preemption"),
                outgrown.unwrap_or_default(),
                cap * 10
            ),
            Vec::new(),
        ))
    };
    // Each search is bounded; only a real hang inside one execution (a loop
    // with no lock or atomic in it) should reach this.
    match watched(time_limit() * 6, |_| "a loom execution".into(), work) {
        Ok(Ok(())) => Ok(()),
        Ok(Err((message, trace))) if trace.is_empty() => Err(format!("{header}\n{message}")),
        Ok(Err((message, trace))) => Err(format!(
            "{header}\n{message}\nThe schedule of that execution, operation by operation:\n{}",
            show_trace(&trace)
        )),
        Err(stop) => Err(format!("{header}: {}", stop.text())),
    }
}

#[cfg(test)]
mod tests;
