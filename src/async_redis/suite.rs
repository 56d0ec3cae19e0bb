//! `async_redis_tests!`: the tests of lesson 10's kind,
//! `async-redis-limiter`: lesson 08's, by rule, then the runtime's and the
//! cluster's.

/// The checks of lesson 10's kind (`lesson()` must be in scope): every
/// check of lesson 08 (its lesson is lesson 10's by `Deref`), then calls
/// that never block the runtime and share one connection, and the checks
/// every limiter passes on a Redis Cluster, a slot that moves and a master
/// that fails over.
#[macro_export]
macro_rules! async_redis_tests {
    () => {
        $crate::__group!(source {
            $crate::__source_tests!(inputs);
        });

        $crate::__redis_shared!();

        $crate::__group!(race {
            /// 64 calls at once: one connection, every command sent
            /// before the first reply.
            #[test]
            fn concurrent_calls_share_one_connection() {
                lesson().concurrent_calls_share_one_connection();
            }
        });

        $crate::__redis_faults! {
            #[test]
            fn calls_never_block_the_runtime() {
                lesson().calls_never_block_the_runtime();
            }

            /// `OnFailure::Local` answers from lesson 09's bounded store.
            #[test]
            fn local_fallback_is_bounded() {
                lesson().the_local_fallback_is_bounded();
            }

            /// Every decision counted by outcome, the fallback's by reason.
            #[test]
            fn fallback_decisions_counted_by_reason() {
                lesson().fallback_decisions_are_counted_by_reason();
            }
        }

        $crate::__group!(end_to_end {
            /// Three app server processes, the file's layer over its
            /// limiter in each, on one Redis: one limit, a paused Redis
            /// answered within the timeout, `/metrics` by process.
            #[test]
            fn three_app_servers_keep_one_limit() {
                lesson().three_app_servers_keep_one_limit();
            }
        });

        /// Lesson 07's checks, for the file's `AsyncRateLimitLayer` over the
        /// harness's test limiter.
        mod layer {
            fn lesson() -> &'static $crate::http::Lesson {
                super::lesson().layer()
            }

            $crate::http_tests!();
        }

        /// The checks every limiter passes, each rule on a Redis Cluster.
        mod cluster {
            #[allow(unused_imports)]
            use super::*;

            $crate::__async_redis_cluster_rule!(fixed_window, FixedWindow);
            $crate::__async_redis_cluster_rule!(sliding_log, SlidingLog);
            $crate::__async_redis_cluster_rule!(gcra, Gcra);

            $crate::__group!(slow {
                #[test]
                fn answers_hold_while_a_slot_moves() {
                    lesson().answers_hold_while_a_slot_moves();
                }

                #[test]
                fn a_failover_costs_at_most_the_writes_not_replicated() {
                    lesson().a_failover_costs_at_most_the_writes_not_replicated();
                }

                #[test]
                fn cluster_down_gets_the_policy() {
                    lesson().cluster_down_gets_the_policy();
                }
            });
        }
    };
}

/// The checks every limiter passes, for one rule of lesson 10 on the
/// shared Redis Cluster.
#[doc(hidden)]
#[macro_export]
macro_rules! __async_redis_cluster_rule {
    ($module:ident, $rule:ident) => {
        mod $module {
            fn lesson() -> &'static $crate::Lesson {
                super::super::lesson().on_cluster($crate::redis::drive::RuleKind::$rule)
            }

            $crate::__group!(slow {
                /// The model's answers, on a cluster: every key of a
                /// client in one slot, `MOVED` followed.
                #[test]
                fn agrees_with_model() {
                    lesson().agrees_with_model();
                }
            });
        }
    };
}
