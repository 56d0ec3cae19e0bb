//! The checks of the `bounded-limiter` kind (lesson 09).
//!
//! What a `Decision` can say is checked by the checks every lesson shares,
//! once per rule ([`BoundedLesson::rule`]), on a limiter with room for
//! every key that is swept each time the clock moves on: forgetting must
//! never change an answer. What it cannot say is checked here, step by step
//! against [`BoundedModel`](super::model::BoundedModel): the keys held,
//! what a sweep forgets, the overflow answers of a full store, the metrics,
//! shadow mode, and a flood of a million keys weighed in bytes.
//!
//! One concept a file: `case` (a case's steps, the model's and the
//! subject's runs of it, and the judge), `examples` (examples and the
//! configuration), `properties` (generated cases), `flood` (a million keys
//! weighed in bytes) and `snapshot` (the drawing of a store under pressure);
//! here, what lesson 09 is, how a case is compared, and the races.

mod case;
mod examples;
mod flood;
mod properties;
mod snapshot;

pub use super::races::Race;
pub(crate) use case::Answer;
pub use case::{parse_steps, Case, Step};

use std::time::Duration;

use super::drive::{BoundedVariant, RuleKind};
use crate::checks::Lesson;
use crate::drive::{Implementations, Variant};
use crate::models::Algorithm;
use crate::subject::Subject;
use crate::watchdog::time_limit;
use case::{judge, nth_step, subject_run, Seen};

/// One implementation of lesson 09: the limiter itself, and the standard
/// variants the shared checks drive (one per [`RuleKind`]).
#[derive(Clone, Copy)]
pub struct BoundedImpl {
    pub bounded: BoundedVariant,
    pub rules: [Variant; 2],
}

/// Lesson 09 with the subject `KATA_SUBJECT` selects.
pub struct BoundedLesson {
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    pub limiter: &'static str,
    subject: Subject,
    implementations: Implementations<BoundedImpl>,
    rules: Vec<Lesson>,
}

impl BoundedLesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        limiter: &'static str,
        _algorithm: Algorithm,
        implementations: Implementations<BoundedImpl>,
    ) -> BoundedLesson {
        let subject = implementations.subject_from_env(root);
        let rules = RuleKind::ALL
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                Lesson::new(
                    root,
                    number,
                    title,
                    limiter,
                    kind.rule(1, Duration::from_nanos(1)).algorithm(),
                    implementations.map(|v| v.rules[i]),
                )
                .on_one_clock()
                .titled(crate::checks::leak(format!(
                    "{title}: {}, swept whenever the clock moves on",
                    kind.name()
                )))
            })
            .collect();
        BoundedLesson {
            root,
            number,
            title,
            limiter,
            subject,
            implementations,
            rules,
        }
    }

    /// The checks every lesson shares, for one rule.
    pub fn rule(&self, kind: RuleKind) -> &Lesson {
        &self.rules[kind as usize]
    }

    fn tested(&self) -> BoundedVariant {
        self.implementations.pick(self.subject).bounded
    }

    fn whose(&self) -> String {
        format!("{} ({})", self.subject, self.tested().file)
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!(
            "lesson {:02} ({}): {what} fails for {}.\n{message}",
            self.number,
            self.title,
            self.whose()
        )
    }

    fn compare(&self, case: &Case, model: &[Seen]) -> Result<(), String> {
        let v = self.tested();
        let case = case.clone();
        let got = crate::watchdog::watched(
            time_limit(),
            {
                let case = case.clone();
                move |i| nth_step(&case, i)
            },
            move || subject_run(v, &case),
        );
        match got {
            Ok(Ok(got)) => judge(model, &got),
            Ok(Err(e)) => Err(e),
            Err(stop) => Err(stop.text().to_string()),
        }
    }

    // ------------------------------------------------------------------ races

    /// Explores a race under loom: the answers, the sweeps' counts and the
    /// keys held at the end must be those of some one-at-a-time order of the
    /// same calls.
    pub fn race(&self, race: Race) {
        let v = self.tested();
        let header = format!("loom scenario \"{}\" ({}; {})", race.name, race.what, {
            let mut c = race.case(vec![]);
            c.steps.clear();
            c.describe()
        });
        let r = race.clone();
        if let Err(e) = crate::scenarios::explore_with(header, move || r.breaks(v.build_loom)) {
            self.fail(&format!("the race \"{}\"", race.name), e);
        }
    }

    // ----------------------------------------------------------------- source

    pub fn uses_only_its_inputs(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_its_inputs();
    }
}

fn kind_algorithm(kind: RuleKind) -> Algorithm {
    kind.rule(1, Duration::from_nanos(1)).algorithm()
}
