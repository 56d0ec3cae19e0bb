//! The `shared-limiter` kind (lessons 02–06): `new(limit, period)` and
//! `RateLimiter::check(&self, key, now)`, shared between threads. Its
//! subjects are compiled over std and again over loom; its suite is the
//! `limiter` kind's and the loom scenarios.

// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::__shared_limiter_suite as suite;
pub use crate::__shared_limiter_variant as variant;
pub use crate::checks::comparison;

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

/// The kind's checks (`lesson()` must be in scope), by group.
#[doc(hidden)]
#[macro_export]
macro_rules! __shared_limiter_suite {
    () => {
        $crate::__group!(source { $crate::__source_tests!(inputs, facade); });
        $crate::__limiter_suite!(behaviour);
        $crate::__group!(loom { $crate::loom_tests!(); });
    };
}
