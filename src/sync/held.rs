//! Which locks each thread holds and waits for: a thread that locks again
//! what it holds, or (under loom) threads that each wait for a lock another
//! holds, fail with the lines where each lock was taken.

use std::panic::Location;

use super::trace::record;
use super::{place, thread_number, watch_point, Backend, FROZEN, HELD, WAITING};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Access {
    Shared,
    Exclusive,
}

pub(super) struct Held {
    thread: usize,
    addr: usize,
    access: Access,
    kind: &'static str,
    at: &'static Location<'static>,
}

/// Registers that the current thread takes a lock, or fails the test if a
/// blocking call would wait for a lock the thread already holds.
#[track_caller]
pub(super) fn acquire(
    backend: Backend,
    addr: usize,
    access: Access,
    kind: &'static str,
    at: &'static Location<'static>,
    blocking: bool,
) -> HeldToken {
    watch_point(at, kind);
    let thread = thread_number(backend);
    // A `try_` call never waits, so it cannot deadlock.
    let clash = HELD.with(|held| {
        if !blocking {
            return None;
        }
        held.borrow()
            .iter()
            .find(|h| {
                // A second read of an RwLock can wait too, behind a writer
                // queued in between.
                h.thread == thread
                    && h.addr == addr
                    && (conflicts(h.access, access) || h.kind.starts_with("RwLock"))
            })
            .map(|h| (h.kind, h.at))
    });
    if let Some((first_kind, first_at)) = clash {
        let lock = lock_name(kind);
        let advice = if lock == "Mutex" {
            "A Mutex is not re-entrant: the second lock() waits for the first guard to be dropped, forever."
        } else {
            "An RwLock held by this thread cannot be taken again: a write waits for every read to end, and \
             even a second read can wait forever behind a writer queued in between."
        };
        panic!(
            "deadlock: this thread already holds this {lock} ({first_kind} at {}) and \
             calls {kind} on it again at {}. {advice} End the first guard's scope (or call \
             drop(guard)) before locking again, or pass the guarded data to the code that needs it.",
            place(first_at),
            place(at)
        );
    }
    if blocking && backend == Backend::Loom {
        if let Some(report) = lock_order_deadlock(thread, addr, access, kind, at) {
            panic!("{report}");
        }
    }
    HeldToken {
        backend,
        thread,
        addr,
        access,
        kind,
        at,
    }
}

/// `Mutex` or `RwLock`, from an operation's name (`RwLock::read`).
fn lock_name(kind: &str) -> &'static str {
    if kind.starts_with("Mutex") {
        "Mutex"
    } else {
        "RwLock"
    }
}

/// Whether a hold of a lock and a request for it exclude each other.
fn conflicts(held: Access, wanted: Access) -> bool {
    held == Access::Exclusive || wanted == Access::Exclusive
}

/// Called under loom before a blocking lock call. Records that this thread
/// wants the lock (until [`HeldToken::obtained`]); if another thread holds
/// it, and that thread (or one it waits for, and so on) wants a lock this
/// thread holds, no thread of the cycle can ever go on: returns the report
/// naming each thread, the lock it holds and where it took it, and the lock
/// it waits for and where. Locks count as held once obtained, so a thread
/// that loom stopped between asking and obtaining is a waiter, not a holder.
fn lock_order_deadlock(
    thread: usize,
    addr: usize,
    access: Access,
    kind: &'static str,
    at: &'static Location<'static>,
) -> Option<String> {
    let holders = |addr: usize,
                   wanted: Access,
                   me: usize|
     -> Vec<(usize, &'static str, &'static Location<'static>)> {
        HELD.with(|held| {
            held.borrow()
                .iter()
                .filter(|h| h.addr == addr && h.thread != me && conflicts(h.access, wanted))
                .map(|h| (h.thread, h.kind, h.at))
                .collect()
        })
    };
    WAITING.with(|w| {
        w.borrow_mut().push(Held {
            thread,
            addr,
            access,
            kind,
            at,
        })
    });
    // Follow who waits for whom, from this thread's wait.
    let mut chain: Vec<(usize, &'static str, &'static Location<'static>, usize)> =
        vec![(thread, kind, at, addr)];
    let mut seen = vec![thread];
    loop {
        let (waiter, _, _, lock) = *chain.last().expect("the chain starts with this thread");
        let wanted = WAITING.with(|w| {
            w.borrow()
                .iter()
                .find(|h| h.thread == waiter)
                .map_or(Access::Exclusive, |h| h.access)
        });
        let next = holders(lock, wanted, waiter);
        if next.iter().any(|(t, _, _)| *t == thread) {
            record(Backend::Loom, at, || {
                format!(
                    "{kind}: waits for a lock held by thread {}: deadlock",
                    chain[1.min(chain.len() - 1)].0
                )
            });
            FROZEN.with(|f| f.set(true));
            return Some(describe_cycle(&chain));
        }
        let &(holder, _, _) = next.iter().find(|(t, _, _)| !seen.contains(t))?;
        let wait = WAITING.with(|w| {
            w.borrow()
                .iter()
                .find(|h| h.thread == holder)
                .map(|h| (h.kind, h.at, h.addr))
        })?;
        seen.push(holder);
        chain.push((holder, wait.0, wait.1, wait.2));
    }
}

/// `deadlock between threads: thread 1 holds … and waits for …; thread 2 …`
fn describe_cycle(chain: &[(usize, &'static str, &'static Location<'static>, usize)]) -> String {
    let mut text = String::from(
        "deadlock between threads: each waits for a lock another one holds, so none can go on.\n",
    );
    // Locks are named by the order they appear in, so the report reads alike
    // on every run.
    let mut names: Vec<usize> = Vec::new();
    let mut name = |addr: usize| {
        let i = names.iter().position(|a| *a == addr).unwrap_or_else(|| {
            names.push(addr);
            names.len() - 1
        });
        char::from(b'A' + (i % 26) as u8)
    };
    for (i, &(thread, kind, at, wants)) in chain.iter().enumerate() {
        let holds: Vec<String> = HELD
            .with(|held| {
                held.borrow()
                    .iter()
                    .filter(|h| h.thread == thread)
                    .map(|h| (h.addr, h.kind, h.at))
                    .collect::<Vec<_>>()
            })
            .into_iter()
            .filter(|(addr, _, _)| {
                // The lock the previous thread of the cycle waits for.
                let prev = chain[(i + chain.len() - 1) % chain.len()].3;
                *addr == prev || chain.len() == 1
            })
            .map(|(addr, hkind, hat)| {
                format!(
                    "holds {} {} (taken by {hkind} at {})",
                    lock_name(hkind),
                    name(addr),
                    place(hat)
                )
            })
            .collect();
        text.push_str(&format!(
            "  thread {thread} {} and waits for {} {} ({kind} at {})\n",
            holds.join(" and "),
            lock_name(kind),
            name(wants),
            place(at)
        ));
    }
    text.push_str(
        "Two locks taken in opposite orders by two paths deadlock as soon as both paths run at \
         once. Take them in one order everywhere (for example the map's lock before a key's), \
         or release the first before taking the second.",
    );
    text
}

/// Dropped with the guard that owns it: the lock is no longer held.
#[doc(hidden)]
pub struct HeldToken {
    backend: Backend,
    thread: usize,
    addr: usize,
    access: Access,
    kind: &'static str,
    at: &'static Location<'static>,
}

impl HeldToken {
    /// Records that the lock was actually obtained (after any wait).
    pub(super) fn obtained(self) -> Self {
        let kind = self.kind;
        let _ = WAITING.try_with(|w| w.borrow_mut().retain(|h| h.thread != self.thread));
        HELD.with(|held| {
            held.borrow_mut().push(Held {
                thread: self.thread,
                addr: self.addr,
                access: self.access,
                kind,
                at: self.at,
            })
        });
        record(self.backend, self.at, || format!("{kind}: acquired"));
        self
    }
}

impl Drop for HeldToken {
    fn drop(&mut self) {
        let _ = HELD.try_with(|held| {
            let mut held = held.borrow_mut();
            if let Some(i) = held
                .iter()
                .rposition(|h| h.thread == self.thread && h.addr == self.addr)
            {
                held.remove(i);
            }
        });
        let (kind, at) = (self.kind, self.at);
        record(self.backend, at, || format!("{kind}: released"));
    }
}
