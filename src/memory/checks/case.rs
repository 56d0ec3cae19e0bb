//! A case: a limiter's configuration and its steps (requests and sweeps),
//! what each step showed in the model and in the subject, and the first
//! step where they differ.

use std::fmt;
use std::sync::Arc;

use crate::decision::{describe, Decision};
use crate::memory::drive::{Bounded, BoundedVariant};
use crate::memory::{Bounds, Rule};
use crate::render::call;
use crate::store::metrics::{expected_metrics, same_metrics, Metrics, Recorded};
use crate::store::model::BoundedModel;
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

impl Case {
    /// A case as a failure prints it (its `Debug`): `limit 2 per window of
    /// 1_000ns; max_keys 10, overflow Deny: a@0 a@10 sweep@999`, or
    /// `capacity 3, one token every 1_000ns; …`, with `, in shadow mode`
    /// before the colon for a case asked through the shadow wrapper.
    pub fn read(text: &str) -> Result<Case, String> {
        let (head, steps) = text
            .trim()
            .split_once(": ")
            .ok_or("a case is `<rule>; max_keys <n>, overflow <Deny|Admit>: <steps>`")?;
        let (head, shadow) = match head.strip_suffix(", in shadow mode") {
            Some(head) => (head, true),
            None => (head, false),
        };
        let (rule, bounds) = head
            .split_once("; max_keys ")
            .ok_or("a case's configuration ends with `; max_keys <n>, overflow <Deny|Admit>`")?;
        let (max_keys, overflow) = bounds
            .split_once(", overflow ")
            .ok_or("`max_keys <n>` is followed by `, overflow <Deny|Admit>`")?;
        let number = |text: &str, what: &str| -> Result<u64, String> {
            text.trim()
                .trim_end_matches("ns")
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{what} {text:?} is not a whole number"))
        };
        let rule = if let Some(rest) = rule.strip_prefix("limit ") {
            let (limit, window) = rest
                .split_once(" per window of ")
                .ok_or("a fixed window is `limit <n> per window of <n>ns`")?;
            Rule::FixedWindow {
                limit: number(limit, "the limit")?,
                window: std::time::Duration::from_nanos(number(window, "the window")?),
            }
        } else if let Some(rest) = rule.strip_prefix("capacity ") {
            let (capacity, every) = rest
                .split_once(", one token every ")
                .ok_or("a token bucket is `capacity <n>, one token every <n>ns`")?;
            Rule::TokenBucket {
                capacity: number(capacity, "the capacity")?,
                refill_every: std::time::Duration::from_nanos(number(
                    every,
                    "the refill interval",
                )?),
            }
        } else {
            return Err(format!("{rule:?} is neither `limit …` nor `capacity …`"));
        };
        let overflow = match overflow.trim() {
            "Deny" => crate::memory::Overflow::Deny,
            "Admit" => crate::memory::Overflow::Admit,
            other => return Err(format!("overflow {other:?} is neither Deny nor Admit")),
        };
        let max_keys = number(max_keys, "max_keys")? as usize;
        Ok(Case {
            rule,
            bounds: Bounds::new("compare", max_keys, overflow),
            shadow,
            steps: parse_steps(steps)?,
        })
    }

    /// The command that draws this case, the learner's answers beside the
    /// reference's, when it is short enough to type (`None` for the
    /// thousands of keys of a flood, or a key the shell would need escaped).
    pub fn replay(&self) -> Option<String> {
        let text = format!("{self:?}");
        let readable = text.len() <= 400 && !text.contains('\'') && !text.contains('\\');
        let back = Case::read(&text).ok()?;
        let same = format!("{back:?}") == text;
        (readable && same).then(|| {
            format!(
                "\n\nreplay it beside the reference's answers:\n  cargo run -- compare 9 '{text}'"
            )
        })
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
            Answer::Swept(n) => write!(f, "forgot {}", crate::text::count(*n, "key")),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A case reads back from what a failure prints, and its replay command
    /// is that text; a case too long to type has none.
    #[test]
    fn a_printed_case_reads_back() {
        for text in [
            "limit 2 per window of 1_000ns; max_keys 10, overflow Deny: a@0 a@10 sweep@999 sweep@1000 a@1000",
            "capacity 3, one token every 1_000ns; max_keys 2, overflow Admit, in shadow mode: a@0 b@400 sweep@4000",
        ] {
            let case = Case::read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(format!("{case:?}"), text);
            let replay = case.replay().expect("a short case replays");
            assert!(
                replay.ends_with(&format!("cargo run -- compare 9 '{text}'")),
                "{replay}"
            );
        }
        let mut long =
            Case::read("limit 1 per window of 1ns; max_keys 1, overflow Deny: a@0").unwrap();
        long.steps = (0..200)
            .map(|i| Step::Check(Request::new(&format!("key-{i}"), 0)))
            .collect();
        assert_eq!(long.replay(), None);
        for bad in [
            "a@0",
            "limit x per window of 1ns; max_keys 1, overflow Deny: a@0",
            "limit 1 per window of 1ns; max_keys 1, overflow Maybe: a@0",
        ] {
            assert!(Case::read(bad).is_err(), "{bad}");
        }
    }
}
