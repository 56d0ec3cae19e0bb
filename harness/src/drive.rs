//! How a timeline drives a subject: the seam where a new kind of lesson
//! plugs in.
//!
//! Every check speaks one language: a [`Timeline`](crate::timeline::Timeline)
//! of `(key, now)` requests goes in, one [`Decision`] per request comes out,
//! and the models, generators, renderers, minimiser and watchdog work on
//! those alone. A *kind* of subject (`kind` in `lessons/lessons.toml`) says
//! how a learner's type is built from a configuration and how one request of
//! a timeline is put to it:
//!
//! | kind | the learner's type | driven by |
//! |---|---|---|
//! | `limiter` | `new(limit, period)`, `check(&mut self, key, now)` | [`Drive`] on one thread |
//! | `shared-limiter` | `new(limit, period)`, `impl RateLimiter` | [`Drive`], and [`BuildShared`] for the loom scenarios |
//! | `http-layer` | a tower `Layer` over a limiter | [`crate::http::drive`]: HTTP timelines, answered with statuses, headers and bodies |
//! | `redis-limiter` | `new(rule, settings)`, `try_check` and `impl RateLimiter`, its state in Redis | [`crate::redis::drive`]: as one app server, and as three taking turns over one Redis |
//! | `bounded-limiter` | `new(rule, bounds)`, `impl RateLimiter`, `sweep` and `keys_held` | [`crate::memory::drive`]: swept each time the clock moves on, and over loom for the races |
//!
//! A new kind adds a driver: an arm of [`crate::__variant!`] that compiles
//! the learner's file and wraps its type in something that implements
//! [`Drive`] (turning a timeline request into whatever the type takes, and
//! its answer back into a `Decision`, panicking with a sentence when the
//! answer is not one), an arm of [`crate::__suites!`] naming the standard
//! checks that apply, and checks of its own for what a `Decision` cannot
//! say. Everything else is reused.

use std::sync::Arc;
use std::time::Duration;

use crate::decision::{ConfigError, Decision, RateLimiter};
use crate::time::Timestamp;

/// A subject driven one request at a time.
pub trait Drive: Send {
    /// The answer to one request of a timeline.
    fn check(&mut self, key: &str, now: Timestamp) -> Decision;
}

/// Builds a subject for one configuration, on the std backend.
pub type Build = fn(u64, Duration) -> Result<Box<dyn Drive>, ConfigError>;

/// Builds a shared subject on the loom backend (inside a loom model only).
pub type BuildShared = fn(u64, Duration) -> Result<Arc<dyn RateLimiter>, ConfigError>;

/// One implementation of a lesson compiled into its test binary.
#[derive(Clone, Copy)]
pub struct Variant {
    /// The file relative to the kata's root (`lessons/lesson_02.rs`).
    pub file: &'static str,
    pub source: &'static str,
    pub build: Build,
    /// For kinds whose subjects are raced.
    pub build_loom: Option<BuildShared>,
}

impl Variant {
    /// The file as learners see it, relative to the kata's root.
    pub fn path(&self) -> String {
        self.file.to_string()
    }
}
