//! The memory orderings std rejects at run time, rejected on both backends
//! with the learner's line.

use std::panic::Location;

use super::place;

/// Which orderings an atomic operation may take.
#[derive(Clone, Copy)]
#[doc(hidden)]
pub enum Role {
    Load,
    Store,
    /// The failure ordering of a compare-exchange, the fetch ordering of
    /// `fetch_update`: a load.
    Failure,
}

/// Fails with the learner's line on an ordering std rejects at run time
/// (std panics too, but only when that line runs, which may be only on a
/// contended path; loom accepts them all).
#[track_caller]
#[doc(hidden)]
pub fn check_ordering(op: &'static str, role: Role, order: std::sync::atomic::Ordering) {
    use std::sync::atomic::Ordering as O;
    let (wrong, allowed) = match role {
        Role::Load | Role::Failure => (
            matches!(order, O::Release | O::AcqRel),
            "Relaxed, Acquire or SeqCst",
        ),
        Role::Store => (
            matches!(order, O::Acquire | O::AcqRel),
            "Relaxed, Release or SeqCst",
        ),
    };
    if wrong {
        let what = match role {
            Role::Load => "a load",
            Role::Store => "a store",
            Role::Failure => "the failure ordering (the load made when the exchange fails)",
        };
        panic!(
            "{op} with Ordering::{order:?} at {}: std rejects this ordering for {what}, and panics \
             when the line runs, which may be only when threads contend. Use {allowed}.",
            place(Location::caller())
        );
    }
}
