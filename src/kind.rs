//! A kind of lesson, as a type: the seam where a new kind plugs in.
//!
//! `lessons/lessons.toml` gives each lesson a `kind`; the catalog turns it
//! into the path of a module of this crate (`kata::redis` for
//! `redis-limiter`), and the code the build script writes for the lesson
//! uses three things from that module, and nothing else of the kind:
//!
//! - `variant!`, the one macro a kind must have: it compiles a subject's
//!   file (over std, and over loom for the kinds that are raced) and wraps
//!   its type into the kind's [`Kind::Variant`], which is plain data and
//!   closures, so that everything after it is ordinary Rust;
//! - `Lesson`, the type that implements [`Kind`]: it is built once per test
//!   binary from the catalog's [`Facts`] and the lesson's [`Subjects`], and
//!   its methods are the checks;
//! - `trials`, the kind's standard checks as data
//!   ([`crate::trial::Trials`]), each in the module of its group
//!   (`loom::…`, `race::…`, `fault::…`, `snapshot::…`), which the runner
//!   reads with each result.
//!
//! Everything a kind shares with the others (facts, the subject under test,
//! the checks every limiter passes) comes from [`Facts`], [`Subjects`] and
//! [`crate::checks::Lesson`]: a kind that drives a limiter through another
//! interface builds `Lesson`s of its own over [`Subjects::map`].

use crate::drive::Implementations;
use crate::models::Algorithm;
use crate::subject::Subject;

/// What the catalog says of a lesson, as its generated code gives it.
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    /// The folder of the package whose tests these are (snapshots live in
    /// its `tests/snapshots`; file names are shown relative to it).
    pub root: &'static str,
    pub number: u32,
    /// As failures show it (a kind that runs its checks once per rule
    /// titles each run, see [`Facts::titled`]).
    pub title: &'static str,
    /// The type the learner writes (`ConcurrentFixedWindow`), for messages.
    pub limiter: &'static str,
    /// The rule the lesson's models and drawings come from.
    pub algorithm: Algorithm,
}

impl Facts {
    /// The same lesson under another title, made once for the life of the
    /// test binary (a lesson's title for one of its rules).
    pub fn titled(self, title: String) -> Facts {
        Facts {
            title: Box::leak(title.into_boxed_str()),
            ..self
        }
    }

    /// The same lesson, following another rule.
    pub fn following(self, algorithm: Algorithm) -> Facts {
        Facts { algorithm, ..self }
    }
}

/// A lesson's implementations, as its kind's `variant!` wrapped them, and
/// the one under test (`KATA_SUBJECT`, read once per test binary).
pub struct Subjects<V> {
    pub implementations: Implementations<V>,
    pub subject: Subject,
}

impl<V: Copy> Subjects<V> {
    /// Reads `KATA_SUBJECT` (an invalid one is said once and stops the test
    /// binary) and sets the kata's root for file names.
    pub fn new(root: &'static str, implementations: Implementations<V>) -> Subjects<V> {
        let subject = implementations.subject_from_env(root);
        Subjects {
            implementations,
            subject,
        }
    }

    /// The implementation under test.
    pub fn tested(&self) -> V {
        self.implementations.pick(self.subject)
    }

    pub fn reference(&self) -> V {
        self.implementations.reference
    }

    /// The same subjects, each seen through `f`, with the same one under
    /// test: a kind's variants for the checks every limiter passes.
    pub fn map<W>(&self, f: impl Fn(&V) -> W) -> Subjects<W> {
        Subjects {
            implementations: self.implementations.map(f),
            subject: self.subject,
        }
    }
}

/// A subject of a kind, compiled from one file.
pub trait Compiled {
    /// The file, relative to the kata's root (`lessons/lesson_08.rs`).
    fn file(&self) -> &'static str;
    /// The file's text, for the checks of its source.
    fn source(&self) -> &'static str;
}

impl<V: Copy + Compiled> Subjects<V> {
    /// The subject under test and its file, as failures name it.
    pub fn whose(&self) -> String {
        format!("{} ({})", self.subject, self.tested().file())
    }

    /// Whom a failure is about: `your <yours>` (`your client`) for the
    /// learner's file, else the subject as every lesson names it.
    pub fn who(&self, yours: &str) -> String {
        match self.subject {
            Subject::Learner => format!("your {yours}"),
            other => other.to_string(),
        }
    }

    /// The same, with the file: `your client (lessons/lesson_11.rs)`.
    pub fn whose_as(&self, yours: &str) -> String {
        format!("{} ({})", self.who(yours), self.tested().file())
    }
}

impl Facts {
    /// A failure's text: the lesson, the check, whose answers broke it, and
    /// what the check found.
    pub fn failure(&self, what: &str, whose: &str, message: &str) -> String {
        format!(
            "lesson {:02} ({}): {what} fails for {whose}.\n{message}",
            self.number, self.title
        )
    }

    /// Fails the check with [`Facts::failure`]'s text.
    pub fn fail(&self, what: &str, whose: &str, message: &str) -> ! {
        panic!("{}", self.failure(what, whose, message))
    }

    /// Runs `work` watched: its error, its panic or its hang is a failure
    /// of `what` for `whose`, with its place.
    pub fn watched<R: Send + 'static>(
        &self,
        what: &str,
        whose: &str,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> R {
        use crate::watchdog::{time_limit, watched, Stop};
        match watched(time_limit(), |_| String::new(), work) {
            Ok(Ok(r)) => r,
            Ok(Err(e)) | Err(Stop::Panicked(e) | Stop::Hung(e)) => self.fail(what, whose, &e),
        }
    }
}

/// A kind's lesson as its checks hold it: the catalog's facts, its
/// subjects, and what a failure calls the learner's code (`your client`):
/// what the kinds that name, fail and watch a subject alike share.
pub struct Checked<V> {
    pub facts: Facts,
    pub subjects: Subjects<V>,
    /// The noun of `your <noun>`.
    pub noun: &'static str,
}

impl<V: Copy + Compiled> Checked<V> {
    pub fn subject(&self) -> Subject {
        self.subjects.subject
    }

    pub fn tested(&self) -> V {
        self.subjects.tested()
    }

    pub fn reference(&self) -> V {
        self.subjects.reference()
    }

    /// `your client (lessons/lesson_11.rs)`, or another subject with its file.
    pub fn whose(&self) -> String {
        self.subjects.whose_as(self.noun)
    }

    /// `your client`, or another subject.
    pub fn who(&self) -> String {
        self.subjects.who(self.noun)
    }

    /// Fails `what` for the subject under test.
    pub fn fail(&self, what: &str, message: &str) -> ! {
        self.facts.fail(what, &self.whose(), message)
    }

    /// Runs `work` watched: a panic or a hang is a failure with its place.
    pub fn watched<R: Send + 'static>(
        &self,
        what: &str,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> R {
        self.facts.watched(what, &self.whose(), work)
    }

    /// Fails, naming the line, if the file reads what its kind's inputs
    /// (`inputs`) leave out: the real clock, a sleep, tokio's locks.
    pub fn uses_only_its_inputs(&self, inputs: crate::source::Inputs) {
        let v = self.tested();
        if let Err(e) = crate::source::check_inputs_of(v.file(), v.source(), inputs) {
            panic!("{e}");
        }
    }

    /// Fails, naming the line, if the file takes locks or atomics from
    /// anywhere but `super::sync`.
    pub fn uses_only_the_sync_facade(&self) {
        let v = self.tested();
        if let Err(e) = crate::source::check_sync_imports(v.file(), v.source()) {
            panic!("{e}");
        }
    }
}

/// A kind of lesson: how it is built from the catalog's facts and the
/// lesson's subjects. Its checks are its methods, called by its `trials`.
pub trait Kind: Sized + Send + Sync + 'static {
    /// What `variant!` makes of one subject's file.
    type Variant: Copy + Send + Sync + 'static;

    fn new(facts: Facts, subjects: Subjects<Self::Variant>) -> Self;
}
