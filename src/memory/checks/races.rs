//! Lesson 09's races: sweeps and a full store under loom. Each scenario's
//! answers, what its sweeps forgot, the keys held at the end and every
//! metric series at the end (the keys gauge among them) must be those of
//! some one-at-a-time order of the same calls, by the model.

use std::time::Duration;

use super::{parse_steps, Answer, Case, Step};
use crate::memory::drive::{Bounded, BuildBounded, RuleKind};
use crate::memory::{Bounds, Overflow, Rule};
use crate::scenarios::{not_a_race, CallLog, A_RACE};
use crate::store::metrics::{expected_metrics, same_metrics, Metrics, Recorded};
use crate::store::model::BoundedModel;

/// A step's answer by the model, which takes it.
fn apply(m: &mut BoundedModel, s: &Step) -> Answer {
    match s {
        Step::Check(r) => Answer::Decision(m.check(&r.key, r.now.as_nanos(), false)),
        Step::Sweep(at) => Answer::Swept(m.sweep(at.as_nanos())),
    }
}

/// A concurrent situation of lesson 09: steps before the threads, each
/// thread's steps (thread 0 is loom's main thread), steps after the join,
/// then `keys_held()`.
#[derive(Clone, Debug)]
pub struct Race {
    pub name: &'static str,
    pub what: &'static str,
    pub rule: Rule,
    pub bounds: Bounds,
    pub before: Vec<Step>,
    pub threads: Vec<Vec<Step>>,
    pub after: Vec<Step>,
}

/// What one execution of a race answered.
#[derive(Clone, PartialEq, Eq)]
struct Raced {
    before: Vec<Answer>,
    threads: Vec<Vec<Answer>>,
    after: Vec<Answer>,
    held: usize,
    /// Every series at the end: a gauge set from a count read under the
    /// lock but written after it is released can end on a stale count.
    metrics: Metrics,
}

impl Race {
    fn rule(kind: RuleKind, limit: u64) -> Rule {
        kind.rule(limit, Duration::from_nanos(1_000))
    }

    fn steps(text: &str) -> Vec<Step> {
        parse_steps(text).expect("a valid race")
    }

    /// A sweep takes a key that is fresh at 1_000 while a request at 1_000
    /// moves the key's state on: a sweep that picks its keys, lets go of
    /// the lock and then removes them forgets a key that is live again.
    pub fn sweep_races_an_update(kind: RuleKind) -> Race {
        Race {
            name: "a sweep races an update",
            what:
                "k is fresh at 1_000; one thread sweeps at 1_000 while another asks for k at 1_000",
            rule: Race::rule(kind, 2),
            bounds: Bounds::new("race", 4, Overflow::Deny),
            before: Race::steps(match kind {
                RuleKind::FixedWindow | RuleKind::SlidingLog => "k@999",
                RuleKind::TokenBucket | RuleKind::Gcra => "k@0",
            }),
            threads: vec![Race::steps("sweep@1000"), Race::steps("k@1000")],
            after: Race::steps("k@1000"),
        }
    }

    /// A store of one key, which is fresh at 1_000; two new keys arrive at
    /// 1_000: one takes the slot, the other gets the overflow answer.
    pub fn two_new_keys_and_one_slot(kind: RuleKind) -> Race {
        Race {
            name: "two new keys and one slot",
            what:
                "a store of one key holds a, fresh at 1_000; b and c arrive at 1_000 on two threads",
            rule: Race::rule(kind, 1),
            bounds: Bounds::new("race", 1, Overflow::Deny),
            before: Race::steps("a@0"),
            threads: vec![Race::steps("b@1000"), Race::steps("c@1000")],
            after: vec![],
        }
    }

    /// Two new keys arrive at once in a store with room for both: the keys
    /// gauge must end at 2. A gauge set from a count read under the lock,
    /// or read again after it, but set after it is released, can end at 1.
    pub fn two_new_keys_with_room(kind: RuleKind) -> Race {
        Race {
            name: "two new keys with room",
            what: "a store of four keys, empty; b and c arrive at 0 on two threads",
            rule: Race::rule(kind, 1),
            bounds: Bounds::new("race", 4, Overflow::Deny),
            before: vec![],
            threads: vec![Race::steps("b@0"), Race::steps("c@0")],
            after: vec![],
        }
    }

    /// Two calls for one key, at 2_000 and at 999: whichever comes second
    /// is answered at 2_000. A clock moved on outside the store's lock lets
    /// the call at 999 decide at 999 after the other changed the state.
    pub fn one_clock_for_two_calls(kind: RuleKind) -> Race {
        Race {
            name: "one clock for two calls",
            what: "one thread asks for a at 2_000, another for a at 999, limit 1; then a at 2_000",
            rule: Race::rule(kind, 1),
            bounds: Bounds::new("race", 4, Overflow::Deny),
            before: vec![],
            threads: vec![Race::steps("a@2000"), Race::steps("a@999")],
            after: Race::steps("a@2000"),
        }
    }

    pub(crate) fn case(&self, steps: Vec<Step>) -> Case {
        Case {
            rule: self.rule,
            bounds: self.bounds.clone(),
            shadow: false,
            steps,
        }
    }

    /// One execution under loom; what it broke, if anything.
    pub(crate) fn breaks(&self, build: BuildBounded) -> Option<String> {
        // loom runs every thread of an execution on this OS thread, so a
        // recorder local to it hears them all.
        let recorder = Recorded::under_loom();
        metrics::with_local_recorder(&recorder, || self.breaks_recorded(build, &recorder))
    }

    fn breaks_recorded(&self, build: BuildBounded, recorder: &Recorded) -> Option<String> {
        crate::sync::reset_trace();
        let limiter = build(self.rule, self.bounds.clone()).unwrap_or_else(|e| {
            panic!(
                "new({:?}, {:?}) returned Err({e:?}) for a valid configuration",
                self.rule, self.bounds
            )
        });
        let ask = |l: &dyn Bounded, s: &Step| -> Answer {
            crate::sync::note(format!("{} called", s.show()));
            let a = match s {
                Step::Check(r) => Answer::Decision(l.check(&r.key, r.now)),
                Step::Sweep(at) => Answer::Swept(l.sweep(*at)),
            };
            crate::sync::note(format!("{} -> {a}", s.show()));
            a
        };
        let log = CallLog::default();
        let before = self.before.iter().map(|s| ask(&*limiter, s)).collect();
        let handles: Vec<_> = self.threads[1..]
            .iter()
            .enumerate()
            .map(|(t, list)| {
                let (limiter, list, log) = (limiter.clone(), list.clone(), log.clone());
                loom::thread::spawn(move || {
                    // A panic must not unwind out of a loom thread.
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        list.iter()
                            .enumerate()
                            .map(|(i, s)| log.around(t + 1, i, || ask(&*limiter, s)))
                            .collect::<Vec<_>>()
                    }))
                })
            })
            .collect();
        let mut threads = vec![self.threads[0]
            .iter()
            .enumerate()
            .map(|(i, s)| log.around(0, i, || ask(&*limiter, s)))
            .collect::<Vec<_>>()];
        for h in handles {
            let joined = h.join().unwrap_or_else(Err);
            threads.push(joined.unwrap_or_else(|p| std::panic::resume_unwind(p)));
        }
        let after = self.after.iter().map(|s| ask(&*limiter, s)).collect();
        let got = Raced {
            before,
            threads,
            after,
            held: limiter.keys_held(),
            metrics: recorder.read(),
        };
        let allowed = self.orders();
        // Zero-valued series count as absent (a counter registered early).
        let matches = |a: &Raced| {
            (&a.before, &a.threads, &a.after, a.held)
                == (&got.before, &got.threads, &got.after, got.held)
                && same_metrics(&a.metrics, &got.metrics).is_ok()
        };
        if allowed.iter().any(matches) {
            return None;
        }
        let this = format!("this execution: {}\n", self.show(&got));
        if let Some(order) = log.one_at_a_time() {
            if let Some(wrong) = self.first_wrong_in_order(&got, &order) {
                let shown = order
                    .iter()
                    .map(|&(t, i)| format!("thread {t} {}", self.threads[t][i].show()))
                    .collect::<Vec<_>>()
                    .join(", then ");
                return Some(format!("{}{this}", not_a_race(&wrong, &shown, "schedule")));
            }
        }
        let mut text = format!("{A_RACE}\n{this}one-at-a-time orders give one of these:\n");
        for a in &allowed {
            text.push_str(&format!("  {}\n", self.show(a)));
        }
        Some(text)
    }

    /// The first answer of `got` (then the keys held, then the metrics)
    /// that is not the contract's when the threads' steps run one at a time
    /// in `order`; `None` if there is none.
    fn first_wrong_in_order(&self, got: &Raced, order: &[(usize, usize)]) -> Option<String> {
        let mut model = BoundedModel::new(self.rule, self.bounds.clone());
        let before = self
            .before
            .iter()
            .zip(&got.before)
            .map(|(s, a)| ("before: ".to_string(), s, a));
        let threads = order.iter().map(|&(t, i)| {
            (
                format!("thread {t}: "),
                &self.threads[t][i],
                &got.threads[t][i],
            )
        });
        let after = self
            .after
            .iter()
            .zip(&got.after)
            .map(|(s, a)| ("after: ".to_string(), s, a));
        for (whose, step, answer) in before.chain(threads).chain(after) {
            let want = apply(&mut model, step);
            if want != *answer {
                return Some(format!(
                    "{whose}{} answered {answer}; the contract says {want}",
                    step.show()
                ));
            }
        }
        if model.held() != got.held {
            return Some(format!(
                "then keys_held() = {}; the contract holds {}",
                got.held,
                crate::text::count(model.held(), "key")
            ));
        }
        same_metrics(
            &expected_metrics(&self.bounds.policy, &model.counts),
            &got.metrics,
        )
        .err()
        .map(|e| format!("then the metrics: {e}"))
    }

    /// What every one-at-a-time order of the threads' steps gives.
    fn orders(&self) -> Vec<Raced> {
        fn go(
            r: &Race,
            model: &BoundedModel,
            at: &mut Vec<usize>,
            so_far: &mut Vec<Vec<Answer>>,
            out: &mut Vec<Raced>,
            before: &[Answer],
        ) {
            let mut moved = false;
            for t in 0..r.threads.len() {
                if let Some(s) = r.threads[t].get(at[t]) {
                    moved = true;
                    let mut m = model.clone();
                    let a = apply(&mut m, s);
                    at[t] += 1;
                    so_far[t].push(a);
                    go(r, &m, at, so_far, out, before);
                    so_far[t].pop();
                    at[t] -= 1;
                }
            }
            if !moved {
                let mut m = model.clone();
                let after = r.after.iter().map(|s| apply(&mut m, s)).collect();
                let done = Raced {
                    before: before.to_vec(),
                    threads: so_far.clone(),
                    after,
                    held: m.held(),
                    metrics: expected_metrics(&r.bounds.policy, &m.counts),
                };
                if !out.contains(&done) {
                    out.push(done);
                }
            }
        }
        let mut model = BoundedModel::new(self.rule, self.bounds.clone());
        let before: Vec<Answer> = self.before.iter().map(|s| apply(&mut model, s)).collect();
        let mut out = Vec::new();
        go(
            self,
            &model,
            &mut vec![0; self.threads.len()],
            &mut vec![Vec::new(); self.threads.len()],
            &mut out,
            &before,
        );
        out
    }

    fn show(&self, r: &Raced) -> String {
        let steps = |list: &[Step], answers: &[Answer]| -> String {
            list.iter()
                .zip(answers)
                .map(|(s, a)| format!("{} {a}", s.show()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.before.is_empty() {
            parts.push(format!("before: {}", steps(&self.before, &r.before)));
        }
        for (t, list) in self.threads.iter().enumerate() {
            parts.push(format!("thread {t}: {}", steps(list, &r.threads[t])));
        }
        if !self.after.is_empty() {
            parts.push(format!("after: {}", steps(&self.after, &r.after)));
        }
        parts.push(format!("then keys_held() = {}", r.held));
        parts.push(format!(
            "and the metrics {}",
            crate::store::metrics::show_metrics(&r.metrics)
        ));
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::decision::Decision;
    use crate::time::Timestamp;

    /// The contract's store, but with room for every key: it never gives
    /// the overflow answer, one call at a time or not.
    struct Unbounded(loom::sync::Mutex<BoundedModel>);

    impl Bounded for Unbounded {
        fn check(&self, key: &str, now: Timestamp) -> Decision {
            self.0.lock().unwrap().check(key, now.as_nanos(), false)
        }

        fn sweep(&self, now: Timestamp) -> usize {
            self.0.lock().unwrap().sweep(now.as_nanos())
        }

        fn keys_held(&self) -> usize {
            self.0.lock().unwrap().held()
        }
    }

    fn unbounded(
        rule: Rule,
        bounds: Bounds,
    ) -> Result<Arc<dyn Bounded>, crate::decision::ConfigError> {
        let roomy = Bounds::new(&bounds.policy, 100, bounds.overflow);
        Ok(Arc::new(Unbounded(loom::sync::Mutex::new(
            BoundedModel::new(rule, roomy),
        ))))
    }

    /// A store whose answers are wrong one call at a time is said to be so,
    /// with its first wrong answer against the contract's.
    #[test]
    fn wrong_answers_one_call_at_a_time_are_not_a_race() {
        let race = Race::two_new_keys_and_one_slot(RuleKind::FixedWindow);
        let e = crate::scenarios::explore_with("race".into(), move || race.breaks(unbounded))
            .unwrap_err();
        assert!(
            e.contains(
                "even one call at a time, these answers are not the contract's: thread 1: \
                 check(\"c\", 1_000ns) answered allowed, 0 remaining; the contract says denied"
            ),
            "{e}"
        );
        assert!(!e.contains("one-at-a-time orders give one of these"), "{e}");
    }
}
