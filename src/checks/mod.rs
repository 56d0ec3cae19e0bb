//! The checks every lesson runs, written once. A lesson's test file names its
//! cases; everything here is generic over the lesson's algorithm and subjects.
//!
//! [`Lesson`] holds a lesson of the limiter kinds and runs its checks, one
//! concept a file: `examples` (examples and constructor cases), `snapshots`
//! (drawings and the comparison `cargo run -- compare` prints),
//! `properties` (generated timelines), `keys` (keys kept apart), `loom` (source checks and loom
//! scenarios). Below them, `runs` puts a timeline to an implementation and
//! `judge` says whether its answers keep the contract.

mod examples;
mod judge;
mod keys;
mod loom;
mod properties;
mod runs;
mod snapshots;
pub mod trials;

use crate::drive::{Pace, Variant};
use crate::kind::{Facts, Kind, Subjects};
use crate::models::Algorithm;
use crate::subject::Subject;
use crate::timeline::Timeline;
use crate::watchdog::Stop;

/// Everything a check needs, cheap to copy onto a watched thread.
#[derive(Clone, Copy)]
struct Ctx {
    algorithm: Algorithm,
    subject: Subject,
    tested: Variant,
    reference: Variant,
    baseline: Option<Variant>,
}

/// A lesson of the limiter kinds (and each rule of a kind that runs the
/// checks every limiter passes): what the catalog says of it, and its
/// subjects.
pub struct Lesson {
    pub facts: Facts,
    subjects: Subjects<Variant>,
}

impl Kind for Lesson {
    type Variant = Variant;

    fn new(facts: Facts, subjects: Subjects<Variant>) -> Lesson {
        Lesson { facts, subjects }
    }
}

impl Lesson {
    /// The subject under test (`KATA_SUBJECT`; an invalid one stops the
    /// test binary when the lesson is first built).
    pub fn subject(&self) -> Subject {
        self.subjects.subject
    }

    /// The implementation under test.
    pub fn tested(&self) -> Variant {
        self.subjects.tested()
    }

    /// How the checks must pace the lesson's subjects.
    fn pace(&self) -> Pace {
        self.subjects.implementations.reference.pace
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            algorithm: self.facts.algorithm,
            subject: self.subject(),
            tested: self.tested(),
            reference: self.subjects.reference(),
            baseline: self.subjects.implementations.baseline.map(|(_, v)| v),
        }
    }

    /// Where failures should send the learner.
    fn whose(&self) -> String {
        format!("{} ({})", self.subject(), self.tested().path())
    }

    fn unwrap<T>(&self, timeline: &Timeline, r: Result<T, Stop>) -> T {
        r.unwrap_or_else(|stop| panic!("{} {}\ntimeline: {timeline:?}", self.whose(), stop.text()))
    }
}

/// What `cargo run -- compare N` shows when no timeline is named.
pub const DEFAULT_COMPARISON: &str = "first_look";

/// What `cargo run -- compare N [TIMELINE]` draws for a lesson whose kind
/// draws the timelines every limiter shares: TIMELINE, or
/// [`DEFAULT_COMPARISON`]. A TIMELINE the lesson's tests would not accept
/// is refused with their words, before anything is built.
pub fn comparison(timeline: Option<&str>) -> Result<String, String> {
    let which = timeline.map_or(DEFAULT_COMPARISON, str::trim).to_string();
    crate::timeline::Standard::resolve(&which)?;
    Ok(which)
}

/// The command that replays a failing timeline beside the reference's
/// answers, quoted for a POSIX shell.
pub fn replay(number: u32, timeline: &Timeline) -> String {
    let text = format!("{timeline:?}").replace('\'', "'\\''");
    format!("cargo run -- compare {number} '{text}'")
}
