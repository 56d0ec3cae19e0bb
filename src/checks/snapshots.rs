//! Timelines drawn as tables and strip charts: compared with their committed
//! snapshots, or printed beside the reference's answers (`cargo run --
//! compare`).

use super::judge::{divergence, invariant, probe};
use super::runs::{run_partial, run_watched};
use super::{Lesson, DEFAULT_COMPARISON};
use crate::decision::Decision;
use crate::models::model_run;
use crate::render::{call, render, render_compare};
use crate::snapshot::assert_snapshot;
use crate::timeline::{Config, Timeline};

impl Lesson {
    /// One of the standard timelines, drawn and compared with its snapshot.
    pub fn standard_snapshot(&self, name: &str) {
        let s = crate::timeline::Standard::named(name)
            .unwrap_or_else(|| panic!("no standard timeline is named {name:?}"));
        self.snapshot(s.name, s.limit, s.period, s.requests);
    }

    /// Prints the subject's and the reference's answers to a timeline side by
    /// side, the first difference marked. `which` is a standard timeline's
    /// name, a whole timeline as failures print it (`L=1 W=2ns: b@3 b@3`), or
    /// requests alone (run with limit 3 and period 1_000 ns). Panics with the
    /// list of names otherwise, and when the subject panics or hangs, after
    /// the table of its answers up to that request.
    pub fn print_comparison(&self, which: &str) {
        let which = if which.trim().is_empty() {
            DEFAULT_COMPARISON
        } else {
            which
        };
        let timeline = crate::timeline::Standard::resolve(which).unwrap_or_else(|e| panic!("{e}"));
        match crate::timeline::Standard::named(which) {
            Some(s) => crate::trial::println(format_args!("{}: {}\n", s.name, s.about)),
            None if !which.trim().starts_with("L=") => crate::trial::println(format_args!(
                "(requests alone run with {:?}; write `L=2 W=10ns: a@0 …` to choose)\n",
                timeline.config
            )),
            None => {}
        }
        let reference = self.unwrap(&timeline, run_watched(self.subjects.reference(), &timeline));
        let (yours, stop) = run_partial(self.tested(), &timeline);
        // Only answers the contract fixes exactly are marked: a late request,
        // or one past the exact horizon, may be answered more than one way.
        let placed = timeline.placed();
        let at = match &stop {
            Some(_) => Some(yours.len()),
            None => (0..timeline.requests.len()).find(|&i| {
                let now = timeline.requests[i].now.as_nanos();
                placed[i] == now
                    && self.facts.algorithm.exact_at(&timeline.config, now)
                    && yours.get(i) != reference.get(i)
            }),
        };
        crate::trial::println(format_args!(
            "{}",
            render_compare(
                self.facts.algorithm,
                &timeline,
                ("yours", "reference"),
                &yours,
                &reference,
                at
            )
        ));
        if let Some(stop) = stop {
            let r = &timeline.requests[yours.len()];
            panic!(
                "request #{}, {}: {} {}",
                yours.len() + 1,
                call(&r.key, r.now),
                self.whose(),
                stop.text()
            );
        }
        match at {
            Some(i) => crate::trial::println(format_args!(
                "first difference: {}",
                divergence(
                    &timeline,
                    i,
                    &self.whose(),
                    &yours,
                    "the reference",
                    &reference
                )
            )),
            None => crate::trial::println(format_args!(
                "{}",
                self.judged_apart(&timeline, &yours, &reference)
            )),
        }
    }

    /// What to say of answers that equal the reference's wherever the
    /// contract fixes one answer. A late request (or one past the exact
    /// horizon) may be answered more than one way: there the checks judge
    /// the answers by the contract's rules (the limit kept, `remaining` and
    /// `retry_after` meaning what they say), and so does this.
    fn judged_apart(
        &self,
        timeline: &Timeline,
        yours: &[Decision],
        reference: &[Decision],
    ) -> String {
        let ctx = self.ctx();
        let judged = invariant(ctx, timeline, yours).and_then(|()| probe(ctx, timeline));
        let differs = (0..timeline.requests.len()).find(|&i| yours.get(i) != reference.get(i));
        let placed = timeline.placed();
        let inexact = (0..timeline.requests.len()).any(|i| {
            let now = timeline.requests[i].now.as_nanos();
            placed[i] != now || !self.facts.algorithm.exact_at(&timeline.config, now)
        });
        match (judged, differs) {
            (Err(broken), _) if inexact => format!(
                "your answers are the reference's wherever the contract fixes one answer, but \
                 where it allows more than one (a late request, or one past the exact horizon) \
                 they break the contract's rules:\n{broken}"
            ),
            (Err(broken), _) => format!(
                "your answers are the reference's on this timeline, but replaying it shows \
                 that they do not mean what they say:\n{broken}"
            ),
            (Ok(()), Some(i)) => {
                let first = divergence(
                    timeline,
                    i,
                    &self.whose(),
                    yours,
                    "the reference",
                    reference,
                );
                format!(
                    "{first}\nThe contract allows more than one answer there (a late request, or \
                     one past the exact horizon), and yours keeps its rules on this timeline. \
                     (Other timelines may still tell them apart: `cargo run -- test {}` runs \
                     every check.)",
                    self.facts.number
                )
            }
            (Ok(()), None) => format!(
                "no difference on this timeline: your answers are the reference's here. (Other \
                 timelines may still tell them apart: `cargo run -- test {}` runs every check.)",
                self.facts.number
            ),
        }
    }

    /// A named timeline, drawn as a table and strip chart, compared with the
    /// committed snapshot `tests/snapshots/lesson_NN_<name>.snap`. The snapshot
    /// must be what the model and the reference draw, so accepting a wrong
    /// drawing as the new snapshot cannot make this pass.
    pub fn snapshot(&self, name: &str, limit: u64, period_nanos: u64, requests: &str) {
        let timeline = Timeline::parse(Config::new(limit, period_nanos), requests)
            .unwrap_or_else(|e| panic!("bad snapshot timeline: {e}"));
        let draw = |d: &[Decision]| render(self.facts.algorithm, &timeline, d);
        let contract = draw(&model_run(self.facts.algorithm, &timeline));
        let reference =
            draw(&self.unwrap(&timeline, run_watched(self.subjects.reference(), &timeline)));
        let tested = draw(&self.unwrap(&timeline, run_watched(self.tested(), &timeline)));
        assert_snapshot(
            (self.facts.root, self.facts.number, name),
            &format!("{timeline:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }
}
