//! A case: a limiter's configuration and its steps (requests and sweeps),
//! what each step showed in the model and in the subject, and the first
//! step where they differ.

use std::fmt;
use std::sync::Arc;

use crate::decision::{describe, Decision};
use crate::memory::drive::{Bounded, BoundedVariant};
use crate::memory::metrics::{expected_metrics, same_metrics, Metrics, Recorded};
use crate::memory::model::BoundedModel;
use crate::memory::{Bounds, Rule};
use crate::render::call;
use crate::time::Timestamp;
use crate::timeline::{parse_decisions, Request, Timeline};
use crate::watchdog::progress;

/// One step of a case: a request, or a sweep at an instant.
#[derive(Clone, PartialEq, Eq)]
pub enum Step {
    Check(Request),
    Sweep(Timestamp),
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Check(r) => write!(f, "{r:?}"),
            Step::Sweep(at) => write!(f, "sweep@{}", at.as_nanos()),
        }
    }
}

impl Step {
    pub(crate) fn show(&self) -> String {
        match self {
            Step::Check(r) => call(&r.key, r.now),
            Step::Sweep(at) => format!("sweep({at})"),
        }
    }
}

/// A limiter's configuration and what is asked of it.
#[derive(Clone)]
pub struct Case {
    pub rule: Rule,
    pub bounds: Bounds,
    /// Asked through the shadow wrapper (swept through `Shadow::limiter`).
    pub shadow: bool,
    pub steps: Vec<Step>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.describe())?;
        for s in &self.steps {
            write!(f, " {s:?}")?;
        }
        Ok(())
    }
}

impl Case {
    pub(super) fn describe(&self) -> String {
        let (limit, period) = self.rule.parts();
        let config = crate::timeline::Config::new(limit, period.as_nanos() as u64);
        format!(
            "{}; max_keys {}, overflow {:?}{}:",
            self.rule.algorithm().describe(&config),
            self.bounds.max_keys,
            self.bounds.overflow,
            if self.shadow { ", in shadow mode" } else { "" }
        )
    }
}

/// What one step showed.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(super) struct Seen {
    pub(super) answer: Answer,
    /// `keys_held()` after the step.
    pub(super) held: usize,
    pub(super) metrics: Metrics,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Answer {
    Decision(Decision),
    Swept(usize),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Decision(d) => f.write_str(&describe(d)),
            Answer::Swept(n) => write!(f, "forgot {n} key{}", if *n == 1 { "" } else { "s" }),
        }
    }
}

pub(super) fn nth_step(case: &Case, i: usize) -> String {
    match case.steps.get(i) {
        Some(s) => format!("step #{}, {}", i + 1, s.show()),
        None => format!("step #{}", i + 1),
    }
}

/// Steps in timeline notation, with `sweep@nanos` among the requests.
pub fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for token in text.split_whitespace() {
        if let Some(at) = token.strip_prefix("sweep@") {
            let at: u64 = at
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{token:?}: the instant of a sweep is whole nanoseconds"))?;
            steps.push(Step::Sweep(Timestamp::from_nanos(at)));
        } else {
            let t = Timeline::parse(crate::timeline::Config::new(1, 1), token)?;
            steps.extend(t.requests.into_iter().map(Step::Check));
        }
    }
    Ok(steps)
}

/// Answers in the kata's notation, `=n` for a sweep that forgot n keys.
pub(super) fn parse_answers(text: &str) -> Result<Vec<Answer>, String> {
    text.split_whitespace()
        .map(|token| match token.strip_prefix('=') {
            Some(n) => n
                .parse()
                .map(Answer::Swept)
                .map_err(|_| format!("{token:?}: a sweep's answer is =n")),
            None => parse_decisions(token).map(|d| Answer::Decision(d[0])),
        })
        .collect()
}

/// The contract's answers to a case, step by step.
pub(super) fn model_run(case: &Case) -> Vec<Seen> {
    let mut model = BoundedModel::new(case.rule, case.bounds.clone());
    case.steps
        .iter()
        .map(|s| {
            let answer = match s {
                Step::Check(r) => {
                    Answer::Decision(model.check(&r.key, r.now.as_nanos(), case.shadow))
                }
                Step::Sweep(at) => Answer::Swept(model.sweep(at.as_nanos())),
            };
            Seen {
                answer,
                held: model.held(),
                metrics: expected_metrics(&case.bounds.policy, &model.counts),
            }
        })
        .collect()
}

/// A subject's answers to a case, step by step, with its metrics read by a
/// recorder of the run's own.
pub(super) fn subject_run(v: BoundedVariant, case: &Case) -> Result<Vec<Seen>, String> {
    let recorder = Recorded::default();
    metrics::with_local_recorder(&recorder, || {
        let built = if case.shadow {
            (v.shadow)(case.rule, case.bounds.clone())
        } else {
            (v.build)(case.rule, case.bounds.clone())
        };
        let subject: Arc<dyn Bounded> = built.map_err(|e| {
            format!(
                "new({:?}, {:?}) returned Err({e:?}) for a valid configuration",
                case.rule, case.bounds
            )
        })?;
        let mut seen = Vec::with_capacity(case.steps.len());
        for (i, s) in case.steps.iter().enumerate() {
            progress(i);
            let answer = match s {
                Step::Check(r) => Answer::Decision(subject.check(&r.key, r.now)),
                Step::Sweep(at) => Answer::Swept(subject.sweep(*at)),
            };
            seen.push(Seen {
                answer,
                held: subject.keys_held(),
                metrics: recorder.read(),
            });
        }
        Ok(seen)
    })
}

pub(super) fn compare_run(v: BoundedVariant, case: &Case) -> Result<(), String> {
    judge(&model_run(case), &subject_run(v, case)?)
        .map_err(|e| format!("{}\n\n{e}", show_case(case)))
}

fn show_case(case: &Case) -> String {
    let mut out = case.describe();
    for (i, s) in case.steps.iter().enumerate() {
        out.push_str(&format!("\n  #{:<3} {}", i + 1, s.show()));
    }
    out
}

/// The first step where the subject shows something else than the model.
pub(super) fn judge(want: &[Seen], got: &[Seen]) -> Result<(), String> {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w.answer != g.answer {
            return Err(format!(
                "step #{}: yours answered {}; the contract says {}.",
                i + 1,
                g.answer,
                w.answer
            ));
        }
        if w.held != g.held {
            return Err(format!(
                "step #{} answered as the contract says, but then keys_held() is {}; the \
                 contract holds {} (a key is forgotten by a sweep, or to make room for a new \
                 key in a full store, exactly when its state has become a fresh key's).",
                i + 1,
                g.held,
                w.held
            ));
        }
        if let Err(e) = same_metrics(&w.metrics, &g.metrics) {
            return Err(format!("after step #{}: {e}", i + 1));
        }
    }
    Ok(())
}
