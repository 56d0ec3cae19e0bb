//! The checks every lesson runs, written once. A lesson's test file names its
//! cases; everything here is generic over the lesson's algorithm and subjects.
//!
//! [`Lesson`] holds a lesson of the limiter kinds and runs its checks, one
//! concept a file: `examples` (examples and constructor cases), `snapshots`
//! (drawings and the comparison `cargo run -- compare` prints),
//! `properties` (generated timelines), `loom` (source checks and loom
//! scenarios). Below them, `runs` puts a timeline to an implementation and
//! `judge` says whether its answers keep the contract.

mod examples;
mod judge;
mod loom;
mod properties;
mod runs;
mod snapshots;

use crate::drive::{Implementations, Variant};
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

/// A lesson's implementations and which of them is under test.
pub struct Lesson {
    /// The folder of the package whose tests these are (snapshots live in
    /// its `tests/snapshots`).
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    /// The learner-facing type, for messages (`ConcurrentFixedWindow`).
    pub limiter: &'static str,
    pub algorithm: Algorithm,
    subject: Subject,
    implementations: Implementations,
    /// Each property runs its number of cases divided by this (at least
    /// 4): 1, or more for subjects whose every call crosses a socket.
    divisor: u32,
    /// Whether the subject keeps one clock for all its keys (lesson 09):
    /// its properties then draw timelines whose instants never go back.
    one_clock: bool,
}

/// A text made once for the life of the test binary (a lesson's title for
/// one of its rules).
pub fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

impl Lesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        limiter: &'static str,
        algorithm: Algorithm,
        implementations: Implementations,
    ) -> Lesson {
        let subject = implementations.subject_from_env(root);
        Lesson {
            root,
            number,
            title,
            limiter,
            algorithm,
            subject,
            implementations,
            divisor: 1,
            one_clock: false,
        }
    }

    /// The same lesson under another title (in every failure's first line).
    pub fn titled(mut self, title: &'static str) -> Lesson {
        self.title = title;
        self
    }

    /// The same lesson for a subject that answers every call at the latest
    /// instant it was given, whatever the key (lesson 09): every generated
    /// timeline is put on one clock ([`Timeline::on_one_clock`]).
    pub fn on_one_clock(mut self) -> Lesson {
        self.one_clock = true;
        self
    }

    /// The same lesson with each property's cases divided by `divisor`.
    pub fn with_fewer_cases(mut self, divisor: u32) -> Lesson {
        self.divisor = divisor.max(1);
        self
    }

    /// The subject under test (`KATA_SUBJECT`; an invalid one stops the
    /// test binary when the lesson is first built).
    pub fn subject(&self) -> Subject {
        self.subject
    }

    /// The implementation under test.
    pub fn tested(&self) -> Variant {
        self.implementations.pick(self.subject())
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            algorithm: self.algorithm,
            subject: self.subject(),
            tested: self.tested(),
            reference: self.implementations.reference,
            baseline: self.implementations.baseline.map(|(_, v)| v),
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

/// The command that replays a failing timeline beside the reference's
/// answers, quoted for a POSIX shell.
pub fn replay(number: u32, timeline: &Timeline) -> String {
    let text = format!("{timeline:?}").replace('\'', "'\\''");
    format!("cargo run -- compare {number} '{text}'")
}
