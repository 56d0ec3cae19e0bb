//! `kata`: the harness of the ratelimit kata.
//!
//! Every lesson's test binary is built from one `tests/lesson_NN.rs` that calls
//! [`lesson!`] and then names its cases. Everything else lives here, once:
//!
//! - [`time`], [`decision`]: the contract's types (`Timestamp`, `Decision`,
//!   `ConfigError`, `RateLimiter`);
//! - [`sync`]: the facade a learner file takes its primitives from, over std
//!   and over loom;
//! - [`models`]: an executable model of each algorithm, straight from SPEC.md;
//! - [`timeline`], [`gen`]: timelines, their notation and their generators;
//! - [`render`]: tables and strip charts of timelines;
//! - [`checks`], [`scenarios`]: the generic checks and the loom scenarios;
//! - [`subject`], [`source`], [`watchdog`]: which file is tested, what it
//!   imports, and how its panics and hangs become readable failures.

pub mod checks;
pub mod decision;
pub mod gen;
pub mod models;
pub mod render;
pub mod scenarios;
pub mod source;
pub mod subject;
pub mod suite;
pub mod sync;
pub mod time;
pub mod timeline;
pub mod watchdog;

pub use checks::{Lesson, Limiter, Variant};
pub use decision::{ConfigError, Decision, RateLimiter};
pub use scenarios::Scenario;
pub use time::Timestamp;

/// Compiles a lesson's implementations into the test binary and defines
/// `fn lesson() -> &'static kata::Lesson`.
///
/// ```ignore
/// kata::lesson! {
///     number: 2,
///     title: "concurrent fixed window",
///     algorithm: FixedWindow,
///     limiter: ConcurrentFixedWindow,
///     concurrent: true,
///     learner: "../lessons/lesson_02.rs",
///     reference: "../solutions/lesson_02.rs",
///     mistakes: { reset_race: "../mistakes/lesson_02/reset_race.rs" },
///     alternatives: { per_key_locks: "alternatives/lesson_02/per_key_locks.rs" },
/// }
/// ```
///
/// Each file becomes a module whose `sync` is [`sync::std_backend`] and, when
/// `concurrent: true`, a second one whose `sync` is [`sync::loom_backend`].
/// `KATA_SUBJECT` picks which one the tests check (see [`subject`]). Paths are
/// relative to the test file; compiler errors name the lesson file itself.
#[macro_export]
macro_rules! lesson {
    (
        number: $number:literal,
        title: $title:literal,
        algorithm: $algorithm:ident,
        limiter: $limiter:ident,
        concurrent: $concurrent:tt,
        learner: $learner:literal,
        reference: $reference:literal,
        mistakes: { $($mistake:ident : $mistake_file:literal),* $(,)? },
        alternatives: { $($alternative:ident : $alternative_file:literal),* $(,)? } $(,)?
    ) => {
        $crate::__variant!($concurrent, learner, $learner, $limiter);
        $crate::__variant!($concurrent, reference, $reference, $limiter);
        $( $crate::__variant!($concurrent, $mistake, $mistake_file, $limiter); )*
        $( $crate::__variant!($concurrent, $alternative, $alternative_file, $limiter); )*

        /// This lesson, with the subject `KATA_SUBJECT` selects.
        fn lesson() -> &'static $crate::Lesson {
            static LESSON: ::std::sync::OnceLock<$crate::Lesson> = ::std::sync::OnceLock::new();
            LESSON.get_or_init(|| {
                $crate::Lesson::new(
                    $number,
                    $title,
                    stringify!($limiter),
                    $crate::models::Algorithm::$algorithm,
                    $crate::checks::Implementations {
                        learner: learner::VARIANT,
                        reference: reference::VARIANT,
                        mistakes: vec![$((stringify!($mistake), $mistake::VARIANT)),*],
                        alternatives: vec![$((stringify!($alternative), $alternative::VARIANT)),*],
                    },
                )
            })
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __variant {
    (false, $name:ident, $file:literal, $limiter:ident) => {
        #[path = ""]
        mod $name {
            #[path = ""]
            pub mod on_std {
                #[allow(unused_imports)]
                pub mod sync {
                    pub use $crate::sync::std_backend::*;
                }
                #[path = $file]
                pub mod imp;
            }

            pub struct Drive(on_std::imp::$limiter);

            impl $crate::Limiter for Drive {
                fn check(&mut self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    self.0.check(key, now)
                }
            }

            pub const VARIANT: $crate::Variant = $crate::Variant {
                file: $file,
                source: include_str!($file),
                build: |limit, period| {
                    on_std::imp::$limiter::new(limit, period)
                        .map(|l| Box::new(Drive(l)) as Box<dyn $crate::Limiter>)
                },
                build_loom: None,
            };
        }
    };
    (true, $name:ident, $file:literal, $limiter:ident) => {
        #[path = ""]
        mod $name {
            #[path = ""]
            pub mod on_std {
                #[allow(unused_imports)]
                pub mod sync {
                    pub use $crate::sync::std_backend::*;
                }
                #[path = $file]
                pub mod imp;
            }

            // The same file over loom: its warnings were already shown once.
            #[path = ""]
            #[allow(warnings, clippy::all)]
            pub mod on_loom {
                #[allow(unused_imports)]
                pub mod sync {
                    pub use $crate::sync::loom_backend::*;
                }
                #[path = $file]
                pub mod imp;
            }

            pub struct Drive(on_std::imp::$limiter);

            impl $crate::Limiter for Drive {
                fn check(&mut self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    $crate::RateLimiter::check(&self.0, key, now)
                }
            }

            pub const VARIANT: $crate::Variant = $crate::Variant {
                file: $file,
                source: include_str!($file),
                build: |limit, period| {
                    on_std::imp::$limiter::new(limit, period)
                        .map(|l| Box::new(Drive(l)) as Box<dyn $crate::Limiter>)
                },
                build_loom: Some(|limit, period| {
                    on_loom::imp::$limiter::new(limit, period).map(|l| {
                        ::std::sync::Arc::new(l) as ::std::sync::Arc<dyn $crate::RateLimiter>
                    })
                }),
            };
        }
    };
}

/// The property tests every lesson runs (`lesson()` must be in scope).
#[macro_export]
macro_rules! property_tests {
    () => {
        /// Exact agreement with the reference solution, request by request.
        #[test]
        fn agrees_with_reference() {
            lesson().agrees_with_reference();
        }

        /// Exact agreement with the harness's model of SPEC.md.
        #[test]
        fn agrees_with_model() {
            lesson().agrees_with_model();
        }

        /// The lesson's limit invariant, late timestamps included.
        #[test]
        fn keeps_the_limit() {
            lesson().keeps_the_limit();
        }

        /// `remaining` and `retry_after` checked by replaying the future they promise.
        #[test]
        fn answers_mean_what_they_say() {
            lesson().answers_mean_what_they_say();
        }

        /// No panic and a non-zero `retry_after` up to `u64::MAX`.
        #[test]
        fn survives_extremes() {
            lesson().survives_extremes();
        }
    };
}

/// The loom tests every concurrent lesson runs (`lesson()` must be in scope).
#[macro_export]
macro_rules! loom_tests {
    () => {
        /// The file takes its sync primitives from `super::sync` only.
        #[test]
        fn uses_only_the_sync_facade() {
            lesson().uses_only_the_sync_facade();
        }

        #[test]
        fn loom_burst_at_one_instant() {
            lesson().loom($crate::Scenario::burst());
        }

        #[test]
        fn loom_window_rollover() {
            lesson().loom($crate::Scenario::rollover());
        }

        #[test]
        fn loom_new_key() {
            lesson().loom($crate::Scenario::new_key());
        }

        #[test]
        fn loom_straddling_a_boundary() {
            lesson().loom($crate::Scenario::straddle());
        }
    };
}
