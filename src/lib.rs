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
pub mod runner;
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
///     stub: "../lessons/stubs/lesson_02.rs",
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
        stub: $stub:literal,
        reference: $reference:literal,
        mistakes: { $($mistake:ident : $mistake_file:literal),* $(,)? },
        alternatives: { $($alternative:ident : $alternative_file:literal),* $(,)? }
        $(, baseline: { $baseline_limiter:ident : $baseline_file:literal $(,)? })? $(,)?
    ) => {
        $( $crate::__variant!(false, baseline, $baseline_file, $baseline_limiter); )?
        $crate::__variant!($concurrent, learner, $learner, $limiter);
        $crate::__variant!($concurrent, stub, $stub, $limiter);
        $crate::__variant!($concurrent, reference, $reference, $limiter);
        $( $crate::__variant!($concurrent, $mistake, $mistake_file, $limiter); )*
        $( $crate::__variant!($concurrent, $alternative, $alternative_file, $limiter); )*

        /// This lesson, with the subject `KATA_SUBJECT` selects.
        fn lesson() -> &'static $crate::Lesson {
            static LESSON: ::std::sync::OnceLock<$crate::Lesson> = ::std::sync::OnceLock::new();
            LESSON.get_or_init(|| {
                $crate::Lesson::new(
                    env!("CARGO_MANIFEST_DIR"),
                    $number,
                    $title,
                    stringify!($limiter),
                    $crate::models::Algorithm::$algorithm,
                    $crate::checks::Implementations {
                        learner: learner::VARIANT,
                        stub: stub::VARIANT,
                        reference: reference::VARIANT,
                        mistakes: vec![$((stringify!($mistake), $mistake::VARIANT)),*],
                        alternatives: vec![$((stringify!($alternative), $alternative::VARIANT)),*],
                        baseline: None $(.or(Some((stringify!($baseline_limiter), baseline::VARIANT))))?,
                    },
                )
            })
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __variant {
    ($concurrent:tt, $name:ident, $file:literal, $limiter:ident) => {
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

            $crate::__variant!(@loom $concurrent, $file);

            pub struct Drive(on_std::imp::$limiter);

            impl $crate::Limiter for Drive {
                fn check(&mut self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    // Lesson 01's inherent `check(&mut self)`, or `RateLimiter::check`.
                    #[allow(unused_imports)]
                    use $crate::RateLimiter as _;
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
                build_loom: $crate::__variant!(@build_loom $concurrent, $limiter),
            };
        }
    };
    (@loom false, $file:literal) => {};
    (@loom true, $file:literal) => {
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
    };
    (@build_loom false, $limiter:ident) => {
        None
    };
    (@build_loom true, $limiter:ident) => {
        Some(|limit, period| {
            on_loom::imp::$limiter::new(limit, period)
                .map(|l| ::std::sync::Arc::new(l) as ::std::sync::Arc<dyn $crate::RateLimiter>)
        })
    };
}

/// The constructor cases every windowed lesson shares, as an rstest table
/// (`lesson()` must be in scope): each `ConfigError`, in the contract's order,
/// and the extreme valid windows.
#[macro_export]
macro_rules! config_tests {
    () => {
        #[rstest::rstest]
        #[case::zero_limit(0, ::std::time::Duration::from_secs(1), Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_limit_is_checked_first(0, ::std::time::Duration::ZERO, Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_window(1, ::std::time::Duration::ZERO, Err($crate::ConfigError::ZeroPeriod))]
        #[case::window_beyond_u64_nanos(
            1,
            ::std::time::Duration::from_nanos(u64::MAX) + ::std::time::Duration::from_nanos(1),
            Err($crate::ConfigError::TooLarge)
        )]
        #[case::longest_window(1, ::std::time::Duration::from_nanos(u64::MAX), Ok(()))]
        #[case::one_nanosecond(5, ::std::time::Duration::from_nanos(1), Ok(()))]
        #[case::largest_limit(u64::MAX, ::std::time::Duration::from_secs(1), Ok(()))]
        fn configuration(
            #[case] limit: u64,
            #[case] window: ::std::time::Duration,
            #[case] expected: Result<(), $crate::ConfigError>,
        ) {
            lesson().config(limit, window, expected);
        }
    };
}

/// The constructor cases of the token-bucket lessons, as an rstest table
/// (`lesson()` must be in scope): a capacity times a refill interval that
/// does not fit in u64 nanoseconds is `TooLarge` as well.
#[macro_export]
macro_rules! bucket_config_tests {
    () => {
        #[rstest::rstest]
        #[case::zero_capacity(0, ::std::time::Duration::from_secs(1), Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_capacity_is_checked_first(0, ::std::time::Duration::ZERO, Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_refill_interval(1, ::std::time::Duration::ZERO, Err($crate::ConfigError::ZeroPeriod))]
        #[case::refill_interval_beyond_u64_nanos(
            1,
            ::std::time::Duration::from_nanos(u64::MAX) + ::std::time::Duration::from_nanos(1),
            Err($crate::ConfigError::TooLarge)
        )]
        #[case::whole_bucket_beyond_u64_nanos(
            2,
            ::std::time::Duration::from_nanos(u64::MAX / 2 + 1),
            Err($crate::ConfigError::TooLarge)
        )]
        #[case::whole_bucket_just_fits(2, ::std::time::Duration::from_nanos(u64::MAX / 2), Ok(()))]
        #[case::largest_capacity(u64::MAX, ::std::time::Duration::from_nanos(1), Ok(()))]
        #[case::longest_refill_interval(1, ::std::time::Duration::from_nanos(u64::MAX), Ok(()))]
        #[case::one_nanosecond(5, ::std::time::Duration::from_nanos(1), Ok(()))]
        fn configuration(
            #[case] capacity: u64,
            #[case] refill_every: ::std::time::Duration,
            #[case] expected: Result<(), $crate::ConfigError>,
        ) {
            lesson().config(capacity, refill_every, expected);
        }
    };
}

/// The timelines every lesson draws as snapshots (`lesson()` must be in
/// scope), from [`timeline::STANDARD`], and the comparison `cargo run --
/// compare` asks for.
#[macro_export]
macro_rules! snapshot_tests {
    () => {
        $crate::snapshot_tests!(
            timeline_boundary_burst: "boundary_burst",
            timeline_burst_then_steady: "burst_then_steady",
            timeline_two_keys: "two_keys",
            timeline_long_idle_gap: "long_idle_gap",
            timeline_exact_edges: "exact_edges",
        );

        /// Run by `cargo run -- compare N [TIMELINE]` (it sets `KATA_COMPARE`):
        /// prints the learner's and the reference's answers side by side.
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            lesson().print_comparison(&::std::env::var("KATA_COMPARE").unwrap_or_default());
        }
    };
    ($($test:ident: $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                lesson().standard_snapshot($name);
            }
        )*
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
