//! The `limiter` kind (lesson 01): `new(limit, period)` and
//! `check(&mut self, key, now)`, on one thread. Its lesson is the generic
//! [`Lesson`](crate::checks::Lesson), its subjects [`Variant`](crate::Variant)s
//! over std, its suite the checks every limiter passes.

// What `cargo run -- compare` draws: the timelines every limiter shares.
pub use crate::__limiter_suite as suite;
pub use crate::__limiter_variant as variant;
pub use crate::checks::comparison;

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

/// The kind's checks (`lesson()` must be in scope), by group.
#[doc(hidden)]
#[macro_export]
macro_rules! __limiter_suite {
    () => {
        $crate::__group!(source { $crate::__source_tests!(inputs); });
        $crate::__limiter_suite!(behaviour);
    };
    // What the shared limiters check too.
    (behaviour) => {
        $crate::__group!(config { $crate::config_tests!(); });
        $crate::__group!(property { $crate::property_tests!(); });
        $crate::__group!(slow { $crate::slow_tests!(); });
        $crate::__group!(snapshot { $crate::snapshot_tests!(); });
        $crate::snapshot_tests!(compare);
    };
}
