//! Time that moves only when every task waits on it: a clock whose sleeps
//! end when it is moved ([`VirtualClock`]), and a driver that polls a set
//! of tasks itself and moves the clock to the next instant one of them
//! waits for only when none can go on and nothing is in flight ([`run`]).
//! Below the kinds, for every kind whose subject waits: a script of two
//! minutes runs in a millisecond, always the same way, and never sleeps.
//! (Lesson 11's client is driven by it; what a task is, and what is
//! recorded of it, is the kind's: [`Task`], [`Watch`].)

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use crate::layer::Clock as _;
use crate::time::Timestamp;

/// A future that ends at an instant of a [`VirtualClock`].
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A clock that moves only when told to. Its clones share one time, and
/// one set of sleeps, which end when the time is moved past them.
#[derive(Clone, Default)]
pub struct VirtualClock {
    time: crate::layer::ManualClock,
    timers: Arc<Mutex<Timers>>,
}

#[derive(Default)]
struct Timers {
    next: u64,
    waiting: BTreeMap<(Timestamp, u64), Waker>,
}

impl VirtualClock {
    pub fn new(at: Timestamp) -> VirtualClock {
        VirtualClock {
            time: crate::layer::ManualClock::new(at),
            timers: Arc::default(),
        }
    }

    pub fn now(&self) -> Timestamp {
        self.time.now()
    }

    /// A future that ends once `now()` has reached `at` (at once if it has).
    pub fn sleep_until(&self, at: Timestamp) -> Sleep {
        Box::pin(VirtualSleep {
            clock: self.clone(),
            at,
            seq: None,
        })
    }

    /// The same time, as lesson 07's layer reads it (a server on the same
    /// clock).
    pub fn server_clock(&self) -> crate::layer::ManualClock {
        self.time.clone()
    }

    /// Moves time to `at` (never back) and wakes every sleep it ends.
    pub fn advance_to(&self, at: Timestamp) {
        if at > self.now() {
            self.time.set(at);
        }
        let woken: Vec<Waker> = {
            let timers = self.timers.lock().unwrap_or_else(|p| p.into_inner());
            timers
                .waiting
                .range(..=(at, u64::MAX))
                .map(|(_, w)| w.clone())
                .collect()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// The earliest instant a sleep is waiting for, if any is.
    pub fn next_wake(&self) -> Option<Timestamp> {
        let now = self.now();
        let timers = self.timers.lock().unwrap_or_else(|p| p.into_inner());
        timers
            .waiting
            .keys()
            .map(|(at, _)| *at)
            .find(|at| *at > now)
    }
}

struct VirtualSleep {
    clock: VirtualClock,
    at: Timestamp,
    seq: Option<u64>,
}

impl Future for VirtualSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let done = self.clock.now() >= self.at;
        let at = self.at;
        let mut timers = self.clock.timers.lock().unwrap_or_else(|p| p.into_inner());
        if done {
            if let Some(seq) = self.seq {
                timers.waiting.remove(&(at, seq));
            }
            drop(timers);
            self.seq = None;
            return Poll::Ready(());
        }
        let seq = match self.seq {
            Some(seq) => seq,
            None => {
                timers.next += 1;
                timers.next
            }
        };
        timers.waiting.insert((at, seq), cx.waker().clone());
        drop(timers);
        self.seq = Some(seq);
        Poll::Pending
    }
}

impl Drop for VirtualSleep {
    fn drop(&mut self) {
        if let Some(seq) = self.seq {
            let mut timers = self.clock.timers.lock().unwrap_or_else(|p| p.into_inner());
            timers.waiting.remove(&(self.at, seq));
        }
    }
}

/// A task's future, as the driver holds it.
pub type TaskFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One task: when it starts (its future is made then, and polled at once),
/// how it is made, and when its owner drops it, if it does.
pub struct Task<T> {
    pub at: Timestamp,
    pub start: Box<dyn FnOnce() -> TaskFuture<T>>,
    pub drop_at: Option<Timestamp>,
}

/// What the kind sees of a run, in the order it happens. Every method is
/// called on the driver's thread.
pub trait Watch<T> {
    /// The driver's own poll begins (`true`) or ends (`false`): where a kind
    /// sets what its subject's code reads while it runs.
    fn driving(&mut self, _on: bool) {}
    /// Task `id` is about to be polled or dropped (`Some`), or was (`None`).
    fn polling(&mut self, _id: Option<usize>) {}
    fn started(&mut self, _id: usize, _at: Timestamp) {}
    fn ended(&mut self, _id: usize, _at: Timestamp, _output: T) {}
    fn dropped(&mut self, _id: usize, _at: Timestamp) {}
}

/// Why a run ended before every task did.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Stuck {
    /// These tasks wait, nothing is in flight, and no sleep of the clock
    /// is pending: they wait for something that never comes.
    NeverWoken(Vec<usize>),
    /// These tasks still wait [`HORIZON`] after the last start, for a sleep
    /// until the instant given.
    PastHorizon(Vec<usize>, Timestamp),
    /// More than [`MOST_STEPS`] polls and moves of the clock.
    TooManySteps,
}

/// How far past its last task's start a run may go.
pub const HORIZON: Duration = Duration::from_secs(3600);

/// The most times the driver polls or moves the clock in one run.
pub const MOST_STEPS: usize = 200_000;

struct Flag {
    woken: AtomicBool,
    outer: Arc<Mutex<Option<Waker>>>,
}

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::SeqCst);
        if let Some(w) = self
            .outer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
        {
            w.wake_by_ref();
        }
    }
}

struct Slot<T> {
    id: usize,
    future: Option<TaskFuture<T>>,
    flag: Arc<Flag>,
    drop_at: Option<Timestamp>,
}

/// Runs `tasks` (in the order of their `at`) on `clock`: starts each at its
/// instant, polls every task whose waker fired, drops each at its `drop_at`,
/// and when no task can go on and nothing is in flight (`in_flight`,
/// counted by whatever talks to a real socket), moves the clock to the
/// earliest instant a start, a drop or a sleep waits for. Within an
/// instant, tasks are polled in the order they started: the same tasks
/// always run the same way. Run it unconstrained by tokio's cooperative
/// budget (`tokio::task::unconstrained`): every task is polled inside one
/// poll of the driver.
pub async fn run<T>(
    tasks: Vec<Task<T>>,
    clock: VirtualClock,
    in_flight: Arc<AtomicUsize>,
    watch: &mut impl Watch<T>,
) -> Result<(), Stuck> {
    debug_assert!(
        tasks.windows(2).all(|w| w[0].at <= w[1].at),
        "tasks are given in the order of their starts"
    );
    let last = tasks.iter().map(|t| t.at).max().unwrap_or(Timestamp::ZERO);
    let horizon = last + HORIZON;
    let starts: Vec<(Timestamp, Option<Timestamp>)> =
        tasks.iter().map(|t| (t.at, t.drop_at)).collect();
    let mut pending = tasks.into_iter().map(|t| Some(t.start)).collect::<Vec<_>>();
    let outer: Arc<Mutex<Option<Waker>>> = Arc::default();
    let mut slots: Vec<Slot<T>> = vec![];
    let mut next = 0;
    let mut steps = 0;
    std::future::poll_fn(|cx| {
        watch.driving(true);
        let outcome = loop {
            steps += 1;
            if steps > MOST_STEPS {
                break Err(Stuck::TooManySteps);
            }
            let now = clock.now();
            let mut progressed = false;
            while next < starts.len() && starts[next].0 <= now {
                let id = next;
                next += 1;
                watch.started(id, now);
                let start = pending[id].take().expect("each task starts once");
                watch.polling(Some(id));
                let future = start();
                watch.polling(None);
                slots.push(Slot {
                    id,
                    future: Some(future),
                    flag: Arc::new(Flag {
                        woken: AtomicBool::new(true),
                        outer: outer.clone(),
                    }),
                    drop_at: starts[id].1,
                });
                poll_slot(slots.last_mut().expect("just pushed"), &clock, watch);
                progressed = true;
            }
            for slot in &mut slots {
                if slot.future.is_some() && slot.drop_at.is_some_and(|d| d <= now) {
                    watch.dropped(slot.id, now);
                    watch.polling(Some(slot.id));
                    slot.future = None;
                    watch.polling(None);
                    progressed = true;
                }
            }
            for slot in &mut slots {
                if slot.future.is_some() && slot.flag.woken.swap(false, Ordering::SeqCst) {
                    poll_slot(slot, &clock, watch);
                    progressed = true;
                }
            }
            if progressed {
                continue;
            }
            if in_flight.load(Ordering::SeqCst) > 0 {
                *outer.lock().unwrap_or_else(|p| p.into_inner()) = Some(cx.waker().clone());
                if slots.iter().any(|s| s.flag.woken.load(Ordering::SeqCst)) {
                    continue;
                }
                watch.driving(false);
                return Poll::Pending;
            }
            let waiting: Vec<usize> = slots
                .iter()
                .filter(|s| s.future.is_some())
                .map(|s| s.id)
                .collect();
            if waiting.is_empty() && next == starts.len() {
                // Every task has ended: a sleep still registered is nobody's.
                break Ok(());
            }
            let soonest = [
                starts.get(next).map(|s| s.0),
                slots
                    .iter()
                    .filter(|s| s.future.is_some())
                    .filter_map(|s| s.drop_at)
                    .min(),
                clock.next_wake(),
            ]
            .into_iter()
            .flatten()
            .min();
            match soonest {
                None => break Err(Stuck::NeverWoken(waiting)),
                Some(at) if at > horizon => break Err(Stuck::PastHorizon(waiting, at)),
                Some(at) => clock.advance_to(at),
            }
        };
        watch.driving(false);
        Poll::Ready(outcome)
    })
    .await
}

fn poll_slot<T>(slot: &mut Slot<T>, clock: &VirtualClock, watch: &mut impl Watch<T>) {
    let Some(future) = slot.future.as_mut() else {
        return;
    };
    let waker = Waker::from(slot.flag.clone());
    let mut cx = Context::from_waker(&waker);
    watch.polling(Some(slot.id));
    let polled = future.as_mut().poll(&mut cx);
    watch.polling(None);
    if let Poll::Ready(output) = polled {
        slot.future = None;
        watch.ended(slot.id, clock.now(), output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Seen(Vec<String>);

    impl Watch<u32> for Seen {
        fn started(&mut self, id: usize, at: Timestamp) {
            self.0.push(format!("start {id} @{}", at.as_nanos()));
        }
        fn ended(&mut self, id: usize, at: Timestamp, output: u32) {
            self.0
                .push(format!("end {id} @{} -> {output}", at.as_nanos()));
        }
        fn dropped(&mut self, id: usize, at: Timestamp) {
            self.0.push(format!("drop {id} @{}", at.as_nanos()));
        }
    }

    fn sleeper(clock: &VirtualClock, at: u64, until: u64, drop_at: Option<u64>) -> Task<u32> {
        let clock = clock.clone();
        Task {
            at: Timestamp::from_nanos(at),
            start: Box::new(move || {
                Box::pin(async move {
                    clock.sleep_until(Timestamp::from_nanos(until)).await;
                    7
                })
            }),
            drop_at: drop_at.map(Timestamp::from_nanos),
        }
    }

    fn drive(
        tasks: impl FnOnce(&VirtualClock) -> Vec<Task<u32>>,
    ) -> (Result<(), Stuck>, Vec<String>) {
        let clock = VirtualClock::new(Timestamp::ZERO);
        let tasks = tasks(&clock);
        let mut seen = Seen::default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let outcome = runtime.block_on(run(tasks, clock, Arc::default(), &mut seen));
        (outcome, seen.0)
    }

    /// Time jumps to each sleep's end, in order; a dropped task never ends.
    #[test]
    fn time_moves_to_the_next_sleep_and_drops_come_on_time() {
        let (outcome, seen) = drive(|c| {
            vec![
                sleeper(c, 0, 50, None),
                sleeper(c, 10, 30, None),
                sleeper(c, 20, 100, Some(40)),
            ]
        });
        assert_eq!(outcome, Ok(()));
        assert_eq!(
            seen,
            [
                "start 0 @0",
                "start 1 @10",
                "start 2 @20",
                "end 1 @30 -> 7",
                "drop 2 @40",
                "end 0 @50 -> 7"
            ]
        );
    }

    /// A task that waits on nothing the clock ends is named, not waited for.
    #[test]
    fn a_task_that_is_never_woken_is_named() {
        let (outcome, _) = drive(|_| {
            vec![Task {
                at: Timestamp::ZERO,
                start: Box::new(|| Box::pin(std::future::pending::<u32>())),
                drop_at: None,
            }]
        });
        assert_eq!(outcome, Err(Stuck::NeverWoken(vec![0])));
        let (outcome, _) = drive(|c| vec![sleeper(c, 0, u64::MAX, None)]);
        assert!(matches!(outcome, Err(Stuck::PastHorizon(ids, _)) if ids == [0]));
    }
}
