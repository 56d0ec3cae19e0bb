//! One execution of a scenario and its judgement: each call logged as it
//! begins and returns, and the answers held to some one-at-a-time order of
//! the same calls by the model.

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;

use crate::decision::{describe, Decision, RateLimiter};
use crate::drive::BuildShared;
use crate::models::{Algorithm, Model};
use crate::render::call;
use crate::sync::{note, reset_trace};
use crate::timeline::Request;

use super::Scenario;

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

pub(super) fn execution(build: BuildShared, s: &Scenario, log: &CallLog) -> Answers {
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
