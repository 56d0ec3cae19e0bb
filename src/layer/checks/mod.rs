//! Lesson 07's checks, written once: the `http-layer` kind's suite.
//!
//! One concept a file: `examples` (examples and the policy's cases),
//! `properties` (generated timelines), `snapshots` (drawings and the
//! comparison `cargo run -- compare 7` prints), `end_to_end` (a real
//! loopback server) and `verdict` (the contract's answers and the judging of
//! a run); here, what lesson 07 is, its source checks and how its checks
//! are watched.

mod end_to_end;
mod examples;
mod properties;
mod snapshots;
mod verdict;
#[cfg(test)]
mod wrong_layers;

pub use snapshots::SNAPSHOTS;
pub use verdict::{contract, judge};

use super::drive::HttpVariant;
use super::exchange::HttpTimeline;
use crate::kind::{Facts, Kind, Subjects};
use crate::models::Algorithm;
use crate::subject::Subject;
use crate::watchdog::{time_limit, watched, Stop};

/// Lesson 07: what the catalog says of it (its algorithm is the rule of
/// the limiter behind the layer in the checks), and its subjects.
pub struct HttpLesson {
    pub facts: Facts,
    subjects: Subjects<HttpVariant>,
}

#[derive(Clone, Copy)]
struct Ctx {
    algorithm: Algorithm,
    subject: Subject,
    tested: HttpVariant,
    reference: HttpVariant,
}

impl Kind for HttpLesson {
    type Variant = HttpVariant;

    fn new(facts: Facts, subjects: Subjects<HttpVariant>) -> HttpLesson {
        HttpLesson { facts, subjects }
    }
}

impl HttpLesson {
    pub fn subject(&self) -> Subject {
        self.subjects.subject
    }

    pub fn tested(&self) -> HttpVariant {
        self.subjects.tested()
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            algorithm: self.facts.algorithm,
            subject: self.subject(),
            tested: self.tested(),
            reference: self.subjects.reference(),
        }
    }

    fn whose(&self) -> String {
        match self.subject() {
            Subject::Learner => format!("your layer ({})", self.tested().path()),
            other => format!("{other} ({})", self.tested().path()),
        }
    }

    /// Fails, naming the line, if the layer reads time or anything else
    /// but the clock it is given.
    pub fn uses_only_its_inputs(&self) {
        let v = self.tested();
        if let Err(e) =
            crate::source::check_inputs_of(&v.path(), v.source, crate::source::Inputs::Clock)
        {
            panic!("{e}");
        }
    }

    /// Fails, naming the line, if the file takes locks or atomics from
    /// anywhere but `super::sync` (whose primitives tell the watchdog where
    /// a hang is).
    pub fn uses_only_the_sync_facade(&self) {
        let v = self.tested();
        if let Err(e) = crate::source::check_sync_imports(&v.path(), v.source) {
            panic!("{e}");
        }
    }

    fn watched<R: Send + 'static>(
        &self,
        timeline: &HttpTimeline,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> Result<R, String> {
        self.watched_stop(timeline, work)
            .map_err(|stop| stop.text().to_string())
    }

    /// Runs `work` under the watchdog: a failure it returns or a panic is
    /// `Stop::Panicked`, a hang `Stop::Hung`.
    fn watched_stop<R: Send + 'static>(
        &self,
        timeline: &HttpTimeline,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> Result<R, Stop> {
        let t = timeline.clone();
        let describe = move |i: usize| describe_call(&t, i);
        match watched(time_limit(), describe, work) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Stop::Panicked(e)),
            Err(stop) => Err(stop),
        }
    }
}

impl HttpTimeline {
    /// The setup and the requests up to and including the `i`th.
    pub fn clone_upto(&self, i: usize) -> HttpTimeline {
        HttpTimeline {
            setup: self.setup.clone(),
            calls: self.calls[..=i.min(self.calls.len().saturating_sub(1))].to_vec(),
        }
    }
}

fn describe_call(t: &HttpTimeline, i: usize) -> String {
    t.calls
        .get(i)
        .map(|c| format!("request #{} ({c:?})", i + 1))
        .unwrap_or_else(|| "a request".into())
}

/// The command that replays a timeline beside the reference.
pub fn replay(number: u32, t: &HttpTimeline) -> String {
    let text = format!("{t:?}").replace('\'', "'\\''");
    format!("cargo run -- compare {number} '{text}'")
}
