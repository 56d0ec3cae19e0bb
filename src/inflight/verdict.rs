//! How lesson 12's checks judge a run: a script's log against the
//! contract's, event by event, with the message a learner reads; the delay
//! queue, the permits and the controllers against their models; the
//! simulation of a controller.

use std::sync::Arc;

use super::adapt::{self, Band, Step, SERVER};
use super::adapt::{Adaptive, AIMD, GRADIENT};
use super::drive::{Controller, InflightVariant, Service};
use super::gen;
use super::gen::SNAPSHOTS;
use super::model::{self, expected, QueueModel};
use super::sim::{run_script, seconds, Event, Log, Script, Under};
use super::{DelayPolicy, ManualClock, Priority, Timestamp};

pub fn named(name: &str) -> Script {
    let (_, make) = SNAPSHOTS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no script is named {name:?}"));
    make()
}

pub fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// The layer a script is under, of the file `v`, around `inner`.
pub fn build(
    v: InflightVariant,
    under: Under,
    clock: ManualClock,
    inner: Service,
) -> Result<Service, String> {
    match under {
        Under::Concurrency(limit) => (v.concurrency)(limit, inner)
            .map_err(|e| format!("ConcurrencyLimitLayer::new({limit}) refused: {e}")),
        Under::Shed(p) => {
            (v.shed)(p, inner).map_err(|e| format!("ShedLayer::new({p:?}) refused: {e}"))
        }
        Under::Delay(p) => {
            (v.delay)(p, clock, inner).map_err(|e| format!("DelayLayer::new({p:?}) refused: {e}"))
        }
    }
}

/// The layer a script is under, as it is made.
pub fn under_text(s: &Script) -> String {
    match s.under {
        Under::Concurrency(l) => format!("ConcurrencyLimitLayer::new({l})"),
        Under::Shed(p) => format!("ShedLayer::new({p:?})"),
        Under::Delay(p) => format!("DelayLayer::new({p:?}, clock)"),
    }
}

/// A script in words: its layer and its requests.
pub fn describe(s: &Script) -> String {
    let under = under_text(s);
    let requests = s.requests.iter().enumerate().map(|(i, r)| {
        let mut parts = vec![format!("#{i} at {}", seconds(r.at))];
        if let Some(k) = r.key {
            parts.push(format!("x-api-key {k:?}"));
        }
        if let Some(p) = r.priority {
            parts.push(format!("x-priority {p:?}"));
        }
        if r.gives_up {
            parts.push("its caller gives up once ready".into());
        } else if r.fails {
            parts.push(format!(
                "failed by the inner service after {}, with no answer",
                seconds(Timestamp::ZERO + r.latency)
            ));
        } else {
            parts.push(format!(
                "answered after {} with a body of {}",
                seconds(Timestamp::ZERO + r.latency),
                seconds(Timestamp::ZERO + r.body)
            ));
        }
        if r.ready_twice {
            parts.push("its caller asks for ready twice".into());
        }
        if let Some(d) = r.drop_at {
            parts.push(format!("dropped at {}", seconds(d)));
        }
        parts.join(", ")
    });
    format!("under {under}: {}", list(requests))
}

/// The tested file's log of `s`, or why it breaks the contract.
pub fn checked(v: InflightVariant, s: &Script) -> Result<Log, String> {
    let log = run_script(s, &|u, c, i| build(v, u, c, i))?;
    match difference(s, &log) {
        None => Ok(log),
        Some(e) => Err(e),
    }
}

/// Where a log first parts from the contract's, as a message: the
/// request, what it did and what the contract says, the log up to there
/// and both drawings.
pub fn difference(s: &Script, log: &Log) -> Option<String> {
    let want = expected(s);
    let mut first: Option<(Timestamp, usize, Option<Event>, Option<Event>)> = None;
    for id in 0..s.requests.len() {
        let got = log.of(id);
        let wanted: Vec<Event> = want.iter().filter(|e| e.request() == id).cloned().collect();
        let n = got.len().max(wanted.len());
        if let Some(k) = (0..n).find(|&k| got.get(k) != wanted.get(k)) {
            let (g, w) = (got.get(k).cloned(), wanted.get(k).cloned());
            let at = [g.as_ref(), w.as_ref()]
                .into_iter()
                .flatten()
                .map(Event::at)
                .min()
                .unwrap_or(Timestamp::MAX);
            if first.as_ref().is_none_or(|f| at < f.0) {
                first = Some((at, id, g, w));
            }
        }
    }
    let mut stuck = log
        .stuck
        .as_ref()
        .map(|s| format!("\nThe run could not end: {s}."));
    let limit = match s.under {
        Under::Concurrency(l) => Some(l),
        Under::Shed(p) => Some(p.limit),
        Under::Delay(_) => None,
    };
    let most = most_inside(&log.events);
    if let Some(l) = limit.filter(|l| most > *l) {
        let over = format!(
            "\nYours had {most} requests inside the inner service at once, above the limit of {l}."
        );
        stuck = Some(stuck.unwrap_or_default() + &over);
    }
    let Some((at, id, got, wanted)) = first else {
        return stuck;
    };
    let said = |e: &Option<Event>| {
        e.as_ref()
            .map_or("nothing more".to_string(), |e| e.line().trim().to_string())
    };
    let upto: Vec<String> = log
        .events
        .iter()
        .filter(|e| e.at() <= at)
        .map(|e| e.line())
        .collect();
    let mut tail: Vec<String> = upto[upto.len().saturating_sub(12)..].to_vec();
    if upto.len() > 12 {
        tail.insert(0, "        …".into());
    }
    Some(format!(
        "Under {}:\nrequest #{id}: yours: {}\n           the contract: {}\n{}\nThe log up to there:\n{}\n\
         In flight, yours:\n{}In flight, the contract's:\n{}\nThe script: {}",
        under_text(s),
        said(&got),
        said(&wanted),
        stuck.unwrap_or_default(),
        tail.join("\n"),
        super::draw::draw(s, &log.events, until(&[&log.events, &want])),
        super::draw::draw(s, &want, until(&[&log.events, &want])),
        describe(s)
    ))
}

pub fn queue_run(
    v: InflightVariant,
    policy: DelayPolicy,
    arrivals: &[Timestamp],
) -> Result<(), String> {
    let q = (v.queue)(policy).map_err(|e| format!("DelayQueue::new refused {policy:?}: {e}"))?;
    let mut m = QueueModel::new(policy);
    for (i, t) in arrivals.iter().enumerate() {
        let tat = m.tat;
        let want = m.admit(*t);
        let got = q.admit(*t);
        if got != want {
            return Err(format!(
                "with {policy:?} (one request every {}), request #{i} at {} is answered \
                 {got:?}; the contract answers {want:?}.\nThe queue had drained by {}, a \
                 backlog of {} ahead of it; the requests came at {}.",
                seconds(Timestamp::from_nanos(policy.interval())),
                seconds(*t),
                seconds(Timestamp::from_nanos(tat)),
                seconds(Timestamp::from_nanos(tat.saturating_sub(t.as_nanos()))),
                list(arrivals[..=i].iter().map(|t| seconds(*t)))
            ));
        }
    }
    Ok(())
}

pub fn permits_run(
    v: InflightVariant,
    limit: usize,
    reserved: usize,
    steps: &[gen::Step],
) -> Result<(), String> {
    let permits = (v.permits)(limit, reserved)
        .map_err(|e| format!("Permits::new({limit}, {reserved}) refused: {e}"))?;
    // Every other step goes through a clone: clones share the permits.
    let clone = permits.clone_box();
    let (mut held, mut cap) = (vec![], limit);
    // Tasks waiting in poll_acquire: their priority, their waker's flag,
    // and the step they began waiting at.
    let mut waiting: Vec<(Priority, Arc<Flag>, usize)> = vec![];
    let priority = |critical: bool| {
        if critical {
            Priority::Critical
        } else {
            Priority::Normal
        }
    };
    for (i, step) in steps.iter().enumerate() {
        let through: &dyn super::drive::Permits = if i % 2 == 0 { &*permits } else { &*clone };
        let before = format!(
            "step #{i}, {} through {}, with {} held of a limit of {cap}, {reserved} reserved",
            step.describe(),
            if i % 2 == 0 {
                "the permits"
            } else {
                "a clone of them"
            },
            held.len()
        );
        let gives = |b: bool| if b { "a permit" } else { "none" };
        match *step {
            gen::Step::Take(critical) => {
                let priority = priority(critical);
                let want = model::may_take(priority, held.len(), cap, reserved);
                let got = through.try_acquire(priority);
                if got.is_some() != want {
                    return Err(format!(
                        "at {before}: it gives {}; the contract gives {}",
                        gives(got.is_some()),
                        gives(want)
                    ));
                }
                held.extend(got);
            }
            gen::Step::Wait(critical) => {
                let priority = priority(critical);
                let want = model::may_take(priority, held.len(), cap, reserved);
                let flag = Arc::new(Flag::default());
                let got = poll_with(through, priority, &flag);
                if got.is_some() != want {
                    return Err(format!(
                        "at {before}: it gives {}; the contract gives {}",
                        gives(got.is_some()),
                        gives(want)
                    ));
                }
                match got {
                    Some(p) => held.push(p),
                    None => waiting.push((priority, flag, i)),
                }
            }
            gen::Step::GiveBack(k) => {
                if !held.is_empty() {
                    held.remove(k % held.len());
                }
            }
            gen::Step::SetLimit(n) => {
                through.set_limit(n);
                cap = n.max(reserved + 1);
            }
        }
        // A waiting task that may now take a permit must have been woken;
        // woken, it polls again.
        let mut still = vec![];
        for (priority, flag, since) in waiting {
            if !model::may_take(priority, held.len(), cap, reserved) {
                // Woken for nothing, it polls again, and waits again.
                if flag.0.swap(false, std::sync::atomic::Ordering::SeqCst) {
                    if let Some(p) = poll_with(&*permits, priority, &flag) {
                        drop(p);
                        return Err(format!(
                            "after {before}: a task waiting in poll_acquire({priority:?}) since \
                             step #{since} polled again and got a permit none is free for"
                        ));
                    }
                }
                still.push((priority, flag, since));
                continue;
            }
            if !flag.0.swap(false, std::sync::atomic::Ordering::SeqCst) {
                return Err(format!(
                    "after {before}: a task waiting in poll_acquire({priority:?}) since step \
                     #{since} may take a permit now, and was not woken"
                ));
            }
            match poll_with(&*permits, priority, &flag) {
                Some(p) => held.push(p),
                None => {
                    return Err(format!(
                        "after {before}: a task waiting in poll_acquire({priority:?}) since step \
                         #{since} was woken, polled again with a permit free to it, and got none"
                    ))
                }
            }
        }
        waiting = still;
        for (whose, p) in [("the permits'", &permits), ("a clone's", &clone)] {
            let counted = p.in_flight();
            if counted != held.len() {
                return Err(format!(
                    "after {before}: {whose} in_flight() says {counted}; {} are held (clones \
                     share one set of permits)",
                    held.len()
                ));
            }
        }
    }
    Ok(())
}

/// Feeds `samples` to `c`: after each, its limit is `model`'s.
pub fn follow(
    mut c: Box<dyn Controller>,
    samples: &[super::Sample],
    mut model: impl FnMut(super::Sample) -> (usize, String),
) -> Result<(), String> {
    for (i, s) in samples.iter().enumerate() {
        let before = c.limit();
        c.on_sample(*s);
        let (got, (want, why)) = (c.limit(), model(*s));
        if got != want {
            return Err(format!(
                "with the limit at {before}, sample #{i} ({s:?}) leaves it at {got}; the \
                 contract leaves it at {want}: {why}.\nThe samples so far, from #0: {:?}",
                &samples[..=i]
            ));
        }
    }
    Ok(())
}

/// The controller `which`, of the file `v`, against the contract's server.
pub fn simulate(
    v: InflightVariant,
    which: Adaptive,
) -> Result<(Vec<Step>, &'static [Band]), String> {
    let (mut c, bands): (Box<dyn Controller>, &'static [Band]) = match which {
        Adaptive::Aimd => (
            (v.aimd)(AIMD).map_err(|e| e.to_string())?,
            &adapt::AIMD_BANDS,
        ),
        Adaptive::Gradient => (
            (v.gradient)(GRADIENT).map_err(|e| e.to_string())?,
            &adapt::GRADIENT_BANDS,
        ),
    };
    let permits = (v.permits)(c.limit(), 0).map_err(|e| e.to_string())?;
    Ok((adapt::run(SERVER, &*permits, &mut *c)?, bands))
}

/// The last instant of any of the logs: drawings of them side by side share
/// one time scale.
pub fn until(logs: &[&[Event]]) -> u64 {
    logs.iter()
        .flat_map(|l| l.iter())
        .map(|e| e.at().as_nanos())
        .max()
        .unwrap_or(0)
}

/// The simulation's table and both controllers drawn, for the file `v`.
pub fn adaptive_table(v: InflightVariant) -> Result<String, String> {
    let aimd = (v.aimd)(AIMD).map_err(|e| e.to_string())?;
    let gradient = (v.gradient)(GRADIENT).map_err(|e| e.to_string())?;
    table_of(
        &|n| (v.permits)(n, 0).map_err(|e| e.to_string()),
        aimd,
        gradient,
    )
}

/// Whether each controller of the file `v` keeps the contract's bands, in
/// words.
pub fn bands(v: InflightVariant) -> String {
    [Adaptive::Aimd, Adaptive::Gradient]
        .into_iter()
        .map(|which| match simulate(v, which) {
            Ok((steps, bands)) => match adapt::outside(&steps, bands) {
                None => format!("{which:?} keeps the contract's bands.\n"),
                Some(e) => format!("{which:?} leaves its band: {e}.\n"),
            },
            Err(e) => format!("{which:?} could not run: {e}\n"),
        })
        .collect()
}

/// The same, as the contract's models measure it.
pub fn model_table() -> Result<String, String> {
    table_of(
        &|n| Ok(Box::new(model::PermitsModel::new(n)) as _),
        Box::new(model::AimdModel::new(AIMD)),
        Box::new(model::GradientModel::new(GRADIENT)),
    )
}

type PermitsOf<'a> = &'a dyn Fn(usize) -> Result<Box<dyn super::drive::Permits>, String>;

fn table_of(
    permits: PermitsOf<'_>,
    mut aimd: Box<dyn Controller>,
    mut gradient: Box<dyn Controller>,
) -> Result<String, String> {
    let mut rows = vec![];
    for n in [5, 20, 50, 200] {
        rows.push((
            format!("fixed at {n}"),
            adapt::run(SERVER, &*permits(n)?, &mut adapt::Fixed(n))?,
        ));
    }
    let aimd_steps = adapt::run(SERVER, &*permits(aimd.limit())?, &mut *aimd)?;
    let gradient_steps = adapt::run(SERVER, &*permits(gradient.limit())?, &mut *gradient)?;
    rows.push(("AIMD".into(), aimd_steps.clone()));
    rows.push(("gradient".into(), gradient_steps.clone()));
    Ok(format!(
        "{}\nAIMD:\n{}\ngradient:\n{}",
        adapt::table(&rows),
        adapt::draw(&aimd_steps),
        adapt::draw(&gradient_steps)
    ))
}

/// The most requests inside the inner service at once (from entering it
/// to their body's end or their drop), by the log.
pub fn most_inside(events: &[Event]) -> usize {
    let (mut inside, mut most) = (std::collections::BTreeSet::new(), 0);
    for e in events {
        match e {
            Event::Enter { request, .. } => {
                inside.insert(*request);
            }
            Event::End { request, .. }
            | Event::Failed { request, .. }
            | Event::Drop { request, .. } => {
                inside.remove(request);
            }
            _ => {}
        }
        most = most.max(inside.len());
    }
    most
}

/// A waker's flag: set when it is woken.
#[derive(Default)]
pub struct Flag(std::sync::atomic::AtomicBool);

impl std::task::Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// `poll_acquire` from a task whose waker sets `flag`.
fn poll_with(
    permits: &dyn super::drive::Permits,
    priority: Priority,
    flag: &Arc<Flag>,
) -> Option<super::drive::HeldPermit> {
    let waker = std::task::Waker::from(flag.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    match permits.poll_acquire(priority, &mut cx) {
        std::task::Poll::Ready(p) => Some(p),
        std::task::Poll::Pending => None,
    }
}
