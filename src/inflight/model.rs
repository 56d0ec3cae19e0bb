//! Lesson 12's contract as models, written apart from the reference:
//! what each layer's log of a script must be, event by event
//! ([`expected`]), the delay queue's answers ([`QueueModel`]), the
//! controllers' limits ([`AimdModel`], [`GradientModel`]) and the policies'
//! errors.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::Duration;

use super::sim::{Event, Req, Script, Under};
use super::{
    Admit, AimdPolicy, DelayPolicy, GradientPolicy, PolicyError, Priority, Sample, ShedPolicy,
    Timestamp,
};

/// What `ShedLayer::new` answers: the permits' errors, then `per_key`,
/// then `retry_after`.
pub fn refuses_shed(p: &ShedPolicy) -> Option<PolicyError> {
    refuses_permits(p.limit, p.reserved).or(if p.per_key == 0 {
        Some(PolicyError::ZeroPerKey)
    } else if p.retry_after.is_zero() || p.retry_after.subsec_nanos() != 0 {
        Some(PolicyError::RetryAfterNotWholeSeconds)
    } else {
        None
    })
}

/// What `Permits::new(limit, reserved)` answers.
pub fn refuses_permits(limit: usize, reserved: usize) -> Option<PolicyError> {
    if limit == 0 {
        Some(PolicyError::ZeroLimit)
    } else if reserved >= limit {
        Some(PolicyError::ReservedNotBelowLimit)
    } else {
        None
    }
}

pub fn refuses_delay(p: &DelayPolicy) -> Option<PolicyError> {
    if p.rate == 0 {
        Some(PolicyError::ZeroRate)
    } else if p.delay > p.burst {
        Some(PolicyError::DelayAboveBurst)
    } else {
        None
    }
}

pub fn refuses_aimd(p: &AimdPolicy) -> Option<PolicyError> {
    p.bounds()
        .err()
        .or((!(1..=99).contains(&p.backoff_percent)).then_some(PolicyError::BackoffOutOfRange))
}

pub fn refuses_gradient(p: &GradientPolicy) -> Option<PolicyError> {
    p.bounds()
        .err()
        .or((p.tolerance_percent < 100).then_some(PolicyError::ToleranceBelow100))
}

/// nginx's delay queue: `tat`, the instant (ns) the queue has drained.
#[derive(Clone, Debug)]
pub struct QueueModel {
    pub policy: DelayPolicy,
    pub tat: u64,
}

impl QueueModel {
    pub fn new(policy: DelayPolicy) -> QueueModel {
        QueueModel { policy, tat: 0 }
    }

    /// A request at `now`: the backlog ahead of it is `tat - now`; over
    /// `burst` intervals it is refused until the backlog is that small;
    /// else it is queued (`tat` moves one interval past `max(tat, now)`)
    /// and waits for the backlog beyond the `delay` it may skip.
    pub fn admit(&mut self, now: Timestamp) -> Admit {
        let i = self.policy.interval();
        let now = now.as_nanos();
        let backlog = self.tat.saturating_sub(now);
        let room = u64::from(self.policy.burst) * i;
        if backlog > room {
            return Admit::Reject(Duration::from_nanos(backlog - room));
        }
        self.tat = self.tat.max(now) + i;
        match backlog.saturating_sub(u64::from(self.policy.delay) * i) {
            0 => Admit::Now,
            d => Admit::After(Duration::from_nanos(d)),
        }
    }
}

/// AIMD as the contract says it.
#[derive(Clone, Debug)]
pub struct AimdModel {
    pub policy: AimdPolicy,
    pub limit: usize,
}

impl AimdModel {
    pub fn new(policy: AimdPolicy) -> AimdModel {
        AimdModel {
            policy,
            limit: policy.initial,
        }
    }

    /// What the contract does with `s`, in words.
    pub fn explain(&self, s: Sample) -> String {
        let p = self.policy;
        if s.dropped || s.latency > p.timeout {
            format!(
                "{} (above the timeout of {:?}): max(min, ⌊{} × {} / 100⌋)",
                if s.dropped { "dropped" } else { "slow" },
                p.timeout,
                self.limit,
                p.backoff_percent
            )
        } else if 2 * s.in_flight >= self.limit {
            format!(
                "good ({:?} is not above the timeout of {:?}), and 2 × {} ≥ {}: one more, at \
                 most {}",
                s.latency, p.timeout, s.in_flight, self.limit, p.max
            )
        } else {
            format!(
                "good ({:?} is not above the timeout of {:?}), but 2 × {} < {}: the limit is \
                 not in use, so it stays",
                s.latency, p.timeout, s.in_flight, self.limit
            )
        }
    }

    pub fn on_sample(&mut self, s: Sample) {
        let p = self.policy;
        self.limit = if s.dropped || s.latency > p.timeout {
            std::cmp::max(p.min, self.limit * p.backoff_percent as usize / 100)
        } else if 2 * s.in_flight >= self.limit {
            std::cmp::min(p.max, self.limit + 1)
        } else {
            self.limit
        };
    }
}

/// The gradient as the contract says it.
#[derive(Clone, Debug)]
pub struct GradientModel {
    pub policy: GradientPolicy,
    pub limit: usize,
    pub least: Option<Duration>,
}

impl GradientModel {
    pub fn new(policy: GradientPolicy) -> GradientModel {
        GradientModel {
            policy,
            limit: policy.initial,
            least: None,
        }
    }

    /// The gradient, in thousandths: `tolerance × least / latency`, within
    /// 500..=1000.
    pub fn permille(&self, latency: Duration) -> usize {
        let least = self.least.unwrap_or(latency).as_nanos();
        let g = u128::from(self.policy.tolerance_percent) * 10 * least / latency.as_nanos().max(1);
        g.clamp(500, 1000) as usize
    }

    /// What the contract does with `s`, in words, with the least latency
    /// and the gradient it computes.
    pub fn explain(&self, s: Sample) -> String {
        if s.dropped {
            return format!("dropped: max(min, ⌊{} / 2⌋)", self.limit);
        }
        let mut after = self.clone();
        after.least = Some(self.least.map_or(s.latency, |l| l.min(s.latency)));
        let g = after.permille(s.latency);
        let least = after.least.unwrap_or(s.latency);
        if g == 1000 && 2 * s.in_flight < self.limit {
            format!(
                "the least latency is {least:?}, the gradient 1000 thousandths, and 2 × {} < {}: \
                 the limit is not in use, so it stays",
                s.in_flight, self.limit
            )
        } else {
            format!(
                "the least latency is {least:?}, the gradient ⌊{} × 10 × {} / {}⌋ held within \
                 500..=1000 = {g} thousandths: ⌊{} × {g} / 1000⌋ + ⌊√{}⌋, within min..=max",
                self.policy.tolerance_percent,
                least.as_nanos(),
                s.latency.as_nanos().max(1),
                self.limit,
                self.limit
            )
        }
    }

    pub fn on_sample(&mut self, s: Sample) {
        let p = self.policy;
        if s.dropped {
            self.limit = std::cmp::max(p.min, self.limit / 2);
            return;
        }
        self.least = Some(self.least.map_or(s.latency, |l| l.min(s.latency)));
        let g = self.permille(s.latency);
        if g == 1000 && 2 * s.in_flight < self.limit {
            return;
        }
        let root = (0..=self.limit)
            .take_while(|r| r * r <= self.limit)
            .last()
            .unwrap_or(0);
        self.limit = (self.limit * g / 1000 + root).clamp(p.min, p.max);
    }
}

/// What happens next in the model of a script, at an instant.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Due {
    /// Its inner service answers.
    Headers(usize),
    /// Its body ends.
    End(usize),
    /// A delayed request is sent on.
    Enter(usize),
}

/// The model's state of a run.
struct Run<'a> {
    script: &'a Script,
    events: Vec<Event>,
    due: BTreeMap<(Timestamp, u64), Due>,
    seq: u64,
    /// Permits held, and by which requests (with their key).
    held: HashMap<usize, &'static str>,
    waiting: VecDeque<usize>,
    keys: HashMap<&'static str, usize>,
    queue: Option<QueueModel>,
    done: Vec<bool>,
}

/// The log the contract says `script` makes, in order: at each instant the
/// requests that come, in their order, then the drops, then what the inner
/// service and the delays make happen; a permit given back goes to the
/// request that has waited longest.
pub fn expected(script: &Script) -> Vec<Event> {
    let mut run = Run {
        script,
        events: vec![],
        due: BTreeMap::new(),
        seq: 0,
        held: HashMap::new(),
        waiting: VecDeque::new(),
        keys: HashMap::new(),
        queue: match script.under {
            Under::Delay(p) => Some(QueueModel::new(p)),
            _ => None,
        },
        done: vec![false; script.requests.len()],
    };
    let mut instants: Vec<Timestamp> = script
        .requests
        .iter()
        .flat_map(|r| [Some(r.at), r.drop_at])
        .flatten()
        .collect();
    instants.sort();
    instants.dedup();
    let mut next = 0;
    loop {
        let soonest_due = run.due.keys().next().map(|k| k.0);
        let at = match (instants.get(next), soonest_due) {
            (Some(&a), Some(d)) => a.min(d),
            (Some(&a), None) => a,
            (None, Some(d)) => d,
            (None, None) => break,
        };
        if instants.get(next) == Some(&at) {
            next += 1;
            for (id, r) in script.requests.iter().enumerate() {
                if r.at == at {
                    run.start(id, at);
                }
            }
            // Every drop of the instant, and only then are the permits
            // they gave back passed on.
            for (id, r) in script.requests.iter().enumerate() {
                if r.drop_at == Some(at) && r.at < at && !run.done[id] {
                    run.drop(id, at);
                }
            }
            run.pass_on(at);
        }
        while let Some(entry) = run.due.first_entry() {
            if entry.key().0 != at {
                break;
            }
            let due = entry.remove();
            run.happen(due, at);
        }
    }
    run.events
}

impl Run<'_> {
    fn req(&self, id: usize) -> &Req {
        &self.script.requests[id]
    }

    fn after(&mut self, at: Timestamp, due: Due) {
        self.seq += 1;
        self.due.insert((at, self.seq), due);
    }

    fn answer(&mut self, id: usize, at: Timestamp, status: u16, retry_after: Duration) {
        let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        self.events.push(Event::Headers {
            request: id,
            at,
            status,
            retry_after: Some(secs.to_string()),
        });
        self.events.push(Event::End { request: id, at });
        self.done[id] = true;
    }

    fn enter(&mut self, id: usize, at: Timestamp) {
        self.events.push(Event::Enter { request: id, at });
        let latency = self.req(id).latency;
        self.after(at + latency, Due::Headers(id));
    }

    fn start(&mut self, id: usize, at: Timestamp) {
        self.events.push(Event::Start { request: id, at });
        let r = self.req(id).clone();
        match self.script.under {
            Under::Concurrency(limit) => {
                if self.held.len() < limit && self.waiting.is_empty() {
                    self.grant(id, at);
                } else {
                    self.waiting.push_back(id);
                }
            }
            Under::Shed(p) => {
                // A key with bytes past ASCII (what `to_str` refuses) is no key.
                let key = r
                    .key
                    .filter(|k| k.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)))
                    .unwrap_or("");
                let key_count = self.keys.get(key).copied().unwrap_or(0);
                let room = if critical(r.priority) {
                    p.limit
                } else {
                    p.limit - p.reserved
                };
                if r.gives_up {
                    self.gave_up(id, at);
                } else if key_count >= p.per_key {
                    self.answer(id, at, 429, p.retry_after);
                } else if self.held.len() >= room {
                    self.answer(id, at, 503, p.retry_after);
                } else {
                    *self.keys.entry(key).or_default() += 1;
                    self.held.insert(id, key);
                    self.enter(id, at);
                }
            }
            Under::Delay(_) => {
                if r.gives_up {
                    self.gave_up(id, at);
                    return;
                }
                let queue = self.queue.as_mut().expect("a delay script has a queue");
                match queue.admit(at) {
                    Admit::Now => self.enter(id, at),
                    Admit::After(d) => self.after(at + d, Due::Enter(id)),
                    Admit::Reject(d) => self.answer(id, at, 503, d),
                }
            }
        }
    }

    fn gave_up(&mut self, id: usize, at: Timestamp) {
        self.events.push(Event::GaveUp { request: id, at });
        self.done[id] = true;
    }

    /// A permit to `id` (the concurrency limit's): taken by its call, or
    /// given back at once if its caller gives up.
    fn grant(&mut self, id: usize, at: Timestamp) {
        if self.req(id).gives_up {
            self.gave_up(id, at);
            self.pass_on(at);
        } else {
            self.held.insert(id, "");
            self.enter(id, at);
        }
    }

    /// Free permits go to the requests that have waited longest.
    fn pass_on(&mut self, at: Timestamp) {
        if let Under::Concurrency(limit) = self.script.under {
            while self.held.len() < limit {
                let Some(next) = self.waiting.pop_front() else {
                    break;
                };
                self.grant(next, at);
            }
        }
    }

    /// Gives back what `id` held: its permit, passed on at once unless it
    /// is one of an instant's drops, and its key's count.
    fn release(&mut self, id: usize, at: Option<Timestamp>) {
        if let Some(key) = self.held.remove(&id) {
            if let Some(n) = self.keys.get_mut(&key) {
                *n -= 1;
            }
            if let Some(at) = at {
                self.pass_on(at);
            }
        }
    }

    fn drop(&mut self, id: usize, at: Timestamp) {
        self.events.push(Event::Drop { request: id, at });
        self.done[id] = true;
        self.waiting.retain(|w| *w != id);
        self.due.retain(
            |_, due| !matches!(*due, Due::Headers(d) | Due::End(d) | Due::Enter(d) if d == id),
        );
        self.release(id, None);
    }

    fn happen(&mut self, due: Due, at: Timestamp) {
        match due {
            Due::Headers(id) if self.req(id).fails => {
                self.events.push(Event::Failed { request: id, at });
                self.done[id] = true;
                self.release(id, Some(at));
            }
            Due::Headers(id) => {
                self.events.push(Event::Headers {
                    request: id,
                    at,
                    status: 200,
                    retry_after: None,
                });
                let body = self.req(id).body;
                self.after(at + body, Due::End(id));
            }
            Due::End(id) => {
                self.events.push(Event::End { request: id, at });
                self.done[id] = true;
                self.release(id, Some(at));
            }
            Due::Enter(id) => self.enter(id, at),
        }
    }
}

/// Whether an `x-priority` header makes a request critical: `critical`,
/// whatever its case, with spaces or tabs around it.
fn critical(header: Option<&str>) -> bool {
    header.is_some_and(|h| h.trim_matches([' ', '\t']).eq_ignore_ascii_case("critical"))
}

/// Whether a critical or a normal request may take a permit with `held`
/// of `limit` held and `reserved` kept: the permits' model.
pub fn may_take(priority: Priority, held: usize, limit: usize, reserved: usize) -> bool {
    match priority {
        Priority::Critical => held < limit,
        Priority::Normal => held + reserved < limit,
    }
}

/// The permits as the contract says them, for the simulation's table:
/// taken and given back by one thread, never waited for.
#[derive(Clone)]
pub struct PermitsModel {
    state: std::sync::Arc<std::sync::Mutex<(usize, usize)>>,
}

impl PermitsModel {
    pub fn new(limit: usize) -> PermitsModel {
        PermitsModel {
            state: std::sync::Arc::new(std::sync::Mutex::new((limit, 0))),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, usize)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct HeldModel(PermitsModel);

impl Drop for HeldModel {
    fn drop(&mut self) {
        self.0.lock().1 -= 1;
    }
}

impl super::drive::Permits for PermitsModel {
    fn try_acquire(&self, priority: Priority) -> Option<super::drive::HeldPermit> {
        let mut state = self.lock();
        if !may_take(priority, state.1, state.0, 0) {
            return None;
        }
        state.1 += 1;
        Some(Box::new(HeldModel(self.clone())))
    }

    fn poll_acquire(
        &self,
        priority: Priority,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<super::drive::HeldPermit> {
        self.try_acquire(priority)
            .map_or(std::task::Poll::Pending, std::task::Poll::Ready)
    }

    fn in_flight(&self) -> usize {
        self.lock().1
    }

    fn set_limit(&self, limit: usize) {
        self.lock().0 = limit.max(1);
    }

    fn clone_box(&self) -> Box<dyn super::drive::Permits> {
        Box::new(self.clone())
    }
}

impl super::drive::Controller for AimdModel {
    fn limit(&self) -> usize {
        self.limit
    }

    fn on_sample(&mut self, sample: Sample) {
        AimdModel::on_sample(self, sample)
    }
}

impl super::drive::Controller for GradientModel {
    fn limit(&self) -> usize {
        self.limit
    }

    fn on_sample(&mut self, sample: Sample) {
        GradientModel::on_sample(self, sample)
    }
}
