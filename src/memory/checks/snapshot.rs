//! The drawing of a store of three keys under pressure, step by step:
//! compared with its snapshot, or printed beside the reference's.

use std::time::Duration;

use super::case::{model_run, parse_steps, subject_run, Case, Seen};
use super::BoundedLesson;
use crate::memory::drive::{BoundedVariant, RULES};
use crate::memory::{metric, Bounds, Overflow, Rule};
use crate::snapshot::assert_snapshot;
use crate::store::metrics::series;
use crate::watchdog::time_limit;

impl BoundedLesson {
    /// A store of three keys under pressure, drawn step by step: each answer,
    /// the keys held, and the metrics.
    pub fn store_snapshot(&self) {
        let case = pressure_case();
        let draw = |seen: &[Seen]| draw(&case, seen);
        let contract = draw(&model_run(&case));
        let run = |v: BoundedVariant| {
            let c = case.clone();
            match crate::watchdog::watched(
                time_limit(),
                |_| String::new(),
                move || subject_run(v, &c),
            ) {
                Ok(Ok(seen)) => draw(&seen),
                Ok(Err(e)) => self.fail("the store's drawing", e),
                Err(stop) => self.fail("the store's drawing", stop.text().to_string()),
            }
        };
        let reference = run(self.subjects.reference());
        let tested = run(self.tested());
        assert_snapshot(
            (self.facts.root, self.facts.number, "store_under_pressure"),
            &format!("{case:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    /// `cargo run -- compare 9 [STEPS]`: the store's drawing of the worked
    /// example (or of STEPS, such as `"a@0 b@0 sweep@1000 c@1000"`, on the
    /// same limiter), yours and the reference's, line by line, the first
    /// difference marked. Panics, after the drawings, when they differ.
    pub fn print_comparison(&self, which: &str) {
        let which = which.trim();
        let mut case = pressure_case();
        if which == super::STORE_DRAWING {
            // The snapshot's name: the worked example.
        } else if let Ok(printed) = Case::read(which) {
            // A case as a failure prints it, on its own limiter.
            case = printed;
        } else if !which.is_empty() && parse_steps(which).is_err() {
            // A timeline as the checks every lesson shares print it: each
            // rule's answers on a limiter swept as those checks sweep it.
            for kind in RULES {
                crate::trial::println(format_args!(
                    "== {}, swept whenever the clock moves on",
                    kind.name()
                ));
                self.rule(kind).print_comparison(which);
            }
            return;
        } else if !which.is_empty() {
            case.steps = parse_steps(which).unwrap_or_else(|e| {
                panic!(
                    "{e}\n(steps are `key@nanos` or `sweep@nanos`, such as \"a@0 b@0 sweep@1000\")"
                )
            });
        }
        let run = |v: BoundedVariant| {
            let c = case.clone();
            match crate::watchdog::watched(
                time_limit(),
                |_| String::new(),
                move || subject_run(v, &c),
            ) {
                Ok(Ok(seen)) => draw(&case, &seen),
                Ok(Err(e)) => format!("(no drawing: {e})"),
                Err(stop) => format!("(no drawing: {})", stop.text()),
            }
        };
        let (yours, theirs) = (run(self.tested()), run(self.subjects.reference()));
        crate::trial::println(format_args!(
            "yours ({}):\n{yours}\nthe reference's:\n{theirs}",
            self.tested().file
        ));
        let first = yours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
        match first {
            None if yours == theirs => {
                crate::trial::println(format_args!("no difference on these steps."))
            }
            _ => {
                let line = first.unwrap_or(yours.lines().count().min(theirs.lines().count()));
                panic!(
                    "the first difference is on line {} of the drawings:\n  yours:           {}\n  the reference's: {}",
                    line + 1,
                    yours.lines().nth(line).unwrap_or("(nothing)"),
                    theirs.lines().nth(line).unwrap_or("(nothing)")
                )
            }
        }
    }
}

/// The worked example of the lesson text, drawn by the snapshot.
fn pressure_case() -> Case {
    Case {
        rule: Rule::TokenBucket {
            capacity: 2,
            refill_every: Duration::from_nanos(1_000),
        },
        bounds: Bounds::new("api", 3, Overflow::Deny),
        shadow: false,
        steps: parse_steps(
            "a@0 b@0 c@0 a@0 a@0 d@500 sweep@1000 d@1000 e@1000 a@1500 sweep@2000 e@2000 \
             f@2000 g@2500 sweep@3000 g@3000",
        )
        .expect("a valid timeline"),
    }
}

fn draw(case: &Case, seen: &[Seen]) -> String {
    let mut out = format!("{}\n", case.describe());
    out.push_str("step                      answer                              held  metrics\n");
    for (s, v) in case.steps.iter().zip(seen) {
        let m = &v.metrics;
        let read = |name: &str, extra: Option<(&str, &str)>| {
            let mut labels = vec![(metric::POLICY, case.bounds.policy.as_str())];
            labels.extend(extra);
            m.get(&series(name, &labels))
                .map_or(0.0, |b| f64::from_bits(b.0))
        };
        out.push_str(&format!(
            "{:<25} {:<35} {:>4}  allowed {} denied {} evicted {} overflow {} keys {}\n",
            s.show(),
            v.answer.to_string(),
            v.held,
            read(metric::DECISIONS, Some((metric::OUTCOME, metric::ALLOWED))),
            read(metric::DECISIONS, Some((metric::OUTCOME, metric::DENIED))),
            read(metric::EVICTIONS, None),
            read(metric::OVERFLOWS, None),
            read(metric::KEYS, None),
        ));
    }
    out
}
