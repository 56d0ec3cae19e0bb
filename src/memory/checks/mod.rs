//! The checks of the `bounded-limiter` kind (lesson 09).
//!
//! What a `Decision` can say is checked by the checks every lesson shares,
//! once per rule ([`BoundedLesson::rule`]), on a limiter with room for
//! every key that is swept each time the clock moves on: forgetting must
//! never change an answer. What it cannot say is checked here, step by step
//! against [`BoundedModel`](crate::store::model::BoundedModel): the keys held,
//! what a sweep forgets, the overflow answers of a full store, the metrics,
//! shadow mode, and a flood of a million keys weighed in bytes.
//!
//! One concept a file: `case` (a case's steps, the model's and the
//! subject's runs of it, and the judge), `examples` (examples and the
//! configuration), `properties` (generated cases), `flood` (a million keys
//! weighed in bytes) and `snapshot` (the drawing of a store under pressure);
//! here, what lesson 09 is, how a case is compared, and the races.

mod case;
mod edges;
mod examples;
mod flood;
mod properties;
pub mod races;
mod snapshot;

pub(crate) use case::Answer;
pub use case::{parse_steps, Case, Step};
pub use races::Race;

/// The name of lesson 09's own drawing, the store under pressure: its
/// snapshot's, and what `cargo run -- compare 9` draws by default.
pub const STORE_DRAWING: &str = "store_under_pressure";

use std::sync::Arc;

use super::drive::{roomy, swept, AsLimiter, BoundedVariant, RuleKind, RULES};
use crate::checks::Lesson;
use crate::decision::RateLimiter;
use crate::drive::{shared, Pace, Variant};
use crate::kind::{Facts, Kind, Subjects};
use crate::watchdog::time_limit;
use case::{judge, nth_step, subject_run, Seen};

/// Lesson 09: what the catalog says of it, its subjects, and the lessons
/// of the checks every limiter passes, one per [`RuleKind`].
pub struct BoundedLesson {
    pub facts: Facts,
    subjects: Subjects<BoundedVariant>,
    rules: Vec<Lesson>,
}

/// A subject that answers every call at the latest instant it was given,
/// whatever the key: every generated timeline is put on one clock.
const PACE: Pace = Pace {
    cases_divisor: 1,
    one_clock: true,
};

impl Kind for BoundedLesson {
    type Variant = BoundedVariant;

    fn new(facts: Facts, subjects: Subjects<BoundedVariant>) -> BoundedLesson {
        let rules = RULES
            .iter()
            .map(|&kind| {
                let rule = facts
                    .titled(format!(
                        "{}: {}, swept whenever the clock moves on",
                        facts.title,
                        kind.name()
                    ))
                    .following(kind.algorithm());
                let variants = subjects.map(|&v: &BoundedVariant| {
                    Variant::of(
                        v.file,
                        v.source,
                        move |limit, period| swept(v, kind, limit, period),
                        Some(shared(move |limit, period| {
                            (v.build_loom)(kind.rule(limit, period), roomy())
                                .map(|l| Arc::new(AsLimiter(l)) as Arc<dyn RateLimiter>)
                        })),
                        PACE,
                    )
                });
                Lesson::new(rule, variants)
            })
            .collect();
        BoundedLesson {
            facts,
            subjects,
            rules,
        }
    }
}

impl BoundedLesson {
    /// The checks every lesson shares, for one rule.
    pub fn rule(&self, kind: RuleKind) -> &Lesson {
        &self.rules[kind.index_in(&RULES)]
    }

    fn tested(&self) -> BoundedVariant {
        self.subjects.tested()
    }

    fn whose(&self) -> String {
        self.subjects.whose()
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!("{}", self.facts.failure(what, &self.whose(), &message))
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
