//! `redis_tests!`: the tests of lesson 08's kind, `redis-limiter`, and
//! those every lesson shares, run for each rule.

/// The checks of lesson 08's kind, `redis-limiter` (`lesson()` must be in
/// scope): for each rule, the checks every lesson shares, as one app server
/// and as three, races between app servers, and its keys and times to live;
/// then faults, the server's clock and the drawings.
#[macro_export]
macro_rules! redis_tests {
    () => {
        $crate::__group!(source { $crate::__source_tests!(inputs, facade); });

        $crate::__redis_shared!();

        $crate::__redis_faults!();

        $crate::__group!(snapshot {
            #[test]
            fn three_servers_fixed_window() {
                lesson().three_servers_snapshot($crate::redis::drive::RuleKind::FixedWindow);
            }

            #[test]
            fn three_servers_gcra() {
                lesson().three_servers_snapshot($crate::redis::drive::RuleKind::Gcra);
            }
        });
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

            /// Lesson 08 itself, for the checks of this rule it runs.
            fn whole() -> &'static $crate::redis::Lesson {
                super::lesson()
            }

            const RULE: $crate::redis::drive::RuleKind = $crate::redis::drive::RuleKind::$rule;

            $crate::__group!(config {
                /// The rule's configuration errors, every pair of faults
                /// together (the rule's own `validate` makes them; the table of
                /// single cases would test the harness).
                #[test]
                fn every_pair_of_faults() {
                    lesson().config_grid();
                }
            });

            $crate::__group!(property { $crate::__exact_properties!(); });

            $crate::__group!(race {
                #[test]
                fn burst_at_one_instant() {
                    whole().race(RULE, $crate::Scenario::burst());
                }

                #[test]
                fn window_rollover() {
                    whole().race(RULE, $crate::Scenario::rollover());
                }

                #[test]
                fn denial_at_rollover() {
                    whole().race(RULE, $crate::Scenario::denial_at_rollover());
                }

                #[test]
                fn new_key() {
                    whole().race(RULE, $crate::Scenario::new_key());
                }

                #[test]
                fn straddling_a_boundary() {
                    whole().race(RULE, $crate::Scenario::straddle());
                }

                #[test]
                fn key_after_an_idle_gap() {
                    whole().race(RULE, $crate::Scenario::idle_key());
                }

                #[test]
                fn units_left() {
                    whole().race(RULE, $crate::Scenario::units_left());
                }
            });

            $crate::__group!(slow {
                /// Every key under the client's hash tag, and each one's time
                /// to live exactly as long as its state matters.
                #[test]
                fn keys_live_under_their_hash_tag_and_expire() {
                    whole().keys_live_under_their_hash_tag_and_expire(RULE);
                }

                /// Three app servers taking requests in turn answer as one limiter.
                #[test]
                fn three_app_servers_agree_with_model() {
                    whole()
                        .servers($crate::redis::drive::RuleKind::$rule)
                        .agrees_with_model();
                }
            });
        }
    };
}

/// Lesson 08's failures and its server clock, which lesson 10's suite runs
/// too (`lesson()` must be in scope); `$more` are a suite's own faults.
#[doc(hidden)]
#[macro_export]
macro_rules! __redis_faults {
    ($($more:item)*) => {
        $crate::__group!(fault {
            $($more)*

            #[test]
            fn server_paused() {
                lesson().follows_its_failure_policy_when_the_server_is_paused();
            }

            #[test]
            fn server_killed_and_restarted() {
                lesson().follows_its_failure_policy_when_the_server_is_killed_and_restarted();
            }

            #[test]
            fn server_out_of_memory() {
                lesson().follows_its_failure_policy_when_the_server_is_out_of_memory();
            }

            #[test]
            fn server_read_only() {
                lesson().follows_its_failure_policy_when_the_server_is_read_only();
            }

            #[test]
            fn script_fails() {
                lesson().follows_its_failure_policy_when_the_script_fails();
            }

            #[test]
            fn server_unreachable() {
                lesson().follows_its_failure_policy_when_the_server_is_unreachable();
            }

            #[test]
            fn cut_off_between_commands() {
                lesson().leaves_no_key_without_a_ttl_when_cut_off();
            }
        });

        $crate::__group!(property {
            #[test]
            fn server_clock_is_one_clock_for_every_app_server() {
                lesson().server_clock_is_one_clock_for_every_app_server();
            }
        });

    };
}

/// What lessons 08 and 10 share (`lesson()` must be in scope): the app
/// server process, the checks every limiter passes for each rule, and the
/// comparison `cargo run -- compare` runs.
#[doc(hidden)]
#[macro_export]
macro_rules! __redis_shared {
    () => {
        /// Not a check: an app server process the checks start (this test
        /// binary run again, as `app_server`); it does nothing elsewhere.
        #[test]
        #[ignore = "an app server process the checks start"]
        fn app_server() {
            lesson().serve_app_server();
        }

        $crate::__redis_rule!(fixed_window, FixedWindow);
        $crate::__redis_rule!(sliding_log, SlidingLog);
        $crate::__redis_rule!(gcra, Gcra);

        /// Run by `cargo run -- compare N [TIMELINE]` (it sets `KATA_COMPARE`):
        /// the timeline under each rule, yours beside the reference's.
        #[test]
        #[ignore = "run by `cargo run -- compare`"]
        fn compare_with_reference() {
            let which = ::std::env::var("KATA_COMPARE").unwrap_or_default();
            for kind in $crate::redis::drive::RULES {
                println!("== {}", kind.name());
                lesson().rule(kind).print_comparison(&which);
            }
        }
    };
}
