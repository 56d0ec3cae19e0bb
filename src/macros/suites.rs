//! The tests the kinds of limiter share: constructor cases, properties,
//! snapshots, loom scenarios and source checks, each macro the tests of
//! one group. Each kind's `suite!` (in its folder) puts those that apply to
//! it in the group's module with [`__group!`](crate::__group).

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
        fn constructor(
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
        fn every_pair_of_faults() {
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
/// scope), from [`crate::timeline::STANDARD`], and the comparison `cargo run --
/// compare` asks for.
#[macro_export]
macro_rules! snapshot_tests {
    () => {
        $crate::snapshot_tests!(
            first_look: "first_look",
            boundary_burst: "boundary_burst",
            burst_then_steady: "burst_then_steady",
            two_keys: "two_keys",
            long_idle_gap: "long_idle_gap",
            exact_edges: "exact_edges",
        );
    };
    (compare) => {

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

        /// Keys that look alike, end in digits, are long, or collide under
        /// the usual hashes: each its own.
        #[test]
        fn keeps_look_alike_keys_apart() {
            lesson().keeps_look_alike_keys_apart();
        }
    };
}

/// The slow checks every lesson runs (`lesson()` must be in scope): a
/// quarter of a million calls each, so the runner runs them last, in the
/// `slow` group, after the quick checks, the properties and the races.
#[macro_export]
macro_rules! slow_tests {
    () => {
        /// A quarter of a million distinct keys, each its own, and keys whose
        /// clocks lag the others'.
        #[test]
        fn keeps_many_keys_apart() {
            lesson().keeps_many_keys_apart();
        }

        /// A limit past 2^16 reached at one instant.
        #[test]
        fn counts_past_2_16() {
            lesson().counts_past_2_16();
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
        #[test]
        fn burst_at_one_instant() {
            lesson().loom($crate::Scenario::burst());
        }

        #[test]
        fn window_rollover() {
            lesson().loom($crate::Scenario::rollover());
        }

        #[test]
        fn denial_at_rollover() {
            lesson().loom($crate::Scenario::denial_at_rollover());
        }

        #[test]
        fn new_key() {
            lesson().loom($crate::Scenario::new_key());
        }

        #[test]
        fn straddling_a_boundary() {
            lesson().loom($crate::Scenario::straddle());
        }

        #[test]
        fn key_after_an_idle_gap() {
            lesson().loom($crate::Scenario::idle_key());
        }

        #[test]
        fn units_left() {
            lesson().loom($crate::Scenario::units_left());
        }
    };
}

/// The source checks (`lesson()` must be in scope): `inputs`, time only
/// from the call, the clock given or Redis, and no sleeps, threads or
/// randomness; `facade`, locks and atomics from `super::sync`, so that a
/// hang names its line.
#[doc(hidden)]
#[macro_export]
macro_rules! __source_tests {
    ($($which:ident),*) => {
        $( $crate::__source_tests!(@ $which); )*
    };
    (@ inputs) => {
        /// Time only from the call, the clock given or Redis; no sleeps,
        /// threads or randomness.
        #[test]
        fn uses_only_its_inputs() {
            lesson().uses_only_its_inputs();
        }
    };
    (@ facade) => {
        /// Locks and atomics from `super::sync`, so that a hang names its line.
        #[test]
        fn uses_only_the_sync_facade() {
            lesson().uses_only_the_sync_facade();
        }
    };
}

/// One group of checks: a module of that name, where `lesson()` is the
/// enclosing one's. The runner sorts checks by these names (`config`,
/// `property`, `slow` (properties that take a second or more), `snapshot`,
/// `loom`, `race`, `fault`, `end_to_end`, `source`; the test file's
/// `examples`), and runs them in tiers by them.
#[doc(hidden)]
#[macro_export]
macro_rules! __group {
    ($group:ident { $($items:tt)* }) => {
        // Only the groups the runner knows (the catalog's `GROUPS`): another
        // name would be sorted as a property without a word.
        const _: () = ::std::assert!(
            $crate::__groups::is_group(::std::stringify!($group)),
            "not a group of checks: the groups are GROUPS in catalog/src/groups.rs"
        );
        mod $group {
            #[allow(unused_imports)]
            use super::*;

            $($items)*
        }
    };
}
