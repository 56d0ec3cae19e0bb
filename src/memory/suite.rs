//! `bounded_tests!`: the tests of lesson 09's kind, `bounded-limiter`, and
//! those every lesson shares, run for each rule.

/// The checks of lesson 09's kind, `bounded-limiter` (`lesson()` must be in
/// scope). The test binary counts the bytes it holds, for the flood.
#[macro_export]
macro_rules! bounded_tests {
    () => {
        #[global_allocator]
        static ALLOCATOR: $crate::memory::Counting = $crate::memory::Counting;

        $crate::__group!(source { $crate::__source_tests!(inputs); });

        $crate::__group!(config {
            /// `max_keys: 0` is refused, after the rule's own errors.
            #[test]
            fn zero_keys() {
                lesson().refuses_zero_keys();
            }
        });

        $crate::__bounded_rule!(fixed_window, FixedWindow);
        $crate::__bounded_rule!(token_bucket, TokenBucket);

        $crate::__group!(snapshot {
            /// A store of three keys under pressure, step by step, with its metrics.
            #[test]
            fn store_under_pressure() {
                lesson().store_snapshot();
            }
        });

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

            /// Lesson 09 itself, for the checks of this rule it runs.
            fn whole() -> &'static $crate::memory::Lesson {
                super::lesson()
            }

            const RULE: $crate::memory::drive::RuleKind = $crate::memory::drive::RuleKind::$rule;

            $crate::__group!(source { $crate::__source_tests!(facade); });

            $crate::__group!(config {
                /// The rule's configuration errors, every pair of faults
                /// together (the rule's own `validate` makes them; the table of
                /// single cases would test the harness).
                #[test]
                fn every_pair_of_faults() {
                    lesson().config_grid();
                }
            });

            $crate::__group!(property {
                $crate::property_tests!();

                /// Step by step against the model: answers, keys held, sweeps,
                /// overflow answers and metrics, with a bound of 1 to 4 keys.
                #[test]
                fn agrees_with_model_under_a_bound() {
                    whole().agrees_with_model_under_a_bound(RULE);
                }

                /// Sweeps one nanosecond either side of the instant a key
                /// becomes fresh.
                #[test]
                fn forgets_a_key_exactly_when_it_is_fresh() {
                    whole().forgets_a_key_exactly_when_it_is_fresh(RULE);
                }

                /// Shadow mode decides and counts, and never denies.
                #[test]
                fn shadow_mode_never_denies() {
                    whole().shadow_never_denies(RULE);
                }

                /// Thousands of keys forgotten by one sweep.
                #[test]
                fn forgets_thousands_at_once() {
                    whole().forgets_thousands_at_once(RULE);
                }

                /// Thousands of keys forgotten by a full store taking a new one.
                #[test]
                fn forgets_thousands_to_make_room() {
                    whole().forgets_thousands_to_make_room(RULE);
                }

                /// Fresh instants past, and on, the end of `u64` time.
                #[test]
                fn forgets_exactly_at_the_end_of_time() {
                    whole().forgets_exactly_at_the_end_of_time(RULE);
                }

                /// A full store at the end of `u64` time.
                #[test]
                fn is_full_at_the_end_of_time() {
                    whole().is_full_at_the_end_of_time(RULE);
                }
            });

            $crate::__group!(slow {
                $crate::slow_tests!();

                /// A million keys through a store of ten thousand.
                #[test]
                fn holds_at_most_max_keys_under_a_flood() {
                    whole().holds_at_most_max_keys_under_a_flood(
                        RULE,
                        concat!(module_path!(), "::holds_at_most_max_keys_under_a_flood"),
                    );
                }
            });

            $crate::__group!(loom {
                $crate::loom_tests!();

                /// Sweeps and a full store, raced under loom.
                #[test]
                fn a_sweep_races_an_update() {
                    whole().race($crate::memory::checks::Race::sweep_races_an_update(RULE));
                }

                #[test]
                fn two_new_keys_with_room() {
                    whole().race($crate::memory::checks::Race::two_new_keys_with_room(RULE));
                }

                #[test]
                fn two_new_keys_and_one_slot() {
                    whole().race($crate::memory::checks::Race::two_new_keys_and_one_slot(RULE));
                }

                #[test]
                fn one_clock_for_two_calls() {
                    whole().race($crate::memory::checks::Race::one_clock_for_two_calls(RULE));
                }
            });
        }
    };
}
