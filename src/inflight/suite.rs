//! The checks of lesson 12's kind, `in-flight`, as trials.

use std::time::Duration;

use super::adapt::Adaptive;
use super::checks::Policy;
use super::gen::Family;
use super::race::Race;
use super::serve::Check;
use super::{AimdPolicy, DelayPolicy, GradientPolicy, Lesson, PolicyError, ShedPolicy};
use crate::checks::trials::compare;
use crate::trial::{group, Get, Named, Trials};

/// How many cases each property runs.
const CASES: u32 = 150;

/// The kind's checks: its source, its policies' errors, the permits, the
/// layers and the controllers against their models, the permits under
/// loom, the controllers against a server whose latency grows with load, a
/// real axum server on loopback, and the drawings.
pub fn trials(lesson: impl Get<Lesson>) -> Trials {
    let mut t = Trials::new();
    t.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", move || {
            lesson().uses_only_its_inputs()
        });
        t.test("uses_only_the_sync_facade", move || {
            lesson().uses_only_the_sync_facade()
        });
    });
    t.group(group::CONFIG, |t| {
        t.cases("policy", policy_cases(), move |(policy, expected)| {
            lesson().policy(policy, expected)
        });
    });
    t.group(group::PROPERTY, |t| {
        t.test("permits_agree_with_model", move || {
            lesson().permits_agree_with_model(false, CASES)
        });
        // With tasks waiting in poll_acquire: each woken when a give-back
        // or a new limit makes a permit free to it.
        t.test("waiting_tasks_are_woken", move || {
            lesson().permits_agree_with_model(true, CASES)
        });
        let families: [Named<Family>; 3] = [
            ("concurrency_limit_agrees_with_model", Family::Concurrency),
            ("shedding_agrees_with_model", Family::Shed),
            ("delay_layer_agrees_with_model", Family::Delay),
        ];
        for (name, family) in families {
            t.test(name, move || lesson().agrees_with_model(family, CASES));
        }
        t.test("delay_queue_agrees_with_model", move || {
            lesson().queue_agrees_with_model(CASES * 2)
        });
        t.test("aimd_agrees_with_model", move || {
            lesson().controller_agrees_with_model(Adaptive::Aimd, CASES * 2)
        });
        t.test("gradient_agrees_with_model", move || {
            lesson().controller_agrees_with_model(Adaptive::Gradient, CASES * 2)
        });
    });
    t.group(group::SIMULATION, |t| {
        t.test("aimd_converges_and_backs_off", move || {
            lesson().converges(Adaptive::Aimd)
        });
        t.test("gradient_converges_and_backs_off", move || {
            lesson().converges(Adaptive::Gradient)
        });
        // The table the text quotes, and both controllers drawn: after the
        // exact checks, whose messages say more.
        t.test("the_table_of_limits", move || lesson().adaptive_snapshot());
    });
    t.group(group::LOOM, |t| {
        let races: [Named<Race>; 4] = [
            ("two_take_the_last_permit", Race::TwoTakeTheLastPermit),
            ("a_give_back_beside_a_take", Race::AGiveBackBesideATake),
            ("no_waiter_is_forgotten", Race::NoWaiterIsForgotten),
            ("the_reserved_share", Race::TheReservedShare),
        ];
        for (name, race) in races {
            t.test(name, move || lesson().permits_race(race));
        }
    });
    t.group(group::END_TO_END, |t| {
        t.test("a_queue_over_real_connections", move || {
            lesson().end_to_end(Check::Queue)
        });
        t.test("shedding_over_real_connections", move || {
            lesson().end_to_end(Check::Shed)
        });
    });
    t.group(group::SNAPSHOT, |t| {
        for name in super::gen::SNAPSHOTS.iter().map(|s| s.0) {
            t.test(name, move || lesson().named_snapshot(name));
        }
    });
    compare(&mut t, move |which: &str| lesson().print_comparison(which));
    t
}

type Case = (Policy, Result<(), PolicyError>);

const SHED: ShedPolicy = ShedPolicy {
    limit: 4,
    reserved: 1,
    per_key: 2,
    retry_after: Duration::from_secs(1),
};

const DELAY: DelayPolicy = DelayPolicy {
    rate: 10,
    burst: 5,
    delay: 2,
};

const AIMD: AimdPolicy = super::adapt::AIMD;
const GRADIENT: GradientPolicy = super::adapt::GRADIENT;

/// Each policy's errors, in the contract's order, and its extremes.
fn policy_cases() -> Vec<Named<Case>> {
    use Policy as P;
    use PolicyError::*;
    let shed = |f: fn(&mut ShedPolicy)| P::Shed(changed(SHED, f));
    let delay = |f: fn(&mut DelayPolicy)| P::Delay(changed(DELAY, f));
    let aimd = |f: fn(&mut AimdPolicy)| P::Aimd(changed(AIMD, f));
    let gradient = |f: fn(&mut GradientPolicy)| P::Gradient(changed(GRADIENT, f));
    vec![
        ("permits_of_zero", (P::Permits(0, 0), Err(ZeroLimit))),
        ("permits_one", (P::Permits(1, 0), Ok(()))),
        (
            "permits_reserved_equal_to_limit",
            (P::Permits(2, 2), Err(ReservedNotBelowLimit)),
        ),
        ("permits_all_but_one_reserved", (P::Permits(3, 2), Ok(()))),
        (
            "concurrency_limit_of_zero",
            (P::Concurrency(0), Err(ZeroLimit)),
        ),
        ("concurrency_limit_of_one", (P::Concurrency(1), Ok(()))),
        ("shed_of_zero", (shed(|p| p.limit = 0), Err(ZeroLimit))),
        (
            "shed_reserving_everything",
            (shed(|p| p.reserved = p.limit), Err(ReservedNotBelowLimit)),
        ),
        (
            "shed_zero_per_key",
            (shed(|p| p.per_key = 0), Err(ZeroPerKey)),
        ),
        (
            "shed_limit_before_per_key",
            (
                shed(|p| {
                    p.limit = 0;
                    p.per_key = 0
                }),
                Err(ZeroLimit),
            ),
        ),
        (
            "shed_retry_after_of_zero",
            (
                shed(|p| p.retry_after = Duration::ZERO),
                Err(RetryAfterNotWholeSeconds),
            ),
        ),
        (
            "shed_retry_after_of_a_second_and_a_half",
            (
                shed(|p| p.retry_after = Duration::from_millis(1500)),
                Err(RetryAfterNotWholeSeconds),
            ),
        ),
        (
            "shed_retry_after_a_nanosecond_past_a_second",
            (
                shed(|p| p.retry_after = Duration::from_secs(1) + Duration::from_nanos(1)),
                Err(RetryAfterNotWholeSeconds),
            ),
        ),
        ("shed_as_the_checks_use", (shed(|_| {}), Ok(()))),
        ("delay_rate_of_zero", (delay(|p| p.rate = 0), Err(ZeroRate))),
        (
            "delay_above_burst",
            (delay(|p| p.delay = 6), Err(DelayAboveBurst)),
        ),
        (
            "delay_the_layer_refuses_what_its_queue_does",
            (
                P::DelayLayer(DelayPolicy { rate: 0, ..DELAY }),
                Err(ZeroRate),
            ),
        ),
        (
            "delay_the_layer_of_a_valid_queue",
            (P::DelayLayer(DELAY), Ok(())),
        ),
        (
            "delay_rate_before_delay",
            (
                delay(|p| {
                    p.rate = 0;
                    p.delay = 9
                }),
                Err(ZeroRate),
            ),
        ),
        (
            "delay_nodelay_is_delay_equal_to_burst",
            (delay(|p| p.delay = 5), Ok(())),
        ),
        (
            "delay_no_burst_at_all",
            (
                delay(|p| {
                    p.burst = 0;
                    p.delay = 0
                }),
                Ok(()),
            ),
        ),
        (
            "delay_a_billion_a_second",
            (delay(|p| p.rate = 1_000_000_000), Ok(())),
        ),
        ("aimd_min_of_zero", (aimd(|p| p.min = 0), Err(ZeroLimit))),
        (
            "aimd_max_below_min",
            (aimd(|p| p.max = 0), Err(MaxBelowMin)),
        ),
        (
            "aimd_initial_above_max",
            (aimd(|p| p.initial = 201), Err(InitialOutOfBounds)),
        ),
        (
            "aimd_initial_below_min",
            (
                aimd(|p| {
                    p.min = 5;
                    p.initial = 4
                }),
                Err(InitialOutOfBounds),
            ),
        ),
        (
            "aimd_backoff_of_100",
            (aimd(|p| p.backoff_percent = 100), Err(BackoffOutOfRange)),
        ),
        (
            "aimd_backoff_of_0",
            (aimd(|p| p.backoff_percent = 0), Err(BackoffOutOfRange)),
        ),
        (
            "aimd_bounds_before_backoff",
            (
                aimd(|p| {
                    p.max = 0;
                    p.backoff_percent = 0
                }),
                Err(MaxBelowMin),
            ),
        ),
        (
            "aimd_of_one_limit",
            (
                aimd(|p| {
                    p.min = 1;
                    p.max = 1;
                    p.initial = 1;
                    p.backoff_percent = 99
                }),
                Ok(()),
            ),
        ),
        (
            "gradient_min_of_zero",
            (gradient(|p| p.min = 0), Err(ZeroLimit)),
        ),
        (
            "gradient_tolerance_below_100",
            (
                gradient(|p| p.tolerance_percent = 99),
                Err(ToleranceBelow100),
            ),
        ),
        (
            "gradient_bounds_before_tolerance",
            (
                gradient(|p| {
                    p.initial = 0;
                    p.tolerance_percent = 50
                }),
                Err(InitialOutOfBounds),
            ),
        ),
        (
            "gradient_tolerance_of_100",
            (gradient(|p| p.tolerance_percent = 100), Ok(())),
        ),
    ]
}

/// `base`, changed by `f`.
fn changed<P: Copy>(base: P, f: fn(&mut P)) -> P {
    let mut p = base;
    f(&mut p);
    p
}
