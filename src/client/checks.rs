//! Lesson 11's checks, written once: what a subject is to the checks
//! ([`ClientVariant`]), and each check as a method of [`ClientLesson`].

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue, Method, Request, Response};
use proptest::prelude::*;

use super::drive::{BoxedBudget, ClientVariant};
use super::gen::{self, get, phase, script, Family};
use super::model::{self, check, BudgetModel};
use super::script::{Reply, Script, Wait};
use super::sim::{self, run_in_process, Client};
use super::{BudgetPolicy, ClientError, ClientPolicy, ManualClock, PolicyError, Timestamp};
use crate::kind::{Checked, Facts, Kind, Subjects};
use crate::trial::Named;
use crate::watchdog::{time_limit, watched};

/// Lesson 11: what the catalog says of it, and its subjects.
pub struct ClientLesson(Checked<ClientVariant>);

/// The facts, the subjects and the ways of naming, failing and watching
/// a subject that every kind shares.
impl std::ops::Deref for ClientLesson {
    type Target = Checked<ClientVariant>;

    fn deref(&self) -> &Checked<ClientVariant> {
        &self.0
    }
}

impl Kind for ClientLesson {
    type Variant = ClientVariant;

    fn new(facts: Facts, subjects: Subjects<ClientVariant>) -> ClientLesson {
        ClientLesson(Checked {
            facts,
            subjects,
            noun: "client",
        })
    }
}

/// The named scripts: drawn, compared with their snapshots, and shown by
/// `cargo run -- compare 11 NAME`.
pub const SNAPSHOTS: [Named<fn() -> Script>; 7] = [
    ("first_look", || {
        script(
            vec![get(0)],
            vec![phase(
                0,
                1_500,
                Reply::Limited {
                    retry_after: Some(Wait::Secs(2)),
                    t: Some(2),
                    also: None,
                },
            )],
            None,
        )
    }),
    // A server that takes half a second: a later answer's shorter wait
    // never shortens the block an earlier answer set.
    ("a_later_shorter_wait", || {
        let limited = |s| Reply::Limited {
            retry_after: Some(Wait::Secs(s)),
            t: None,
            also: None,
        };
        let mut s = script(
            vec![get(0), get(150), get(1_000)],
            vec![phase(0, 100, limited(5)), phase(100, 2_000, limited(1))],
            None,
        );
        s.latency = Duration::from_millis(500);
        s
    }),
    ("outage_and_budget", || {
        let mut s = script(
            (0..6).map(|i| get(i * 10)).collect(),
            vec![phase(0, 30_000, Reply::Unavailable { retry_after: None })],
            None,
        );
        s.policy.budget.min_per_sec = 0;
        s.policy.budget.retry_percent = 50;
        s
    }),
    ("what_is_retried", || {
        let mut post = get(10);
        post.method = Method::POST;
        let mut keyed = get(20);
        keyed.method = Method::POST;
        keyed.idempotency_key = true;
        let mut bad = get(30);
        bad.answer_with = Some(400);
        script(
            vec![get(0), post, keyed, bad],
            vec![phase(0, 100, Reply::Status(502))],
            None,
        )
    }),
    ("pace_from_the_policy", || {
        script((0..6).map(|i| get(i * 5)).collect(), vec![], Some((2, 1)))
    }),
    ("cancel_gives_back", || {
        let mut s = script(
            vec![get(0), get(5), get(1_000), get(1_500)],
            vec![],
            Some((1, 2)),
        );
        s.calls[1].drop_at = Some(Timestamp::from_millis(500));
        s
    }),
    ("cancel_gives_back_the_budget", || {
        let mut s = script(
            vec![get(0), get(20)],
            vec![phase(0, 3_000, Reply::Unavailable { retry_after: None })],
            None,
        );
        s.policy.base = Duration::from_secs(1);
        s.policy.cap = Duration::from_secs(4);
        s.policy.budget.min_per_sec = 0;
        s.policy.budget.retry_percent = 100;
        s.calls[0].drop_at = Some(Timestamp::from_millis(10));
        s
    }),
];

impl ClientLesson {
    /// Fails, naming the line, if the client reads time or randomness from
    /// anywhere but the clock and the jitter it is given.
    pub fn uses_only_its_inputs(&self) {
        self.0.uses_only_its_inputs(crate::source::Inputs::Client)
    }

    /// `server_wait` of these headers, at the checks' wall clock's origin
    /// plus `after`, is `expected`.
    pub fn server_wait(
        &self,
        headers: &[(&str, &str)],
        after: Duration,
        expected: Option<Duration>,
    ) {
        let mut map = HeaderMap::new();
        for (n, v) in headers {
            map.append(
                n.parse::<axum::http::HeaderName>().expect("a header name"),
                HeaderValue::from_str(v).expect("a header value"),
            );
        }
        let wall = model::wall_at(Timestamp::from_nanos(after.as_nanos() as u64));
        let contract = model::server_wait(&map, wall);
        assert_eq!(
            contract, expected,
            "the example disagrees with the contract"
        );
        let f = self.tested().server_wait;
        let got = self.watched("server_wait", move || Ok(f(&map, wall)));
        if got != expected {
            self.fail(
                "server_wait",
                &format!(
                    "for an answer with {headers:?}, {} after the checks' wall clock's origin \
                     ({}), server_wait says {got:?}; the contract says {expected:?}",
                    crate::time::Timestamp::from_nanos(after.as_nanos() as u64),
                    httpdate::fmt_http_date(model::wall_at(Timestamp::ZERO)),
                ),
            );
        }
    }

    /// `RetryLayer::new(policy)` answers `expected`, and so does
    /// `RetryBudget::new(policy.budget)` for the budget's errors.
    pub fn policy(&self, policy: ClientPolicy, expected: Result<(), PolicyError>) {
        assert_eq!(
            model::refuses_policy(&policy).map_or(Ok(()), Err),
            expected,
            "the case disagrees with the contract"
        );
        let v = self.tested();
        let got = self.watched("RetryLayer::new", move || {
            let inner = Client::new(tower::service_fn(|_: Request<Bytes>| async {
                Err::<Response<Bytes>, _>(ClientError("unused".into()))
            }));
            Ok((v.build)(policy, ManualClock::default(), inner).map(|_| ()))
        });
        if got != expected {
            self.fail(
                "RetryLayer::new",
                &format!("for {policy:?} it answers {got:?}; the contract answers {expected:?}"),
            );
        }
        let budget_expected = model::refuses(&policy.budget).map_or(Ok(()), Err);
        let got = self.watched("RetryBudget::new", move || {
            Ok((v.budget)(policy.budget).map(|_| ()))
        });
        if got != budget_expected {
            self.fail(
                "RetryBudget::new",
                &format!(
                    "for {:?} it answers {got:?}; the contract answers {budget_expected:?}",
                    policy.budget
                ),
            );
        }
    }

    /// The tested client's log of a script, checked against the contract.
    fn run_checked(v: ClientVariant, s: &Script) -> Result<sim::Log, String> {
        let log = run_in_process(s, |policy, clock, inner| {
            (v.build)(policy, clock, inner)
                .map_err(|e| format!("RetryLayer::new refused the valid policy {policy:?}: {e:?}"))
        })?;
        check(s, &log).map_err(|b| b.explain(s, &log))?;
        Ok(log)
    }

    /// Random scripts of a family, each run and checked event by event.
    pub fn agrees_with_model(&self, family: Family, cases: u32) {
        let v = self.tested();
        let strategy = gen::scripts(family);
        if let Err(failed) = crate::run::run_cases(
            self.who(),
            cases,
            2_000,
            &strategy,
            |s, i| {
                s.calls
                    .get(i)
                    .map(|c| format!("call #{i}: {}", c.describe()))
                    .unwrap_or_default()
            },
            move |s| Self::run_checked(v, s).map(|_| ()),
        ) {
            self.fail(
                "the contract's client",
                &format!(
                    "{}\n\nThe script (the smallest found): policy {:?}; server {}; calls \
                     {}",
                    failed.reason,
                    failed.value.policy,
                    describe_server(&failed.value),
                    failed
                        .value
                        .calls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| format!(
                            "#{i} at {} through client {}{}: {}",
                            c.at,
                            c.client,
                            c.drop_at
                                .map(|d| format!(" (dropped at {d})"))
                                .unwrap_or_default(),
                            c.describe()
                        ))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
            );
        }
    }

    /// Random deposits, withdrawals and givings back at rising instants:
    /// every answer of the budget is the model's.
    pub fn budget_agrees_with_model(&self) {
        let v = self.tested();
        let ops = (
            1..=10u64,
            0..=2u32,
            prop_oneof![Just(0u32), Just(20), Just(50), Just(100), Just(1000)],
            proptest::collection::vec((0..3u8, 0..700u64), 1..60),
        );
        if let Err(failed) = crate::run::run_cases(
            self.who(),
            300,
            2_000,
            &ops,
            |_, _| String::new(),
            move |(ttl, min_per_sec, retry_percent, ops)| {
                let policy = BudgetPolicy {
                    ttl: Duration::from_secs(*ttl),
                    min_per_sec: *min_per_sec,
                    retry_percent: *retry_percent,
                };
                let budget =
                    (v.budget)(policy).map_err(|e| format!("refused {policy:?}: {e:?}"))?;
                let mut model = BudgetModel::new(policy);
                let (mut now, mut taken, mut said) = (0u64, vec![], vec![]);
                for (op, gap) in ops {
                    now += gap * 10_000_000;
                    let at = Timestamp::from_nanos(now);
                    match op {
                        0 => {
                            budget.deposit(at);
                            model.deposit(at);
                            said.push(format!("deposit at {at}"));
                        }
                        1 => {
                            let (got, want) = (budget.withdraw(at), model.withdraw(at));
                            said.push(format!("withdraw at {at} → {got}"));
                            if got != want {
                                return Err(format!(
                                    "with {policy:?}, after\n  {}\nthe budget answers {got}; the \
                                     contract answers {want} (it holds {} hundredths of a retry)",
                                    said.join("\n  "),
                                    model.balance(at) + if want { 100 } else { 0 }
                                ));
                            }
                            if got {
                                taken.push(at);
                            }
                        }
                        _ => {
                            if let Some(t) = taken.pop() {
                                budget.give_back(t, at);
                                model.give_back(t, at);
                                said.push(format!("give_back of {t} at {at}"));
                            }
                        }
                    }
                }
                Ok(())
            },
        ) {
            self.fail("RetryBudget", &failed.reason);
        }
    }

    /// A named script, drawn and compared with its snapshot.
    pub fn named_snapshot(&self, name: &str) {
        let (_, make) = SNAPSHOTS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no script is named {name:?}"));
        let s = make();
        let reference = self.reference();
        let contract = self.watched("the reference", {
            let s = s.clone();
            move || {
                Self::run_checked(reference, &s)
                    .map(|log| super::draw::draw(&log.events, &s.calls, None))
            }
        });
        let v = self.tested();
        let script = format!(
            "In script {name}: policy {:?}; server {}.\n",
            s.policy,
            describe_server(&s)
        );
        let tested = self.watched(name, {
            let s = s.clone();
            move || {
                Self::run_checked(v, &s)
                    .map(|log| super::draw::draw(&log.events, &s.calls, None))
                    .map_err(|e| format!("{script}{e}"))
            }
        });
        crate::snapshot::assert_snapshot(
            (self.facts.root, self.facts.number, name),
            &format!(
                "policy {:?}; server {}; calls {:?}",
                s.policy,
                describe_server(&s),
                s.calls
            ),
            [&tested, &contract, &contract],
            &self.whose(),
        );
    }

    /// For `cargo run -- compare 11 [NAME]`: the subject's log and the
    /// reference's.
    pub fn print_comparison(&self, which: &str) {
        let name = super::comparison(Some(which).filter(|w| !w.trim().is_empty()))
            .unwrap_or_else(|e| panic!("{e}"));
        let (_, make) = SNAPSHOTS.iter().find(|(n, _)| *n == name).expect("named");
        let s = make();
        let run = |v: ClientVariant| -> String {
            let s2 = s.clone();
            match watched(
                time_limit(),
                |_| String::new(),
                move || {
                    run_in_process(&s2, |p, c, i| {
                        (v.build)(p, c, i).map_err(|e| format!("{e:?}"))
                    })
                },
            ) {
                Ok(Ok(log)) => {
                    let verdict = match check(&s, &log) {
                        Ok(()) => "keeps the contract".to_string(),
                        Err(b) => b.explain(&s, &log),
                    };
                    format!(
                        "{}\n{verdict}",
                        super::draw::draw(&log.events, &s.calls, None)
                    )
                }
                Ok(Err(e)) => e,
                Err(stop) => stop.text().to_string(),
            }
        };
        crate::trial::println(format_args!(
            "script {name}: server {}\n\n{}:\n{}\nthe reference:\n{}",
            describe_server(&s),
            self.whose(),
            run(self.tested()),
            run(self.reference())
        ));
    }

    /// Loom: each race on the budget, over every schedule.
    pub fn budget_race(&self, race: Race) {
        let v = self.tested();
        if let Err(e) =
            crate::scenarios::explore_with(format!("{race:?}"), move || race.breaks(v.budget_loom))
        {
            self.fail("RetryBudget under loom", &e);
        }
    }

    /// The end-to-end checks, over a real lesson 07 server.
    pub fn end_to_end(&self, check: super::serve::Check) {
        let (v, server) = (self.tested(), super::serve::server());
        self.watched("over loopback", move || super::serve::run(check, v, server));
    }
}

/// The server of a script, in words.
pub fn describe_server(s: &Script) -> String {
    let mut parts: Vec<String> = s
        .phases
        .iter()
        .map(|p| {
            format!(
                "{:?} on {} from {} until {}",
                p.reply, p.host, p.from, p.until
            )
        })
        .collect();
    if let Some((q, w)) = s.limit {
        parts.push(format!(
            "otherwise a token bucket of {q} per {w} s per host, as lesson 07's layer"
        ));
    } else {
        parts.push("otherwise 200".into());
    }
    parts.join("; ")
}

/// The loom races on a shared budget: each two threads at one instant.
#[derive(Clone, Copy, Debug)]
pub enum Race {
    /// Room for one retry, two threads withdraw: exactly one may.
    TwoWithdrawOne,
    /// Two deposits at once: both count (no update is lost).
    TwoDeposits,
    /// A withdrawal given back beside another withdrawal: neither undoes
    /// the other.
    GiveBackBesideWithdraw,
}

/// Runs `one` on a loom thread and `two` on this one, on the same budget.
fn both(
    b: &Arc<BoxedBudget>,
    one: fn(&BoxedBudget) -> bool,
    two: fn(&BoxedBudget) -> bool,
) -> (bool, bool) {
    let other = b.clone();
    crate::scenarios::both(move || one(&other), || two(b))
}

/// The instant every race happens at.
const AT: Timestamp = Timestamp::from_secs(1);

impl Race {
    /// What breaks in one schedule, if anything.
    pub fn breaks(
        self,
        build: fn(BudgetPolicy) -> Result<BoxedBudget, PolicyError>,
    ) -> Option<String> {
        self.run(build).err()
    }

    fn run(
        self,
        build: fn(BudgetPolicy) -> Result<BoxedBudget, PolicyError>,
    ) -> Result<(), String> {
        let make = |min_per_sec, retry_percent| {
            let p = BudgetPolicy {
                ttl: Duration::from_secs(1),
                min_per_sec,
                retry_percent,
            };
            build(p)
                .map(Arc::new)
                .map_err(|e| format!("RetryBudget::new refused {p:?}: {e:?}"))
        };
        let passes = |b: &Arc<BoxedBudget>, n: usize| (0..n).filter(|_| b.withdraw(AT)).count();
        match self {
            Race::TwoWithdrawOne => {
                let b = make(1, 0)?;
                let (x, y) = both(&b, |b| b.withdraw(AT), |b| b.withdraw(AT));
                if x == y {
                    return Err(format!(
                        "a budget with room for one retry (min_per_sec 1, ttl 1 s, retry_percent \
                         0) answered {x} and {y} to two withdrawals at {AT}: exactly one may pass"
                    ));
                }
            }
            Race::TwoDeposits => {
                let b = make(0, 100)?;
                let deposit = |b: &BoxedBudget| {
                    b.deposit(AT);
                    true
                };
                both(&b, deposit, deposit);
                let n = passes(&b, 3);
                if n != 2 {
                    return Err(format!(
                        "two deposits of one retry each (retry_percent 100, no reserve) made at \
                         once at {AT}, then three withdrawals: {n} passed, where the two deposits \
                         pay for exactly two"
                    ));
                }
            }
            Race::GiveBackBesideWithdraw => {
                // Room for two retries, one taken: the withdrawal beside the
                // giving back may pass on its own, and neither may undo the
                // other.
                let b = make(2, 0)?;
                if !b.withdraw(AT) {
                    return Err(
                        "a budget with room for two retries refused the first withdrawal".into(),
                    );
                }
                let (_, w) = both(
                    &b,
                    |b| {
                        b.give_back(AT, AT);
                        true
                    },
                    |b| b.withdraw(AT),
                );
                let n = usize::from(w) + passes(&b, 3);
                if n != 2 {
                    return Err(format!(
                        "a budget with room for two retries: one withdrawn, then given back at \
                         {AT} beside another withdrawal; that one and three after both passed \
                         {n} times, where the two retries the budget then holds pay for \
                         exactly two"
                    ));
                }
            }
        }
        Ok(())
    }
}
