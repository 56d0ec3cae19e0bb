//! The trace of a loom execution: each operation of the facade, and each
//! event the harness notes, with its thread and its line.

use std::panic::Location;

use super::{thread_number, Backend, FROZEN, HELD, TRACE, WAITING};

/// One recorded operation of a loom execution.
#[derive(Clone, Debug)]
pub struct Op {
    /// Loom's thread number: 0 is the model's main thread.
    pub thread: usize,
    pub at: &'static Location<'static>,
    pub what: String,
}

/// Starts a fresh trace (one per loom execution) and forgets held locks left
/// by an execution that panicked.
pub fn reset_trace() {
    TRACE.with(|t| t.borrow_mut().clear());
    HELD.with(|h| h.borrow_mut().clear());
    WAITING.with(|w| w.borrow_mut().clear());
    FROZEN.with(|f| f.set(false));
}

/// The operations recorded since the last [`reset_trace`] on this OS thread.
pub fn take_trace() -> Vec<Op> {
    TRACE.with(|t| std::mem::take(&mut *t.borrow_mut()))
}

/// Records a harness event (a call to `check` and its answer) in the trace.
#[track_caller]
pub fn note(what: String) {
    record(Backend::Loom, Location::caller(), || what);
}

pub(super) fn record(
    backend: Backend,
    at: &'static Location<'static>,
    what: impl FnOnce() -> String,
) {
    if backend == Backend::Loom && !FROZEN.try_with(|f| f.get()).unwrap_or(false) {
        let thread = thread_number(backend);
        let _ = TRACE.try_with(|t| {
            t.borrow_mut().push(Op {
                thread,
                at,
                what: what(),
            })
        });
    }
}
