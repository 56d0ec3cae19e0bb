//! The `shared-limiter` kind (lessons 02–06): `new(limit, period)` and
//! `RateLimiter::check(&self, key, now)`, shared between threads. Its
//! subjects are compiled over std and again over loom; its trials are the
//! `limiter` kind's and the loom scenarios.

// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::__shared_limiter_variant as variant;
pub use crate::checks::comparison;

use crate::checks::trials;
use crate::trial::{group, Get, Trials};

/// A lesson of this kind.
pub type Lesson = crate::checks::Lesson;

/// A subject of the kind: its file over std and over loom.
#[doc(hidden)]
#[macro_export]
macro_rules! __shared_limiter_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        $crate::__driven_variant!($name, $path, $file, $limiter, loom);
    };
}

/// The kind's checks: its file's inputs and facade, the checks every
/// limiter passes, and the loom scenarios.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| source(t, lesson));
    trials::behaviour(&mut t, lesson);
    t.group(group::LOOM, |t| trials::loom(t, lesson));
    t
}

/// Time only from the call, the clock given or Redis, and no sleeps,
/// threads or randomness; locks and atomics from `super::sync`, so that a
/// hang names its line.
pub fn source(t: &mut Trials, lesson: impl Get<Lesson>) {
    t.test("uses_only_its_inputs", move || {
        lesson().uses_only_its_inputs()
    });
    t.test("uses_only_the_sync_facade", move || {
        lesson().uses_only_the_sync_facade()
    });
}
