//! How a timeline drives a subject. Every check speaks one language: a
//! [`Timeline`](crate::timeline::Timeline) of `(key, now)` requests goes
//! in, one [`Decision`] per request comes out, and the models, generators,
//! renderers, minimiser and watchdog work on those alone. A kind's
//! `variant!` (see [`crate::kind`], where a new kind plugs in) wraps the
//! learner's type in something that implements [`Drive`] (turning a
//! timeline request into whatever the type takes, and its answer back into
//! a `Decision`, panicking with a sentence when the answer is not one), as a
//! [`Variant`]. The kinds and how each is driven: `ARCHITECTURE.md`, "The
//! kinds of subject".

use std::sync::Arc;
use std::time::Duration;

use crate::decision::{ConfigError, Decision, RateLimiter};
use crate::subject::Subject;
use crate::time::Timestamp;

/// A subject driven one request at a time.
pub trait Drive: Send {
    /// The answer to one request of a timeline.
    fn check(&mut self, key: &str, now: Timestamp) -> Decision;
}

/// Builds a subject for one configuration, on the std backend. A closure,
/// so that a kind can build the variants of one file (one per rule it is
/// checked under) in Rust: [`Variant::of`].
pub type Build =
    &'static (dyn Fn(u64, Duration) -> Result<Box<dyn Drive>, ConfigError> + Send + Sync);

/// Builds a shared subject on the loom backend (inside a loom model only).
pub type BuildShared =
    &'static (dyn Fn(u64, Duration) -> Result<Arc<dyn RateLimiter>, ConfigError> + Send + Sync);

/// One implementation of a lesson compiled into its test binary.
#[derive(Clone, Copy)]
pub struct Variant {
    /// The file relative to the kata's root (`lessons/lesson_02.rs`).
    pub file: &'static str,
    pub source: &'static str,
    pub build: Build,
    /// For kinds whose subjects are raced.
    pub build_loom: Option<BuildShared>,
    /// How its checks must pace it.
    pub pace: Pace,
}

/// What the shared checks must allow for in a subject: facts of how it is
/// driven, not of any one kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// Each property runs its number of cases divided by this (at least 4
    /// cases remain): 1, or more for a subject whose every call crosses a
    /// socket.
    pub cases_divisor: u32,
    /// Whether the subject keeps one clock for all its keys, answering every
    /// call at the latest instant it was given: its properties then draw
    /// timelines whose instants never go back
    /// ([`Timeline::on_one_clock`](crate::timeline::Timeline::on_one_clock)).
    pub one_clock: bool,
}

impl Pace {
    /// In process, each key on its own clock.
    pub const IN_PROCESS: Pace = Pace {
        cases_divisor: 1,
        one_clock: false,
    };
}

impl Variant {
    /// The file as learners see it, relative to the kata's root.
    pub fn path(&self) -> String {
        self.file.to_string()
    }

    /// A variant of `file` built at run time, for the life of the test
    /// binary: `build` (and `build_loom`) may capture what they need.
    pub fn of(
        file: &'static str,
        source: &'static str,
        build: impl Fn(u64, Duration) -> Result<Box<dyn Drive>, ConfigError> + Send + Sync + 'static,
        build_loom: Option<BuildShared>,
        pace: Pace,
    ) -> Variant {
        Variant {
            file,
            source,
            build: Box::leak(Box::new(build)),
            build_loom,
            pace,
        }
    }
}

/// A closure made once for the life of the test binary, as a loom build.
pub fn shared(
    build: impl Fn(u64, Duration) -> Result<Arc<dyn RateLimiter>, ConfigError> + Send + Sync + 'static,
) -> BuildShared {
    Box::leak(Box::new(build))
}

/// The implementations of one lesson compiled into its test binary, as
/// its kind's driver wraps them (`V`).
pub struct Implementations<V = Variant> {
    pub learner: V,
    /// The pristine stub (`lessons/stubs/`), as the learner file was at first.
    pub stub: V,
    pub reference: V,
    pub mistakes: Vec<(&'static str, V)>,
    pub alternatives: Vec<(&'static str, V)>,
    /// Another lesson's reference this lesson must equal decision for decision
    /// (lesson 06's GCRA against lesson 05's token bucket), with its type name.
    pub baseline: Option<(&'static str, V)>,
}

impl<V> Implementations<V> {
    /// The same implementations, each seen through `f`: a kind's standard
    /// variants for the checks every lesson shares.
    pub fn map<W>(&self, f: impl Fn(&V) -> W) -> Implementations<W> {
        Implementations {
            learner: f(&self.learner),
            stub: f(&self.stub),
            reference: f(&self.reference),
            mistakes: self.mistakes.iter().map(|(n, v)| (*n, f(v))).collect(),
            alternatives: self.alternatives.iter().map(|(n, v)| (*n, f(v))).collect(),
            baseline: self.baseline.as_ref().map(|(n, v)| (*n, f(v))),
        }
    }
}

impl<V: Copy> Implementations<V> {
    /// The subject `KATA_SUBJECT` names. An invalid one is said once, past
    /// the checks' capture, and stops the test binary. Sets the kata's root
    /// for file names.
    pub fn subject_from_env(&self, root: &'static str) -> Subject {
        let names = |list: &[(&'static str, V)]| list.iter().map(|(n, _)| *n).collect::<Vec<_>>();
        crate::files::set_root(root);
        Subject::from_env(&names(&self.mistakes), &names(&self.alternatives)).unwrap_or_else(|e| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "{e}");
            std::process::exit(2)
        })
    }

    /// The implementation a subject names.
    pub fn pick(&self, subject: Subject) -> V {
        let find = |list: &[(&'static str, V)], name: &str| {
            list.iter()
                .find(|(n, _)| *n == name)
                .expect("Subject::from_env only accepts names from these lists")
                .1
        };
        match subject {
            Subject::Learner => self.learner,
            Subject::Stub => self.stub,
            Subject::Reference => self.reference,
            Subject::Mistake(name) => find(&self.mistakes, name),
            Subject::Alternative(name) => find(&self.alternatives, name),
        }
    }
}
