//! The checks of the `async-redis-limiter` kind (lesson 10).
//!
//! Lesson 10's limiter keeps lesson 08's contract, so every check of lesson
//! 08 runs against it first: [`AsyncLesson`] derefs to the
//! [`RedisLesson`](crate::redis_limiter::checks::RedisLesson) of its subjects
//! blocked on ([`blocking`](super::drive::blocking)), and lesson 08's
//! suite calls it as it calls lesson 08. Its layer keeps lesson 07's:
//! [`AsyncLesson::layer`] is lesson 07's lesson over the file's
//! `AsyncRateLimitLayer`. What is lesson 10's own is here, one concept a
//! file: `relay` (a loopback relay that counts connections and commands
//! and holds replies back), `runtime` (a call never blocks the runtime,
//! calls share one connection), `fallback` (the local store is lesson 09's,
//! the fallback's decisions counted by reason), `cluster` (a slot that
//! moves, a master that fails over, a cluster that goes down), `stack`
//! (three app server processes serving the whole stack, one limit).

mod cluster;
mod fallback;
mod relay;
mod runtime;
mod stack;

use std::ops::Deref;
use std::time::Duration;

use super::drive::{on_cluster, AsyncVariant};
use crate::checks::Lesson;
use crate::drive::{Pace, Variant};
use crate::kind::{Facts, Kind, Subjects};
use crate::redis_limiter::checks::RedisLesson;
use crate::redis_limiter::drive::{RuleKind, RULES};

/// Lesson 10: lesson 08's lesson over its subjects blocked on, and the
/// lessons of the checks every limiter passes on a Redis Cluster, one per
/// rule.
pub struct AsyncLesson {
    pub facts: Facts,
    subjects: Subjects<AsyncVariant>,
    as_lesson_08: RedisLesson,
    cluster: Vec<Lesson>,
    /// Lesson 07's lesson over the file's layer.
    layer: crate::layer::checks::HttpLesson,
}

/// A cluster's calls cross a socket, and some cross two: the shared
/// properties run a quarter of their cases, as lesson 08's do.
const PACE: Pace = Pace {
    cases_divisor: 4,
    one_clock: false,
};

impl Kind for AsyncLesson {
    type Variant = AsyncVariant;

    fn new(facts: Facts, subjects: Subjects<AsyncVariant>) -> AsyncLesson {
        let cluster = RULES
            .iter()
            .map(|&kind| {
                let rule = facts
                    .titled(format!(
                        "{}: {}, on a Redis Cluster of three masters",
                        facts.title,
                        kind.name()
                    ))
                    .following(kind.algorithm());
                let variants = subjects.map(|&v: &AsyncVariant| {
                    Variant::of(
                        v.file,
                        v.source,
                        move |limit, period: Duration| on_cluster(v, kind, limit, period),
                        None,
                        PACE,
                    )
                });
                Lesson::new(rule, variants)
            })
            .collect();
        AsyncLesson {
            as_lesson_08: RedisLesson::new(facts, subjects.map(|v| v.blocking)),
            layer: crate::layer::checks::HttpLesson::new(
                facts.titled(format!("{}: the async layer", facts.title)),
                subjects.map(|v| v.layer),
            ),
            cluster,
            facts,
            subjects,
        }
    }
}

/// Lesson 08's checks, which lesson 10's limiter passes as lesson 08's
/// does: `lesson().rule(…)`, `lesson().race(…)`, the faults.
impl Deref for AsyncLesson {
    type Target = RedisLesson;

    fn deref(&self) -> &RedisLesson {
        &self.as_lesson_08
    }
}

impl AsyncLesson {
    /// The checks every lesson shares, for one rule, on the shared Redis
    /// Cluster.
    pub fn on_cluster(&self, kind: RuleKind) -> &Lesson {
        &self.cluster[kind.index_in(&RULES)]
    }

    /// Lesson 07's checks, for the file's `AsyncRateLimitLayer`.
    pub fn layer(&self) -> &crate::layer::checks::HttpLesson {
        &self.layer
    }

    fn tested(&self) -> AsyncVariant {
        self.subjects.tested()
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!(
            "{}",
            self.facts.failure(what, &self.subjects.whose(), &message)
        )
    }
}
