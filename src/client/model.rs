//! Lesson 11's contract, written apart from any client: what the server's
//! answer asks a client to wait ([`server_wait`]), the retry budget
//! ([`BudgetModel`]), and a checker that reads a run's log event by event
//! and says where the client first left the contract ([`check`]).
//!
//! The checker follows the log's own order, so it needs no guess about
//! which of two requests the client served first; from there everything is
//! exact: each attempt's instant, each jitter's cap and value, each budget
//! decision and each answer handed back.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use axum::http::{HeaderMap, Method};

use super::draw::{draw, seconds};
use super::script::Script;
use super::sim::{Answer, Event, Log};
use super::{
    parse_list, BudgetPolicy, ClientPolicy, Jitter, Timestamp, RATELIMIT, RATELIMIT_POLICY,
};

/// The statuses worth another attempt: 408, 429, 500, 502, 503 and 504.
pub const RETRIED: [u16; 6] = [408, 429, 500, 502, 503, 504];

/// The methods safe to repeat without an `Idempotency-Key` (RFC 9110's
/// idempotent methods).
pub const IDEMPOTENT: [&str; 6] = ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"];

/// How long an answer asks the client to wait before its partition may be
/// sent to again, `wall` being the wall-clock time it arrived: a
/// `Retry-After` of whole seconds or an HTTP-date (a date in the past is no
/// wait); without a readable one, the largest `t` of the `RateLimit`
/// field's items whose `r` is 0; else none.
pub fn server_wait(headers: &HeaderMap, wall: SystemTime) -> Option<Duration> {
    if let Some(value) = headers
        .get(axum::http::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
    {
        let value = value.trim();
        if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
            return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
        }
        if let Ok(date) = httpdate::parse_http_date(value) {
            return Some(date.duration_since(wall).unwrap_or(Duration::ZERO));
        }
    }
    headers
        .get(RATELIMIT)
        .and_then(parse_list)?
        .iter()
        .filter(|item| item.param("r") == Some(0))
        .filter_map(|item| item.param("t"))
        .max()
        .map(Duration::from_secs)
}

/// The wall-clock time of the checks' clock at `at`.
pub fn wall_at(at: Timestamp) -> SystemTime {
    SystemTime::UNIX_EPOCH
        + Duration::from_secs(super::WALL_ORIGIN_SECS)
        + Duration::from_nanos(at.as_nanos())
}

/// The retry budget: in hundredths of a retry, a reserve of
/// `min_per_sec × ttl` retries, plus `retry_percent` per deposit, minus 100
/// per withdrawal, each counted in the slot (a tenth of `ttl`) it was made
/// in and forgotten once ten slots have passed.
#[derive(Clone, Debug)]
pub struct BudgetModel {
    policy: BudgetPolicy,
    slots: BTreeMap<u64, i64>,
}

impl BudgetModel {
    pub fn new(policy: BudgetPolicy) -> BudgetModel {
        BudgetModel {
            policy,
            slots: BTreeMap::new(),
        }
    }

    fn index(&self, at: Timestamp) -> u64 {
        at.as_nanos() / (self.policy.slot().as_nanos() as u64).max(1)
    }

    /// What the budget holds at `now`, in hundredths of a retry.
    pub fn balance(&self, now: Timestamp) -> i64 {
        let i = self.index(now);
        let counted: i64 = self
            .slots
            .range(i.saturating_sub(9)..=i)
            .map(|(_, v)| v)
            .sum();
        self.policy.reserve() as i64 + counted
    }

    pub fn deposit(&mut self, now: Timestamp) {
        *self.slots.entry(self.index(now)).or_default() += i64::from(self.policy.retry_percent);
    }

    pub fn withdraw(&mut self, now: Timestamp) -> bool {
        let allowed = self.balance(now) >= 100;
        if allowed {
            *self.slots.entry(self.index(now)).or_default() -= 100;
        }
        allowed
    }

    pub fn give_back(&mut self, taken_at: Timestamp, now: Timestamp) {
        let j = self.index(taken_at);
        if j + 10 > self.index(now) {
            *self.slots.entry(j).or_default() += 100;
        }
    }
}

/// What the contract checks a budget's answers against, as a function of
/// a policy (the checks' own budget checks use it).
pub fn refuses(policy: &BudgetPolicy) -> Option<super::PolicyError> {
    let secs = policy.ttl.as_secs();
    if policy.ttl.subsec_nanos() != 0 || !(1..=60).contains(&secs) {
        Some(super::PolicyError::TtlOutOfRange)
    } else if policy.retry_percent > 1000 {
        Some(super::PolicyError::PercentOutOfRange)
    } else {
        None
    }
}

/// What `RetryLayer::new` refuses, in the contract's order.
pub fn refuses_policy(policy: &ClientPolicy) -> Option<super::PolicyError> {
    use super::PolicyError::*;
    if policy.max_attempts == 0 {
        Some(ZeroAttempts)
    } else if policy.base.is_zero() {
        Some(ZeroBase)
    } else if policy.cap < policy.base {
        Some(CapBelowBase)
    } else {
        refuses(&policy.budget)
    }
}

/// Where a client first left the contract: the event, and why.
#[derive(Clone, Debug)]
pub struct Broken {
    pub index: Option<usize>,
    pub message: String,
}

impl Broken {
    /// The message with the log drawn up to the event.
    pub fn explain(&self, script: &Script, log: &Log) -> String {
        let upto = self.index.map_or(log.events.len(), |i| i + 1);
        format!(
            "{}\n\nWhat happened, in order (→ marks it):\n{}",
            self.message,
            draw(&log.events[..upto], &script.calls, self.index)
        )
    }
}

/// A partition's state: blocked until, the pace learned from
/// `RateLimit-Policy` (quota, interval), and its GCRA's theoretical
/// arrival time.
#[derive(Clone, Copy, Default, Debug)]
struct Partition {
    blocked: Timestamp,
    pace: Option<(u64, u64)>,
    tat: u64,
}

impl Partition {
    /// Takes a slot at `ready` or later: the instant it may be sent, and
    /// the `tat` it left if it took a slot of the pace.
    fn reserve(&mut self, ready: Timestamp) -> (Timestamp, Option<u64>) {
        let ready = ready.max(self.blocked);
        match self.pace {
            None => (ready, None),
            Some((quota, interval)) => {
                let tau = (quota - 1).saturating_mul(interval);
                let at = ready.max(Timestamp::from_nanos(self.tat.saturating_sub(tau)));
                self.tat = self.tat.max(at.as_nanos()).saturating_add(interval);
                (at, Some(self.tat))
            }
        }
    }

    fn learn(&mut self, at: Timestamp, answer: &Answer) {
        let headers = answer.headers();
        if let Some(item) = headers
            .get(RATELIMIT_POLICY)
            .and_then(parse_list)
            .and_then(|items| items.into_iter().next())
        {
            if let (Some(q), Some(w)) = (item.param("q"), item.param("w")) {
                if q > 0 && w > 0 {
                    self.pace = Some((q, (w.saturating_mul(1_000_000_000) / q).max(1)));
                }
            }
        }
        if let Some((q, interval)) = self.pace {
            if let Some(r) = headers
                .get(RATELIMIT)
                .and_then(parse_list)
                .and_then(|items| items.into_iter().next())
                .and_then(|item| item.param("r"))
            {
                let used = q - r.min(q);
                self.tat = self
                    .tat
                    .max(at.as_nanos().saturating_add(used.saturating_mul(interval)));
            }
        }
        if let Some(wait) = server_wait(&headers, wall_at(at)) {
            let until = Timestamp::from_nanos(
                at.as_nanos()
                    .saturating_add(u64::try_from(wait.as_nanos()).unwrap_or(u64::MAX)),
            );
            self.blocked = self.blocked.max(until);
        }
    }
}

/// Why a request is handed back instead of retried.
#[derive(Clone, Copy, Debug)]
enum Final {
    Answered(u16),
    Unsafe,
    AttemptsSpent,
    /// What the budget held, in hundredths of a retry.
    BudgetSpent(i64),
}

#[derive(Clone, Debug)]
enum State {
    /// Attempt `attempt` may be sent at `slot`, or later if its partition
    /// is blocked then; `paced`, the `tat` its slot of the pace left, if it
    /// holds one; `withdrawn` the instant of its retry's withdrawal.
    Waiting {
        attempt: u32,
        slot: Timestamp,
        paced: Option<u64>,
        withdrawn: Option<Timestamp>,
    },
    InFlight(u32),
    Answered {
        attempt: u32,
        at: Timestamp,
        answer: Answer,
        /// A retry's cap, the instant its jitter counts from, its
        /// withdrawal's instant and what the budget held before it.
        next: Result<(Duration, Timestamp, Timestamp, i64), Final>,
    },
    Done,
}

struct Client {
    budget: BudgetModel,
    jitter: Jitter,
    partitions: BTreeMap<char, Partition>,
}

/// Checks a run's log against the contract, event by event.
pub fn check(script: &Script, log: &Log) -> Result<(), Broken> {
    let policy = &script.policy;
    let mut clients: Vec<Client> = (0..script.clients.max(1))
        .map(|i| Client {
            budget: BudgetModel::new(policy.budget),
            jitter: Jitter::seeded(policy.seed.wrapping_add(i as u64)),
            partitions: BTreeMap::new(),
        })
        .collect();
    let mut states: BTreeMap<usize, State> = BTreeMap::new();
    let secs = |d: Duration| format!("{:.9} s", d.as_secs_f64());
    for (i, event) in log.events.iter().enumerate() {
        let broken = |message: String| Broken {
            index: Some(i),
            message,
        };
        let request = match event {
            Event::Call { request, .. }
            | Event::Send { request, .. }
            | Event::Answer { request, .. }
            | Event::Return { request, .. }
            | Event::Drop { request, .. } => *request,
            Event::Draw {
                request: Some(r), ..
            } => *r,
            Event::Draw { request: None, .. } => {
                return Err(broken(
                    "the client drew a jitter while no request was being polled (a draw \
                     belongs to the retry it delays)"
                        .into(),
                ))
            }
        };
        let Some(call) = script.calls.get(request) else {
            return Err(broken(
                "the server got a request without the x-kata-request header the caller gave \
                 it: a client sends a copy of the request, every header kept"
                    .into(),
            ));
        };
        let name = format!("request #{request} ({})", call.describe());
        let client = &mut clients[call.client];
        let part = client.partitions.entry(call.host).or_default();
        let state = states.get(&request).cloned();
        match (event, state) {
            (Event::Call { at, .. }, None) => {
                client.budget.deposit(*at);
                let (slot, paced) = part.reserve(*at);
                states.insert(
                    request,
                    State::Waiting {
                        attempt: 1,
                        slot,
                        paced,
                        withdrawn: None,
                    },
                );
            }
            (
                Event::Draw { cap, value, .. },
                Some(State::Answered {
                    attempt,
                    next: Ok((want_cap, from, withdrawn, _)),
                    ..
                }),
            ) => {
                if *cap != want_cap {
                    return Err(broken(format!(
                        "{name} drew its jitter for retry {attempt} up to {}; the contract draws \
                         up to base × 2^(retry − 1), at most cap: {} (base {}, cap {})",
                        secs(*cap),
                        secs(want_cap),
                        secs(policy.base),
                        secs(policy.cap)
                    )));
                }
                let expected = client.jitter.up_to(want_cap);
                if Duration::from_nanos(*value) != expected {
                    return Err(broken(format!(
                        "{name} drew {} where the layer's Jitter gives {}: one \
                         Jitter::seeded(policy.seed) per layer, shared by every clone and every \
                         request, one draw per retry and none otherwise",
                        secs(Duration::from_nanos(*value)),
                        secs(expected)
                    )));
                }
                let (slot, paced) = part.reserve(from + Duration::from_nanos(*value));
                states.insert(
                    request,
                    State::Waiting {
                        attempt: attempt + 1,
                        slot,
                        paced,
                        withdrawn: Some(withdrawn),
                    },
                );
            }
            (Event::Draw { .. }, state) => {
                return Err(broken(format!(
                    "{name} drew a jitter {}",
                    match state {
                        Some(State::Answered { next: Err(why), .. }) =>
                            format!("but is not to be retried: {}", reason(why, policy)),
                        _ => "while it had no retry to delay: a retry draws once, after the \
                              answer it retries"
                            .into(),
                    }
                )));
            }
            (
                Event::Send {
                    attempt,
                    changed: Some(how),
                    ..
                },
                _,
            ) => {
                return Err(broken(format!(
                    "{name} sent attempt {attempt} changed: {how}. A client sends each attempt \
                     as the caller made it (copy_request keeps everything)"
                )))
            }
            (
                Event::Send { attempt, at, .. },
                Some(State::Waiting {
                    attempt: want,
                    slot,
                    ..
                }),
            ) if *attempt == want => {
                let expected = slot.max(part.blocked);
                if *at < part.blocked {
                    return Err(broken(format!(
                        "{name} sent attempt {attempt} at {}, but its server asked for no \
                         request to http://{}/ before {}",
                        seconds(*at),
                        call.host,
                        seconds(part.blocked)
                    )));
                }
                if *at != expected {
                    return Err(broken(format!(
                        "{name} sent attempt {attempt} at {}; the contract sends it at {}{}",
                        seconds(*at),
                        seconds(expected),
                        if *at < slot {
                            format!(
                                ", the slot it was given{}",
                                if part.pace.is_some() {
                                    " (the pace the server's RateLimit-Policy asks for; a \
                                     dropped request gives its slot back only if no slot was \
                                     taken after it)"
                                } else {
                                    " (its backoff: the answer, or the end of the server's wait, plus the jitter drawn)"
                                }
                            )
                        } else {
                            " (its slot, or the end of the partition's block if later): a \
                             client waits no longer than it must"
                                .into()
                        }
                    )));
                }
                states.insert(request, State::InFlight(*attempt));
            }
            (Event::Send { attempt, .. }, Some(State::Answered { next, .. })) => {
                return Err(broken(match next {
                    Ok(_) => format!(
                        "{name} sent attempt {attempt} without drawing its jitter: every retry \
                         waits a draw from the layer's Jitter"
                    ),
                    Err(why) => format!(
                        "{name} sent attempt {attempt}, but it is not to be retried: {}",
                        reason(why, policy)
                    ),
                }))
            }
            (Event::Send { attempt, .. }, _) => {
                return Err(broken(format!(
                    "{name} sent attempt {attempt} when the contract did not: each attempt is \
                     sent once, after the one before it was answered"
                )))
            }
            (
                Event::Answer {
                    attempt,
                    at,
                    answer,
                    ..
                },
                Some(State::InFlight(sent)),
            ) if sent == *attempt => {
                part.learn(*at, answer);
                let status = match answer {
                    Answer::Status(s, _) => Some(*s),
                    Answer::Failed(_) => None,
                };
                let method = &call.method;
                let safe = call.idempotency_key || IDEMPOTENT.contains(&method.as_str());
                let next = if status.is_some_and(|s| !RETRIED.contains(&s)) {
                    Err(Final::Answered(status.unwrap_or_default()))
                } else if !safe {
                    Err(Final::Unsafe)
                } else if *attempt >= policy.max_attempts {
                    Err(Final::AttemptsSpent)
                } else {
                    let held = client.budget.balance(*at);
                    if client.budget.withdraw(*at) {
                        Ok((
                            policy.cap_of_retry(*attempt),
                            (*at).max(part.blocked),
                            *at,
                            held,
                        ))
                    } else {
                        Err(Final::BudgetSpent(held))
                    }
                };
                states.insert(
                    request,
                    State::Answered {
                        attempt: *attempt,
                        at: *at,
                        answer: answer.clone(),
                        next,
                    },
                );
            }
            (Event::Answer { attempt, .. }, state) => {
                return Err(broken(format!(
                    "{name}: the server answered attempt {attempt}, which the client did not \
                     send as the contract does (it was {state:?})"
                )))
            }
            (
                Event::Return { at, outcome, .. },
                Some(State::Answered {
                    at: answered,
                    answer,
                    next: Err(_),
                    ..
                }),
            ) => {
                if !same(outcome, &answer) {
                    return Err(broken(format!(
                        "{name} returned {} where its last attempt was answered {}: a client \
                         hands back the last answer as it came",
                        outcome.short(),
                        answer.short()
                    )));
                }
                if *at != answered {
                    return Err(broken(format!(
                        "{name} returned at {}, not at {} when its last answer came",
                        seconds(*at),
                        seconds(answered)
                    )));
                }
                states.insert(request, State::Done);
            }
            (
                Event::Return { outcome, .. },
                Some(State::Answered {
                    attempt,
                    next: Ok((_, _, _, held)),
                    answer,
                    ..
                }),
            ) => {
                return Err(broken(format!(
                    "{name} returned {} after attempt {attempt}; the contract retries it: {} \
                     is worth another attempt for a request safe to repeat, {attempt} of {} \
                     attempts are used, and the budget allowed the retry (it held {held} \
                     hundredths of a retry, at least the 100 a retry takes: {})",
                    outcome.short(),
                    answer.short(),
                    policy.max_attempts,
                    budget_terms(&policy.budget)
                )))
            }
            (Event::Return { outcome, .. }, _) => {
                return Err(broken(format!(
                    "{name} returned {} before the contract's attempts were made",
                    outcome.short()
                )))
            }
            (
                Event::Drop { at, .. },
                Some(State::Waiting {
                    paced, withdrawn, ..
                }),
            ) => {
                if let Some(taken) = withdrawn {
                    client.budget.give_back(taken, *at);
                }
                // Only the last slot taken goes back: a later one keeps its
                // place.
                if let (Some(left), Some((_, interval))) = (paced, part.pace) {
                    if part.tat == left {
                        part.tat = left.saturating_sub(interval);
                    }
                }
                states.insert(request, State::Done);
            }
            (Event::Drop { .. }, _) => {
                states.insert(request, State::Done);
            }
            (event, state) => {
                return Err(broken(format!(
                    "{name}: {event:?} came when the request was {state:?}"
                )))
            }
        }
    }
    if let Some(stuck) = &log.stuck {
        return Err(Broken {
            index: None,
            message: stuck.clone(),
        });
    }
    let open: Vec<String> = states
        .iter()
        .filter(|(_, s)| !matches!(s, State::Done))
        .map(|(r, _)| format!("#{r}"))
        .collect();
    if !open.is_empty() {
        return Err(Broken {
            index: None,
            message: format!("requests {} never returned", open.join(", ")),
        });
    }
    Ok(())
}

fn reason(why: Final, policy: &ClientPolicy) -> String {
    match why {
        Final::Answered(s) => format!(
            "a {s} is final (only {} and no answer at all are worth another attempt)",
            RETRIED.map(|s| s.to_string()).join(", ")
        ),
        Final::Unsafe => "its method is not idempotent and it has no Idempotency-Key, so a \
                          repeat could do its work twice"
            .into(),
        Final::AttemptsSpent => format!(
            "its {} attempts (max_attempts, the first one included) are used",
            policy.max_attempts
        ),
        Final::BudgetSpent(held) => format!(
            "the retry budget refused the retry (it held {held} hundredths of a retry, less than \
             the 100 a retry takes: {})",
            budget_terms(&policy.budget)
        ),
    }
}

/// The budget's terms, for messages.
fn budget_terms(b: &BudgetPolicy) -> String {
    format!(
        "a reserve of {} ({} a second over {} s), {} per request, 100 per retry, each counted \
         for {} s",
        b.reserve(),
        b.min_per_sec,
        b.ttl.as_secs(),
        b.retry_percent,
        b.ttl.as_secs()
    )
}

/// Whether a returned answer is the server's: the same status and headers,
/// or the same failure.
fn same(returned: &Answer, answered: &Answer) -> bool {
    match (returned, answered) {
        (Answer::Status(a, ha), Answer::Status(b, hb)) => {
            let strip = |h: &Vec<(String, String)>| {
                let mut h: Vec<(String, String)> = h
                    .iter()
                    .filter(|(n, _)| !n.starts_with("x-kata") && n != "content-type")
                    .cloned()
                    .collect();
                h.sort();
                h
            };
            a == b && strip(ha) == strip(hb)
        }
        (Answer::Failed(_), Answer::Failed(_)) => true,
        _ => false,
    }
}

/// Whether a method is one of the idempotent ones.
pub fn idempotent(method: &Method) -> bool {
    IDEMPOTENT.contains(&method.as_str())
}
