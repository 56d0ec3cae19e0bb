//! Lesson 12's loom races on the permits: two threads at the last permit,
//! a give-back beside a take, a waiter beside a give-back (no wake-up may
//! be lost) and two normal requests at the last unreserved permit.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use super::drive::{Built, Permits};
use super::Priority;

#[derive(Clone, Copy, Debug)]
pub enum Race {
    /// One permit, two threads take: exactly one gets it.
    TwoTakeTheLastPermit,
    /// Two permits, one held and given back beside a take of the other:
    /// nothing is lost or counted twice.
    AGiveBackBesideATake,
    /// One permit held and given back beside a `poll_acquire`: the waiter
    /// gets the permit or is woken.
    NoWaiterIsForgotten,
    /// Two permits, one reserved: two normal requests, one permit.
    TheReservedShare,
}

struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

type Build = fn(usize, usize) -> Built<Box<dyn Permits>>;

impl Race {
    /// What breaks in one schedule, if anything.
    pub fn breaks(self, build: Build) -> Option<String> {
        self.run(build).err()
    }

    fn run(self, build: Build) -> Result<(), String> {
        let (limit, reserved) = match self {
            Race::TheReservedShare => (2, 1),
            // Room for the take beside the give-back, so that both run.
            Race::AGiveBackBesideATake => (2, 0),
            _ => (1, 0),
        };
        let p: Arc<Box<dyn Permits>> = Arc::new(
            build(limit, reserved)
                .map_err(|e| format!("Permits::new({limit}, {reserved}): {e}"))?,
        );
        let other = p.clone();
        match self {
            Race::TwoTakeTheLastPermit | Race::TheReservedShare => {
                let priority = match self {
                    Race::TheReservedShare => Priority::Normal,
                    _ => Priority::Critical,
                };
                let (theirs, mine) = crate::scenarios::both(
                    move || other.try_acquire(priority),
                    || p.try_acquire(priority),
                );
                let took = usize::from(mine.is_some()) + usize::from(theirs.is_some());
                if took != 1 {
                    return Err(format!(
                        "two threads each try_acquire({priority:?}) with one permit free to \
                         them: {took} got a permit, where exactly one must"
                    ));
                }
                drop((mine, theirs));
            }
            Race::AGiveBackBesideATake => {
                let held = p.try_acquire(Priority::Critical).ok_or("no first permit")?;
                let ((), mine) = crate::scenarios::both(
                    move || drop(held),
                    || p.try_acquire(Priority::Critical),
                );
                let want = usize::from(mine.is_some());
                let counted = p.in_flight();
                if counted != want {
                    return Err(format!(
                        "one thread gives its permit back while another takes one ({}): \
                         in_flight() then says {counted}, where {want} is held",
                        if mine.is_some() {
                            "and gets it"
                        } else {
                            "and finds none"
                        }
                    ));
                }
                drop(mine);
            }
            Race::NoWaiterIsForgotten => {
                let held = p.try_acquire(Priority::Critical).ok_or("no first permit")?;
                let flag = Arc::new(Flag(AtomicBool::new(false)));
                let waker = Waker::from(flag.clone());
                let ((), first) = crate::scenarios::both(
                    move || drop(held),
                    || p.poll_acquire(Priority::Critical, &mut Context::from_waker(&waker)),
                );
                let mut cx = Context::from_waker(&waker);
                if let Poll::Ready(permit) = first {
                    drop(permit);
                } else {
                    if !flag.0.load(Ordering::SeqCst) {
                        return Err("a task's poll_acquire found no permit free and answered \
                                    Pending while another thread gave the last permit back; \
                                    the task was never woken, so it would wait for ever (a \
                                    waker kept after the check, outside the lock, misses a \
                                    give-back that comes between)"
                            .into());
                    }
                    if p.poll_acquire(Priority::Critical, &mut cx).is_pending() {
                        return Err("a woken waiter polled again with the permit given back \
                                    still answers Pending"
                            .into());
                    }
                }
            }
        }
        let counted = p.in_flight();
        if counted != 0 {
            return Err(format!(
                "every permit was dropped, and in_flight() still says {counted}"
            ));
        }
        Ok(())
    }
}
