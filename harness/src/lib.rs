//! `kata`: the harness of the ratelimit kata.
//!
//! Every lesson's test binary is built from one `tests/lesson_NN.rs` that
//! calls [`lesson!`] and adds its examples. The lesson itself is described
//! once, in `lessons/lessons.toml` (read by the `kata-catalog` crate);
//! everything else lives here, once:
//!
//! - [`time`], [`decision`]: the contract's types (`Timestamp`, `Decision`,
//!   `ConfigError`, `RateLimiter`);
//! - [`sync`]: the facade a learner file takes its primitives from, over std
//!   and over loom;
//! - [`drive`]: how a timeline drives each kind of subject (the seam where
//!   a new kind of lesson plugs in);
//! - [`models`]: an executable model of each algorithm, straight from the
//!   contract (`lessons/CONTRACT.md`);
//! - [`timeline`], [`gen`]: timelines, their notation and their generators;
//! - [`render`]: tables and strip charts of timelines;
//! - [`checks`], [`scenarios`]: the generic checks and the loom scenarios;
//! - [`subject`], [`source`], [`watchdog`], [`files`]: which file is
//!   tested, what its source may use, how its panics and hangs become
//!   readable failures, and file names as learners see them;
//! - [`signals`]: a stack overflow reported as Rust reports it, once loom
//!   has run in the process too;
//! - [`http`]: the `http-layer` kind of lesson 07, whose subject is a tower
//!   layer: its contract types, model, timelines, driver and checks;
//! - [`redis`]: the `redis-limiter` kind of lesson 08, whose state lives in a
//!   real `redis-server`: its contract types, the server, the proxy that
//!   orders app servers' commands, the driver and checks;
//! - [`memory`]: the `bounded-limiter` kind of lesson 09, a limiter that
//!   holds at most `max_keys` keys and reports through `metrics`: its
//!   contract types, model, driver and checks.
//!
//! Modules depend on each other in one direction only: the contract's types
//! and file names, then the facade, then the watchdog, then timelines and
//! models, then rendering, generators, drivers and scenarios, then the
//! checks; [`http`], [`redis`] and [`memory`] build on all of them, and
//! nothing else depends on them but [`http`], whose demo server's limiter
//! is [`memory`]'s model.

pub mod checks;
pub mod decision;
pub mod drive;
pub mod files;
pub mod gen;
pub mod http;
pub mod memory;
pub mod models;
pub mod redis;
pub mod render;
pub mod scenarios;
pub mod signals;
pub mod source;
pub mod subject;
pub mod sync;
pub mod time;
pub mod timeline;
pub mod watchdog;

pub use checks::Lesson;
pub use decision::{ConfigError, Decision, RateLimiter};
pub use drive::{Drive, Variant};
pub use scenarios::Scenario;
pub use time::Timestamp;

/// Defines this lesson in its test file: `kata::lesson!();` in
/// `tests/lesson_NN.rs`.
///
/// It includes what the lessons' build script wrote for `lesson_NN` from
/// `lessons/lessons.toml`: every implementation of the lesson compiled in as
/// a subject (the learner file, the stub, the reference, each file of
/// `mistakes/lesson_NN/` and the alternatives), `fn lesson() -> &'static
/// kata::Lesson`, and the standard checks of the lesson's kind. The test
/// file then only adds its examples.
#[macro_export]
macro_rules! lesson {
    () => {
        include!(concat!(
            env!("OUT_DIR"),
            "/",
            env!("CARGO_CRATE_NAME"),
            ".rs"
        ));
    };
}

/// What the lessons' build script writes for one lesson (see [`lesson!`]).
/// Each file is given twice: as learners see it, relative to the kata's
/// root, and as the compiler finds it.
#[doc(hidden)]
#[macro_export]
macro_rules! define_lesson {
    (
        number: $number:literal,
        title: $title:literal,
        kind: $kind:ident,
        algorithm: $algorithm:literal,
        limiter: $limiter:ident,
        learner: [$learner_path:literal, $learner:literal],
        stub: [$stub_path:literal, $stub:literal],
        reference: [$reference_path:literal, $reference:literal],
        mistakes: { $($mistake:ident : [$mistake_path:literal, $mistake_file:literal]),* $(,)? },
        alternatives: { $($alternative:ident : [$alternative_path:literal, $alternative_file:literal]),* $(,)? }
        $(, baseline: {
            $baseline_limiter:ident : [$baseline_path:literal, $baseline_file:literal],
            test: $baseline_test:ident $(,)?
        })? $(,)?
    ) => {
        $( $crate::__variant!(limiter, baseline, $baseline_path, $baseline_file, $baseline_limiter); )?
        $crate::__variant!($kind, learner, $learner_path, $learner, $limiter);
        $crate::__variant!($kind, stub, $stub_path, $stub, $limiter);
        $crate::__variant!($kind, reference, $reference_path, $reference, $limiter);
        $( $crate::__variant!($kind, $mistake, $mistake_path, $mistake_file, $limiter); )*
        $( $crate::__variant!($kind, $alternative, $alternative_path, $alternative_file, $limiter); )*

        /// This lesson, with the subject `KATA_SUBJECT` selects.
        fn lesson() -> &'static $crate::__lesson_type!($kind) {
            static LESSON: ::std::sync::OnceLock<$crate::__lesson_type!($kind)> = ::std::sync::OnceLock::new();
            LESSON.get_or_init(|| {
                <$crate::__lesson_type!($kind)>::new(
                    env!("CARGO_MANIFEST_DIR"),
                    $number,
                    $title,
                    stringify!($limiter),
                    $crate::models::Algorithm::named($algorithm),
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

        $crate::__suites!($kind);

        $(
            /// This lesson keeps another lesson's contract another way: on
            /// random timelines it must answer exactly as that lesson's
            /// reference does.
            #[test]
            fn $baseline_test() {
                lesson().agrees_with_baseline();
            }
        )?
    };
}

/// The type that holds a lesson of each kind and runs its checks.
#[doc(hidden)]
#[macro_export]
macro_rules! __lesson_type {
    (limiter) => {
        $crate::Lesson
    };
    (shared_limiter) => {
        $crate::Lesson
    };
    (http_layer) => {
        $crate::http::checks::HttpLesson
    };
    (redis_limiter) => {
        $crate::redis::checks::RedisLesson
    };
    (bounded_limiter) => {
        $crate::memory::checks::BoundedLesson
    };
}

/// The standard checks of each kind of subject.
#[doc(hidden)]
#[macro_export]
macro_rules! __suites {
    (limiter) => {
        /// The answers depend only on the configuration and the calls.
        #[test]
        fn uses_only_its_inputs() {
            lesson().uses_only_its_inputs();
        }

        $crate::config_tests!();
        $crate::property_tests!();
        $crate::snapshot_tests!();
    };
    (shared_limiter) => {
        $crate::__suites!(limiter);
        $crate::loom_tests!();
    };
    (http_layer) => {
        $crate::http_tests!();
    };
    (redis_limiter) => {
        $crate::redis_tests!();
    };
    (bounded_limiter) => {
        $crate::bounded_tests!();
    };
}

/// One implementation compiled in as a subject, driven as its kind says:
/// `limiter` once over std; `shared_limiter` over std and again over loom;
/// `http_layer` as a tower layer over the harness's test limiter, in
/// process and in an axum router.
#[doc(hidden)]
#[macro_export]
macro_rules! __variant {
    (http_layer, $name:ident, $path:literal, $file:literal, $layer:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            use $crate::http::drive::{AnyClock, Driven, HttpVariant, TestLimiter};
            use $crate::http::ManualClock;
            #[allow(unused_imports)]
            use $crate::http::drive::probe::{Fails as _, Works as _};

            pub const VARIANT: HttpVariant = HttpVariant {
                file: $path,
                source: include_str!($file),
                build: |p| {
                    let layer = on_std::imp::$layer::<TestLimiter, ManualClock>::new(
                        ::std::sync::Arc::new(p.limiter),
                        p.policy,
                        p.keys,
                        p.clock,
                    )?;
                    Ok(Driven::boxed(layer, p.inner))
                },
                // Whether the layer is a `Layer` with a usable service over a
                // limiter that is not `Clone` (a compile-time fact, read
                // without failing the build of the other subjects).
                over_any_limiter: || {
                    (&&$crate::http::drive::probe::Probe::<
                        on_std::imp::$layer<$crate::http::drive::probe::Unclonable, ManualClock>,
                    >::new())
                        .works()
                },
                router: |router, limiter, policy, keys, clock| {
                    let layer = on_std::imp::$layer::<TestLimiter, AnyClock>::new(
                        ::std::sync::Arc::new(limiter),
                        policy,
                        keys,
                        clock,
                    )?;
                    Ok(router.layer(layer))
                },
            };
        }
    };
    (redis_limiter, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            use ::std::sync::Arc;
            use $crate::redis::checks::RedisImpl;
            use $crate::redis::drive::{Limiter, RedisVariant, RuleKind};

            struct Driven(on_std::imp::$limiter);

            impl Limiter for Driven {
                fn try_check(
                    &self,
                    key: &str,
                    now: $crate::Timestamp,
                ) -> Result<$crate::Decision, $crate::redis::RedisError> {
                    self.0.try_check(key, now)
                }

                fn check(&self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    $crate::RateLimiter::check(&self.0, key, now)
                }
            }

            const REDIS: RedisVariant = RedisVariant {
                file: $path,
                source: include_str!($file),
                build: |rule, settings| {
                    on_std::imp::$limiter::new(rule, settings)
                        .map(|l| Arc::new(Driven(l)) as Arc<dyn Limiter>)
                },
            };

            pub const VARIANT: RedisImpl = RedisImpl {
                redis: REDIS,
                single: [
                    $crate::__variant!(@redis $path, $file, single, FixedWindow),
                    $crate::__variant!(@redis $path, $file, single, SlidingLog),
                    $crate::__variant!(@redis $path, $file, single, Gcra),
                ],
                servers: [
                    $crate::__variant!(@redis $path, $file, servers, FixedWindow),
                    $crate::__variant!(@redis $path, $file, servers, SlidingLog),
                    $crate::__variant!(@redis $path, $file, servers, Gcra),
                ],
            };
        }
    };
    (bounded_limiter, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            $crate::__variant!(@loom shared_limiter, $file);

            use ::std::sync::Arc;
            use $crate::memory::checks::BoundedImpl;
            use $crate::memory::drive::{roomy, Bounded, BoundedVariant, RuleKind};
            use $crate::RateLimiter;

            $crate::__variant!(@bounded_driver Driven, on_std::imp::$limiter, |l| l);
            $crate::__variant!(@bounded_driver OnLoom, on_loom::imp::$limiter, |l| l);
            // The wrapper answers; its limiter is swept and counted.
            $crate::__variant!(@bounded_driver Shadowed, on_std::imp::Shadow, |s| s.limiter());

            const BOUNDED: BoundedVariant = BoundedVariant {
                file: $path,
                source: include_str!($file),
                build: |rule, bounds| {
                    on_std::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(Driven(l)) as Arc<dyn Bounded>)
                },
                shadow: |rule, bounds| {
                    on_std::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(Shadowed(on_std::imp::Shadow::new(l))) as Arc<dyn Bounded>)
                },
                build_loom: |rule, bounds| {
                    on_loom::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(OnLoom(l)) as Arc<dyn Bounded>)
                },
            };

            pub const VARIANT: BoundedImpl = BoundedImpl {
                bounded: BOUNDED,
                rules: [
                    $crate::__variant!(@bounded $path, $file, $limiter, FixedWindow),
                    $crate::__variant!(@bounded $path, $file, $limiter, TokenBucket),
                ],
            };
        }
    };
    (@bounded_driver $name:ident, $ty:ty, |$it:ident| $limiter:expr) => {
        struct $name($ty);

        impl Bounded for $name {
            fn check(&self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                RateLimiter::check(&self.0, key, now)
            }

            fn sweep(&self, now: $crate::Timestamp) -> usize {
                let $it = &self.0;
                $limiter.sweep(now)
            }

            fn keys_held(&self) -> usize {
                let $it = &self.0;
                $limiter.keys_held()
            }
        }
    };
    (@bounded $path:literal, $file:literal, $limiter:ident, $rule:ident) => {
        $crate::Variant {
            file: $path,
            source: include_str!($file),
            build: |limit, period| $crate::memory::drive::swept(BOUNDED, RuleKind::$rule, limit, period),
            build_loom: Some(|limit, period| {
                on_loom::imp::$limiter::new(RuleKind::$rule.rule(limit, period), roomy())
                    .map(|l| Arc::new(l) as Arc<dyn RateLimiter>)
            }),
        }
    };
    (@redis $path:literal, $file:literal, $how:ident, $rule:ident) => {
        $crate::Variant {
            file: $path,
            source: include_str!($file),
            build: |limit, period| $crate::redis::drive::$how(REDIS, RuleKind::$rule, limit, period),
            build_loom: None,
        }
    };
    ($kind:ident, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            $crate::__variant!(@loom $kind, $file);

            pub struct Driven(on_std::imp::$limiter);

            impl $crate::Drive for Driven {
                fn check(&mut self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    // Lesson 01's inherent `check(&mut self)`, or `RateLimiter::check`.
                    #[allow(unused_imports)]
                    use $crate::RateLimiter as _;
                    self.0.check(key, now)
                }
            }

            pub const VARIANT: $crate::Variant = $crate::Variant {
                file: $path,
                source: include_str!($file),
                build: |limit, period| {
                    on_std::imp::$limiter::new(limit, period)
                        .map(|l| Box::new(Driven(l)) as Box<dyn $crate::Drive>)
                },
                build_loom: $crate::__variant!(@build_loom $kind, $limiter),
            };
        }
    };
    (@on_std $file:literal) => {
        pub mod on_std {
            #[allow(unused_imports)]
            pub mod sync {
                pub use $crate::sync::std_backend::*;
            }
            #[path = $file]
            pub mod imp;
        }
    };
    (@loom limiter, $file:literal) => {};
    (@loom shared_limiter, $file:literal) => {
        // The same file over loom: its warnings were already shown once.
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
    (@build_loom limiter, $limiter:ident) => {
        None
    };
    (@build_loom shared_limiter, $limiter:ident) => {
        Some(|limit, period| {
            on_loom::imp::$limiter::new(limit, period)
                .map(|l| ::std::sync::Arc::new(l) as ::std::sync::Arc<dyn $crate::RateLimiter>)
        })
    };
}

/// The constructor cases every lesson shares, as an rstest table (`lesson()`
/// must be in scope): each `ConfigError` in the contract's order, and the
/// extreme valid configurations. Each case gives the answer of the windowed
/// lessons (01–04) and of the token buckets (05, 06), where a capacity times
/// a refill interval beyond u64 nanoseconds is `TooLarge` as well.
#[macro_export]
macro_rules! config_tests {
    () => {
        #[rstest::rstest]
        #[case::zero_limit(0, $crate::__nanos!(1_000_000_000), Err($crate::ConfigError::ZeroLimit), Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_limit_is_checked_first(0, $crate::__nanos!(0), Err($crate::ConfigError::ZeroLimit), Err($crate::ConfigError::ZeroLimit))]
        #[case::zero_limit_is_checked_before_a_period_too_large(
            0,
            $crate::__nanos!(u64::MAX) + $crate::__nanos!(1),
            Err($crate::ConfigError::ZeroLimit),
            Err($crate::ConfigError::ZeroLimit)
        )]
        #[case::zero_period(1, $crate::__nanos!(0), Err($crate::ConfigError::ZeroPeriod), Err($crate::ConfigError::ZeroPeriod))]
        #[case::period_beyond_u64_nanos(
            1,
            $crate::__nanos!(u64::MAX) + $crate::__nanos!(1),
            Err($crate::ConfigError::TooLarge),
            Err($crate::ConfigError::TooLarge)
        )]
        #[case::limit_times_period_beyond_u64_nanos(2, $crate::__nanos!(u64::MAX / 2 + 1), Ok(()), Err($crate::ConfigError::TooLarge))]
        #[case::limit_times_period_just_fits(2, $crate::__nanos!(u64::MAX / 2), Ok(()), Ok(()))]
        #[case::largest_limit_of_one_second(u64::MAX, $crate::__nanos!(1_000_000_000), Ok(()), Err($crate::ConfigError::TooLarge))]
        #[case::largest_limit_of_one_nanosecond(u64::MAX, $crate::__nanos!(1), Ok(()), Ok(()))]
        #[case::longest_period(1, $crate::__nanos!(u64::MAX), Ok(()), Ok(()))]
        #[case::one_nanosecond(5, $crate::__nanos!(1), Ok(()), Ok(()))]
        fn configuration(
            #[case] limit: u64,
            #[case] period: ::std::time::Duration,
            #[case] windowed: Result<(), $crate::ConfigError>,
            #[case] bucket: Result<(), $crate::ConfigError>,
        ) {
            lesson().config(limit, period, windowed, bucket);
        }

        /// Every pair of a limit and a period from the edges of each fault,
        /// so that every pair of faults that can occur together is tried.
        #[test]
        fn configuration_every_pair_of_faults() {
            lesson().config_grid();
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __nanos {
    ($n:expr) => {
        ::std::time::Duration::from_nanos($n)
    };
}

/// The timelines every lesson draws as snapshots (`lesson()` must be in
/// scope), from [`timeline::STANDARD`], and the comparison `cargo run --
/// compare` asks for.
#[macro_export]
macro_rules! snapshot_tests {
    () => {
        $crate::snapshot_tests!(
            timeline_first_look: "first_look",
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
        $crate::__exact_properties!();

        /// The same answers when each call comes from another OS thread.
        #[test]
        fn answers_do_not_depend_on_the_thread() {
            lesson().answers_do_not_depend_on_the_thread();
        }

        /// A call's cost does not grow with the idle time before it.
        #[test]
        fn stays_quick_after_idle_gaps() {
            lesson().stays_quick_after_idle_gaps(concat!(
                module_path!(),
                "::stays_quick_after_idle_gaps"
            ));
        }

        /// More distinct keys than any fixed number of buckets, each its own.
        #[test]
        fn keeps_many_keys_apart() {
            lesson().keeps_many_keys_apart();
        }
    };
}

/// The properties of answers, request by request, that every kind of
/// limiter runs, whatever carries its state (`lesson()` must be in scope).
#[doc(hidden)]
#[macro_export]
macro_rules! __exact_properties {
    () => {
        /// Exact agreement with the reference solution, request by request.
        #[test]
        fn agrees_with_reference() {
            lesson().agrees_with_reference();
        }

        /// Exact agreement with the harness's model of the contract.
        #[test]
        fn agrees_with_model() {
            lesson().agrees_with_model();
        }

        /// The lesson's limit invariant, late timestamps included.
        #[test]
        fn keeps_the_limit() {
            lesson().keeps_the_limit();
        }

        /// Limits in the thousands, reached by long bursts.
        #[test]
        fn keeps_long_bursts() {
            lesson().keeps_long_bursts();
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

        #[test]
        fn loom_key_after_an_idle_gap() {
            lesson().loom($crate::Scenario::idle_key());
        }

        #[test]
        fn loom_units_left() {
            lesson().loom($crate::Scenario::units_left());
        }
    };
}

/// The source checks of the kinds whose files take time and locks from
/// what they are given (`lesson()` must be in scope).
#[doc(hidden)]
#[macro_export]
macro_rules! __source_tests {
    () => {
        /// Time only from the call, the clock given or Redis; no sleeps,
        /// threads or randomness.
        #[test]
        fn uses_only_its_inputs() {
            lesson().uses_only_its_inputs();
        }

        /// Locks and atomics from `super::sync`, so that a hang names its line.
        #[test]
        fn uses_only_the_sync_facade() {
            lesson().uses_only_the_sync_facade();
        }
    };
}

/// The checks of lesson 07's kind, `http-layer` (`lesson()` must be in
/// scope).
#[macro_export]
macro_rules! http_tests {
    () => {
        $crate::__source_tests!();

        #[rstest::rstest]
        #[case::empty_name("", 1, $crate::__secs!(1), Err($crate::http::PolicyError::EmptyName))]
        #[case::empty_name_is_checked_first("", 0, $crate::__secs!(0), Err($crate::http::PolicyError::EmptyName))]
        #[case::name_outside_printable_ascii("café", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
        #[case::name_of_characters_beyond_latin_1("限流", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
        #[case::control_character_in_name("a\tb", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
        #[case::delete_character_in_name("a\x7fb", 1, $crate::__secs!(1), Err($crate::http::PolicyError::InvalidName))]
        #[case::zero_quota("api", 0, $crate::__secs!(1), Err($crate::http::PolicyError::ZeroQuota))]
        #[case::zero_quota_is_checked_before_the_window("api", 0, ::std::time::Duration::from_millis(1500), Err($crate::http::PolicyError::ZeroQuota))]
        #[case::zero_window("api", 1, $crate::__secs!(0), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
        #[case::under_a_second("api", 1, ::std::time::Duration::from_millis(999), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
        #[case::a_fraction_of_a_second_more("api", 1, ::std::time::Duration::from_millis(1500), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
        #[case::a_nanosecond_more_than_a_second("api", 1, ::std::time::Duration::new(1, 1), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
        #[case::a_nanosecond_past_2_to_the_24_seconds("api", 1, ::std::time::Duration::new(1 << 24, 1), Err($crate::http::PolicyError::WindowNotWholeSeconds))]
        #[case::one_second("api", 1, $crate::__secs!(1), Ok(()))]
        #[case::quotes_and_backslashes_are_escaped_not_refused("say \"hi\" \\o/", 1, $crate::__secs!(1), Ok(()))]
        #[case::largest_quota_and_window("api", u64::MAX, $crate::__secs!(u64::MAX), Ok(()))]
        fn configuration(
            #[case] name: &str,
            #[case] quota: u64,
            #[case] window: ::std::time::Duration,
            #[case] expected: Result<(), $crate::http::PolicyError>,
        ) {
            lesson().policy(name, quota, window, expected);
        }

        /// Every name, quota and window from the edges of each fault,
        /// together.
        #[test]
        fn configuration_every_pair_of_faults() {
            lesson().policy_grid();
        }

        /// Keys, statuses, every rate-limit header byte, the problem body
        /// and the inner service's calls, against the model.
        #[test]
        fn agrees_with_model() {
            lesson().agrees_with_model();
        }

        #[test]
        fn agrees_with_reference() {
            lesson().agrees_with_reference();
        }

        /// What a client writes in front of X-Forwarded-For never changes its key.
        #[test]
        fn keys_cannot_be_forged() {
            lesson().keys_cannot_be_forged();
        }

        #[test]
        fn calls_the_inner_service_once_per_allowed_request() {
            lesson().calls_the_inner_service_once_per_allowed_request();
        }

        #[test]
        fn reports_a_missing_peer_address_once() {
            lesson().reports_a_missing_peer_address_once();
        }

        /// The layer builds and serves over limiters that are not `Clone`,
        /// as none of lessons 02–06 is.
        #[test]
        fn compiles_over_any_limiter() {
            lesson().compiles_over_any_limiter();
        }

        /// A real axum server on 127.0.0.1:0 and a real HTTP client.
        #[test]
        fn end_to_end_over_loopback() {
            lesson().end_to_end_over_loopback();
        }

        $crate::__named_snapshots!(
            timeline_first_look: "first_look",
            timeline_retry_after_rounds_up: "retry_after_rounds_up",
            timeline_behind_a_proxy: "behind_a_proxy",
            timeline_api_keys_and_ipv6: "api_keys_and_ipv6",
        );

        /// Run by `cargo run -- compare 7 [TIMELINE]` (it sets `KATA_COMPARE`).
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            lesson().print_comparison(&::std::env::var("KATA_COMPARE").unwrap_or_default());
        }

        /// Run by `cargo run -- serve` (it sets `KATA_SERVE_PORT`).
        #[test]
        #[ignore = "run by `cargo run -- serve`"]
        fn demo_server() {
            lesson().demo(
                ::std::env::var("KATA_SERVE_PORT").ok().and_then(|p| p.parse().ok()).unwrap_or(3000),
            );
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __secs {
    ($n:expr) => {
        ::std::time::Duration::from_secs($n)
    };
}

/// One test per named exchange of [`http::checks::SNAPSHOTS`].
#[doc(hidden)]
#[macro_export]
macro_rules! __named_snapshots {
    ($($test:ident: $name:literal),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                lesson().named_snapshot($name);
            }
        )*
    };
}

/// The checks of lesson 08's kind, `redis-limiter` (`lesson()` must be in
/// scope): the checks every lesson shares, once per rule as one app server
/// and once as three, then races between app servers, faults, keys, the
/// server's clock and the drawings.
#[macro_export]
macro_rules! redis_tests {
    () => {
        $crate::__source_tests!();

        $crate::__redis_rule!(fixed_window, FixedWindow);

        $crate::__redis_rule!(sliding_log, SlidingLog);
        $crate::__redis_rule!(gcra, Gcra);

        #[test]
        fn race_burst_at_one_instant() {
            lesson().race($crate::Scenario::burst());
        }

        #[test]
        fn race_window_rollover() {
            lesson().race($crate::Scenario::rollover());
        }

        #[test]
        fn race_new_key() {
            lesson().race($crate::Scenario::new_key());
        }

        #[test]
        fn race_straddling_a_boundary() {
            lesson().race($crate::Scenario::straddle());
        }

        #[test]
        fn race_key_after_an_idle_gap() {
            lesson().race($crate::Scenario::idle_key());
        }

        #[test]
        fn race_units_left() {
            lesson().race($crate::Scenario::units_left());
        }

        #[test]
        fn fault_server_paused() {
            lesson().follows_its_failure_policy_when_the_server_is_paused();
        }

        #[test]
        fn fault_server_killed_and_restarted() {
            lesson().follows_its_failure_policy_when_the_server_is_killed_and_restarted();
        }

        #[test]
        fn fault_server_unreachable() {
            lesson().follows_its_failure_policy_when_the_server_is_unreachable();
        }

        #[test]
        fn fault_cut_off_between_commands() {
            lesson().leaves_no_key_without_a_ttl_when_cut_off();
        }

        #[test]
        fn keys_live_under_their_hash_tag_and_expire() {
            lesson().keys_live_under_their_hash_tag_and_expire();
        }

        #[test]
        fn server_clock_is_one_clock_for_every_app_server() {
            lesson().server_clock_is_one_clock_for_every_app_server();
        }

        #[test]
        fn timeline_three_servers_fixed_window() {
            lesson().three_servers_snapshot($crate::redis::drive::RuleKind::FixedWindow);
        }

        #[test]
        fn timeline_three_servers_gcra() {
            lesson().three_servers_snapshot($crate::redis::drive::RuleKind::Gcra);
        }

        /// Run by `cargo run -- compare 8 [TIMELINE]` (it sets `KATA_COMPARE`):
        /// the timeline under each rule, yours beside the reference's.
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            let which = ::std::env::var("KATA_COMPARE").unwrap_or_default();
            for kind in $crate::redis::drive::RuleKind::ALL {
                println!("== {}", kind.name());
                lesson().rule(kind).print_comparison(&which);
            }
        }
    };
}

/// The checks of lesson 09's kind, `bounded-limiter` (`lesson()` must be in
/// scope). The test binary counts the bytes it holds, for the flood.
#[macro_export]
macro_rules! bounded_tests {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::memory::Counting = $crate::memory::Counting;

        /// Time only from the call; no sleeps, threads or randomness.
        #[test]
        fn uses_only_its_inputs() {
            lesson().uses_only_its_inputs();
        }

        /// `max_keys: 0` is refused, after the rule's own errors.
        #[test]
        fn configuration_zero_keys() {
            lesson().refuses_zero_keys();
        }

        $crate::__bounded_rule!(fixed_window, FixedWindow);
        $crate::__bounded_rule!(token_bucket, TokenBucket);

        /// A store of three keys under pressure, step by step, with its metrics.
        #[test]
        fn timeline_store_under_pressure() {
            lesson().store_snapshot();
        }

        /// Run by `cargo run -- compare 9` (it sets `KATA_COMPARE`).
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            let which = ::std::env::var("KATA_COMPARE").unwrap_or_default();
            lesson().print_comparison(&which);
        }
    };
}

/// The checks of one rule of lesson 09: those every lesson shares on a
/// limiter swept whenever the clock moves on, the loom scenarios, and the
/// kind's own.
#[doc(hidden)]
#[macro_export]
macro_rules! __bounded_rule {
    ($module:ident, $rule:ident) => {
        mod $module {
            fn lesson() -> &'static $crate::Lesson {
                super::lesson().rule($crate::memory::drive::RuleKind::$rule)
            }

            /// The rule's configuration errors, every pair of faults
            /// together (the rule's own `validate` makes them; the table of
            /// single cases would test the harness).
            #[test]
            fn configuration_every_pair_of_faults() {
                lesson().config_grid();
            }

            $crate::property_tests!();
            $crate::loom_tests!();

            /// Step by step against the model: answers, keys held, sweeps,
            /// overflow answers and metrics, with a bound of 1 to 4 keys.
            #[test]
            fn agrees_with_model_under_a_bound() {
                super::lesson()
                    .agrees_with_model_under_a_bound($crate::memory::drive::RuleKind::$rule);
            }

            /// Sweeps one nanosecond either side of the instant a key
            /// becomes fresh.
            #[test]
            fn forgets_a_key_exactly_when_it_is_fresh() {
                super::lesson()
                    .forgets_a_key_exactly_when_it_is_fresh($crate::memory::drive::RuleKind::$rule);
            }

            /// Shadow mode decides and counts, and never denies.
            #[test]
            fn shadow_mode_never_denies() {
                super::lesson().shadow_never_denies($crate::memory::drive::RuleKind::$rule);
            }

            /// Sweeps and a full store, raced under loom.
            #[test]
            fn loom_a_sweep_races_an_update() {
                super::lesson().race($crate::memory::checks::Race::sweep_races_an_update(
                    $crate::memory::drive::RuleKind::$rule,
                ));
            }

            #[test]
            fn loom_two_new_keys_and_one_slot() {
                super::lesson().race($crate::memory::checks::Race::two_new_keys_and_one_slot(
                    $crate::memory::drive::RuleKind::$rule,
                ));
            }

            #[test]
            fn loom_one_clock_for_two_calls() {
                super::lesson().race($crate::memory::checks::Race::one_clock_for_two_calls(
                    $crate::memory::drive::RuleKind::$rule,
                ));
            }

            /// A million keys through a store of ten thousand.
            #[test]
            fn holds_at_most_max_keys_under_a_flood() {
                super::lesson().holds_at_most_max_keys_under_a_flood(
                    $crate::memory::drive::RuleKind::$rule,
                    concat!(module_path!(), "::holds_at_most_max_keys_under_a_flood"),
                );
            }
        }
    };
}

/// The checks every lesson shares, for one rule of lesson 08.
#[doc(hidden)]
#[macro_export]
macro_rules! __redis_rule {
    ($module:ident, $rule:ident) => {
        mod $module {
            fn lesson() -> &'static $crate::Lesson {
                super::lesson().rule($crate::redis::drive::RuleKind::$rule)
            }

            /// The rule's configuration errors, every pair of faults
            /// together (the rule's own `validate` makes them; the table of
            /// single cases would test the harness).
            #[test]
            fn configuration_every_pair_of_faults() {
                lesson().config_grid();
            }

            $crate::__exact_properties!();

            /// Three app servers taking requests in turn answer as one limiter.
            #[test]
            fn three_app_servers_agree_with_model() {
                super::lesson()
                    .servers($crate::redis::drive::RuleKind::$rule)
                    .agrees_with_model();
            }
        }
    };
}
