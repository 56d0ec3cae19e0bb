//! `bounded_tests!`: the tests of lesson 09's kind, `bounded-limiter`, and
//! those every lesson shares, run for each rule.

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
