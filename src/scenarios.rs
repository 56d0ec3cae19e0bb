//! Loom scenarios: small concurrent situations in which the classic races of
//! rate limiters show up, explored over every thread interleaving (up to a
//! preemption bound) and judged against the model: the answers of calls that
//! overlap must be those of some one-at-a-time order of the same calls.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::decision::{describe, Decision, RateLimiter};
use crate::drive::BuildShared;
use crate::files::tidy_path;
use crate::models::{Algorithm, Model};
use crate::render::call;
use crate::sync::{note, reset_trace, take_trace, Op};
use crate::text::count;
use crate::timeline::{Config, Request};
use crate::watchdog::{take_panic, time_limit, watched};

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

/// What one execution answered.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) struct Answers {
    pub(crate) before: Vec<Decision>,
    pub(crate) threads: Vec<Vec<Decision>>,
    pub(crate) after: Vec<Decision>,
}

fn checked(limiter: &dyn RateLimiter, r: &Request) -> Decision {
    note(format!("{} called", call(&r.key, r.now)));
    let d = limiter.check(&r.key, r.now);
    note(format!("{} -> {}", call(&r.key, r.now), describe(&d)));
    d
}

/// When each call of the threads of one execution began and returned, in
/// the order it happened: `(thread, its call's index, returned)`. Its
/// clones share one log (loom runs every thread of an execution on one OS
/// thread; the lock is std's, not a step of the schedule).
#[derive(Clone, Default)]
pub(crate) struct CallLog(Arc<std::sync::Mutex<Vec<(usize, usize, bool)>>>);

impl CallLog {
    /// Runs `call`, the `i`th of thread `thread`, logged.
    pub(crate) fn around<T>(&self, thread: usize, i: usize, call: impl FnOnce() -> T) -> T {
        self.push(thread, i, false);
        let answer = call();
        self.push(thread, i, true);
        answer
    }

    fn push(&self, thread: usize, i: usize, returned: bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((thread, i, returned));
    }

    /// The calls in the order they ran, if no two overlapped: each returned
    /// before the next began.
    pub(crate) fn one_at_a_time(&self) -> Option<Vec<(usize, usize)>> {
        let events = self.0.lock().unwrap_or_else(|p| p.into_inner());
        events
            .chunks(2)
            .map(|pair| match pair {
                [(t, i, false), (u, j, true)] if (t, i) == (u, j) => Some((*t, *i)),
                _ => None,
            })
            .collect()
    }
}

/// What an account of a broken execution opens with when its calls
/// overlapped: the interleaving is to blame.
pub(crate) const A_RACE: &str =
    "loom found a schedule in which the answers match no one-at-a-time order of the same calls:";

/// What it opens with when no two calls overlapped, so that the answers
/// are wrong whatever the interleaving: `first_wrong` is the first answer
/// that is not the contract's, `order` the calls as they ran, `schedule`
/// what ran them (`schedule`, `order of Redis commands`).
pub(crate) fn not_a_race(first_wrong: &str, order: &str, schedule: &str) -> String {
    format!(
        "even one call at a time, these answers are not the contract's: {first_wrong}.\n\
         In this {schedule} no two calls overlapped (each returned before the next began: \
         {order}), so it is the answers that are wrong, not the interleaving. The checks that \
         are not races (examples, properties) find such a mistake with one call at a time: \
         make them pass first.\n"
    )
}

/// One of the scenario's callers by name: threads counted from 0, as loom
/// counts them (thread 0 is the main thread), app servers from 1.
pub(crate) fn caller(who: &str, t: usize) -> String {
    if who == "thread" {
        format!("{who} {t}")
    } else {
        format!("{who} {}", t + 1)
    }
}

/// The threads' calls in `order`: `thread 1 check("k", 0ns), then thread 0
/// check("k", 0ns)`.
pub(crate) fn show_order(s: &Scenario, order: &[(usize, usize)], who: &str) -> String {
    order
        .iter()
        .map(|&(t, i)| {
            let r = &s.threads[t][i];
            format!("{} {}", caller(who, t), call(&r.key, r.now))
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

/// The first answer of `got` that is not the contract's when the threads'
/// calls run one at a time in `order` (after the calls before the threads,
/// and before those after them), with the contract's; `None` if there is
/// none.
pub(crate) fn first_wrong_in_order(
    algorithm: Algorithm,
    s: &Scenario,
    got: &Answers,
    order: &[(usize, usize)],
    who: &str,
) -> Option<String> {
    let mut model = algorithm.model(s.config);
    let mut wrong = |whose: String, r: &Request, answer: &Decision| {
        let now = r.now.as_nanos();
        let at = format!(
            "{whose}{} answered {}",
            call(&r.key, r.now),
            describe(answer)
        );
        if model.is_late(&r.key, now) {
            (!model.accept_late(&r.key, now, answer)).then(|| {
                format!(
                    "{at}; that call is late (its key was already called at a later instant), \
                     and a late call may be denied, or allowed only where the limit has room, \
                     which here it has not"
                )
            })
        } else {
            let want = model.decide(&r.key, now);
            (want != *answer).then(|| format!("{at}; the contract says {}", describe(&want)))
        }
    };
    let before = s.before.iter().zip(&got.before);
    let threads = order.iter().map(|&(t, i)| {
        (
            format!("{}: ", caller(who, t)),
            &s.threads[t][i],
            &got.threads[t][i],
        )
    });
    let after = s.after.iter().zip(&got.after);
    before
        .map(|(r, a)| ("before the threads: ".to_string(), r, a))
        .chain(threads)
        .chain(after.map(|(r, a)| ("after joining: ".to_string(), r, a)))
        .find_map(|(whose, r, a)| wrong(whose, r, a))
}

fn execution(build: BuildShared, s: &Scenario, log: &CallLog) -> Answers {
    reset_trace();
    let limiter: Arc<dyn RateLimiter> =
        build(s.config.limit, s.config.period).unwrap_or_else(|e| {
            panic!(
                "new({}, {:?}) returned Err({e:?}) for a valid configuration",
                s.config.limit, s.config.period
            )
        });
    let before = s.before.iter().map(|r| checked(&*limiter, r)).collect();
    let handles: Vec<_> = s.threads[1..]
        .iter()
        .enumerate()
        .map(|(t, list)| {
            let (limiter, list, log) = (limiter.clone(), list.clone(), log.clone());
            loom::thread::spawn(move || {
                // A panic must not unwind out of a loom thread (the process
                // would abort): it ends the thread, and the main thread
                // raises it again at join.
                panic::catch_unwind(AssertUnwindSafe(|| {
                    list.iter()
                        .enumerate()
                        .map(|(i, r)| log.around(t + 1, i, || checked(&*limiter, r)))
                        .collect::<Vec<_>>()
                }))
            })
        })
        .collect();
    let mut threads = vec![s.threads[0]
        .iter()
        .enumerate()
        .map(|(i, r)| log.around(0, i, || checked(&*limiter, r)))
        .collect()];
    for h in handles {
        let joined = h.join().unwrap_or_else(Err);
        threads.push(joined.unwrap_or_else(|p| panic::resume_unwind(p)));
    }
    let after = s.after.iter().map(|r| checked(&*limiter, r)).collect();
    Answers {
        before,
        threads,
        after,
    }
}

/// True when some one-at-a-time order of the scenario's calls gives `got`:
/// each call that is in order for its key must get the model's exact answer;
/// a call that is late in that order (its key has seen a later timestamp) may
/// get any answer the contract allows for late requests.
pub(crate) fn linearizable(algorithm: Algorithm, s: &Scenario, got: &Answers) -> bool {
    fn take(model: &mut Model, r: &Request, answer: &Decision) -> bool {
        let now = r.now.as_nanos();
        if model.is_late(&r.key, now) {
            model.accept_late(&r.key, now, answer)
        } else {
            model.decide(&r.key, now) == *answer
        }
    }
    fn go(s: &Scenario, got: &Answers, model: &Model, at: &mut Vec<usize>) -> bool {
        let mut done = true;
        for t in 0..s.threads.len() {
            let Some(r) = s.threads[t].get(at[t]) else {
                continue;
            };
            done = false;
            let mut m = model.clone();
            if take(&mut m, r, &got.threads[t][at[t]]) {
                at[t] += 1;
                let found = go(s, got, &m, at);
                at[t] -= 1;
                if found {
                    return true;
                }
            }
        }
        if !done {
            return false;
        }
        let mut m = model.clone();
        s.after
            .iter()
            .zip(&got.after)
            .all(|(r, a)| take(&mut m, r, a))
    }
    let mut model = algorithm.model(s.config);
    s.before
        .iter()
        .zip(&got.before)
        .all(|(r, a)| take(&mut model, r, a))
        && go(s, got, &model, &mut vec![0; s.threads.len()])
}

/// Every outcome a one-at-a-time order of the scenario's calls can give,
/// with the model's own answers to late calls: shown when a check fails.
pub(crate) fn linearizations(algorithm: Algorithm, s: &Scenario) -> Vec<Answers> {
    fn go(
        s: &Scenario,
        model: &Model,
        at: &mut Vec<usize>,
        so_far: &mut Vec<Vec<Decision>>,
        out: &mut Vec<(Vec<Vec<Decision>>, Model)>,
    ) {
        let mut moved = false;
        for t in 0..s.threads.len() {
            if let Some(r) = s.threads[t].get(at[t]) {
                moved = true;
                let mut m = model.clone();
                let d = m.decide(&r.key, r.now.as_nanos());
                at[t] += 1;
                so_far[t].push(d);
                go(s, &m, at, so_far, out);
                so_far[t].pop();
                at[t] -= 1;
            }
        }
        if !moved {
            out.push((so_far.clone(), model.clone()));
        }
    }
    let mut model = algorithm.model(s.config);
    let before = s
        .before
        .iter()
        .map(|r| model.decide(&r.key, r.now.as_nanos()))
        .collect::<Vec<_>>();
    let mut ends = Vec::new();
    go(
        s,
        &model,
        &mut vec![0; s.threads.len()],
        &mut vec![vec![]; s.threads.len()],
        &mut ends,
    );
    let mut outcomes: Vec<Answers> = ends
        .into_iter()
        .map(|(threads, mut m)| Answers {
            before: before.clone(),
            threads,
            after: s
                .after
                .iter()
                .map(|r| m.decide(&r.key, r.now.as_nanos()))
                .collect(),
        })
        .collect();
    outcomes.dedup();
    let mut unique: Vec<Answers> = Vec::new();
    for o in outcomes {
        if !unique.contains(&o) {
            unique.push(o);
        }
    }
    unique
}

/// The answers, one line per thread; `who` names a thread (`thread`, `app
/// server`).
pub(crate) fn show_answers(s: &Scenario, a: &Answers, who: &str) -> String {
    let line = |reqs: &[Request], ds: &[Decision]| {
        reqs.iter()
            .zip(ds)
            .map(|(r, d)| format!("{} -> {}", call(&r.key, r.now), describe(d)))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = String::new();
    if !s.before.is_empty() {
        out.push_str(&format!(
            "  before the threads:  {}\n",
            line(&s.before, &a.before)
        ));
    }
    for (t, reqs) in s.threads.iter().enumerate() {
        let label = if t == 0 && who == "thread" {
            "thread 0 (main):".to_string()
        } else {
            format!("{}:", caller(who, t))
        };
        out.push_str(&format!("  {label:<20} {}\n", line(reqs, &a.threads[t])));
    }
    if !s.after.is_empty() {
        out.push_str(&format!(
            "  after joining:       {}\n",
            line(&s.after, &a.after)
        ));
    }
    out
}

pub(crate) fn compact(a: &Answers, who: &str) -> String {
    let join = |ds: &[Decision]| {
        ds.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut parts: Vec<String> = a
        .threads
        .iter()
        .enumerate()
        .map(|(t, ds)| format!("{}: {}", caller(who, t), join(ds)))
        .collect();
    if !a.after.is_empty() {
        parts.push(format!("after: {}", join(&a.after)));
    }
    parts.join(" | ")
}

/// The operations of the failing execution, one line each.
fn show_trace(ops: &[Op]) -> String {
    const MOST: usize = 80;
    let lines: Vec<String> = ops
        .iter()
        .map(|op| {
            let file = tidy_path(op.at.file());
            if file.ends_with("src/scenarios.rs") {
                format!("  thread {}  {}", op.thread, op.what)
            } else {
                format!(
                    "  thread {}      {}:{}  {}",
                    op.thread,
                    file,
                    op.at.line(),
                    op.what
                )
            }
        })
        .collect();
    let lines = collapse_repeats(lines);
    let skip = lines.len().saturating_sub(MOST);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("  ... {} earlier\n", count(skip, "line")));
    }
    for line in &lines[skip..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Writes a block of up to four lines that repeats three times or more in a
/// row once, followed by how many times it came: a loop that retries
/// without progress reads as one pass and a count.
fn collapse_repeats(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    'next: while i < lines.len() {
        for size in 1..=4 {
            let block = &lines[i..(i + size).min(lines.len())];
            if block.len() < size {
                break;
            }
            let times = (1..)
                .take_while(|k| {
                    let start = i + k * size;
                    start + size <= lines.len() && lines[start..start + size] == *block
                })
                .count()
                + 1;
            if times >= 3 {
                out.extend(block.iter().cloned());
                out.push(format!(
                    "  ... the {} repeated × {times}",
                    if size == 1 {
                        "line above".to_string()
                    } else {
                        format!("{size} lines above")
                    }
                ));
                i += times * size;
                continue 'next;
            }
        }
        out.push(lines[i].clone());
        i += 1;
    }
    out
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
                if let Some(broken) = execution() {
                    *found.lock().unwrap_or_else(|p| p.into_inner()) = Some(broken.clone());
                    panic!("{broken}");
                }
            })
        })
    }));
    let n = executions.load(Ordering::Relaxed);
    // Shown with `--nocapture`: how much loom explored.
    println!(
        "loom explored {} of {name} (preemption bound {bound}) in {:.2}s",
        count(n, "execution"),
        started.elapsed().as_secs_f64()
    );
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
mod tests {
    use super::*;
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
}
