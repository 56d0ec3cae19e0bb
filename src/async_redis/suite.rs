//! The checks of lesson 10's kind, `async-redis-limiter`, as trials:
//! lesson 08's, by rule (its lesson is lesson 10's by `Deref`), then calls
//! that never block the runtime and share one connection, lesson 07's
//! checks for its layer, and the checks every limiter passes on a Redis
//! Cluster, a slot that moves and a master that fails over.

use super::Lesson;
use crate::redis_limiter::drive::RULES;
use crate::redis_limiter::suite as redis;
use crate::trial::{group, Get, Trials};

/// The kind's checks.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
    });
    let redis_lesson = move || -> &'static crate::redis_limiter::Lesson { lesson() };
    redis::shared(&mut t, redis_lesson, move || lesson().serve_app_server());
    t.group(group::RACE, |t| {
        // 64 calls at once: one connection, every command sent before the
        // first reply.
        t.test("concurrent_calls_share_one_connection", move || {
            lesson().concurrent_calls_share_one_connection()
        });
    });
    redis::faults(&mut t, redis_lesson, |t| {
        t.test("calls_never_block_the_runtime", move || {
            lesson().calls_never_block_the_runtime()
        });
        // `OnFailure::Local` answers from lesson 09's bounded store.
        t.test("local_fallback_is_bounded", move || {
            lesson().the_local_fallback_is_bounded()
        });
        // Every decision counted by outcome, the fallback's by reason.
        t.test("fallback_decisions_counted_by_reason", move || {
            lesson().fallback_decisions_are_counted_by_reason()
        });
    });
    t.group(group::END_TO_END, |t| {
        // Three app server processes, the file's layer over its limiter in
        // each, on one Redis: one limit, a paused Redis answered within the
        // timeout, `/metrics` by process.
        t.test("three_app_servers_keep_one_limit", move || {
            lesson().three_app_servers_keep_one_limit()
        });
    });
    // Lesson 07's checks, for the file's `AsyncRateLimitLayer` over the
    // harness's test limiter.
    t.module("layer", |t| {
        t.nest(crate::layer::suite::trials(move || lesson().layer()));
    });
    // The checks every limiter passes, each rule on a Redis Cluster.
    t.module("cluster", |t| {
        for rule in RULES {
            t.module(rule.module(), |t| {
                t.group(group::SLOW, |t| {
                    // The model's answers, on a cluster: every key of a
                    // client in one slot, `MOVED` followed.
                    t.test("agrees_with_model", move || {
                        lesson().on_cluster(rule).agrees_with_model()
                    });
                });
            });
        }
        t.group(group::SLOW, |t| {
            t.test("answers_hold_while_a_slot_moves", move || {
                lesson().answers_hold_while_a_slot_moves()
            });
            t.test(
                "a_failover_costs_at_most_the_writes_not_replicated",
                move || lesson().a_failover_costs_at_most_the_writes_not_replicated(),
            );
            t.test("cluster_down_gets_the_policy", move || {
                lesson().cluster_down_gets_the_policy()
            });
        });
    });
    t
}
