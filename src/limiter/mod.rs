//! The `limiter` kind (lesson 01): `new(limit, period)` and
//! `check(&mut self, key, now)`, on one thread. Its lesson is the generic
//! [`Lesson`](crate::checks::Lesson), its subjects [`Variant`](crate::Variant)s
//! over std, its trials the checks every limiter passes.

// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::__limiter_variant as variant;
pub use crate::checks::comparison;

use crate::trial::{group, Get, Trials};

/// A lesson of this kind.
pub type Lesson = crate::checks::Lesson;

/// A subject of the kind: its file over std.
#[doc(hidden)]
#[macro_export]
macro_rules! __limiter_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        $crate::__driven_variant!($name, $path, $file, $limiter, std);
    };
}

/// The kind's checks: time only from the call, and the checks every
/// limiter passes.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        // Time only from the call; no sleeps, threads or randomness.
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
    });
    crate::checks::trials::behaviour(&mut t, lesson);
    t
}
