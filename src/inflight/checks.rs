//! Lesson 12's checks, written once: each check as a method of
//! [`InflightLesson`].

use super::adapt::{self, Adaptive, AIMD, GRADIENT, SERVER};
use super::drive::{Built, InflightVariant, Service};
use super::gen::{self, Family};
use super::model::{self, expected, AimdModel, GradientModel, QueueModel};
use super::sim::{run_script, seconds, Log};
use super::verdict::{
    build, checked, describe, difference, follow, list, named, permits_run, queue_run, simulate,
    until,
};
use super::{Admit, AimdPolicy, DelayPolicy, GradientPolicy, PolicyError, ShedPolicy, Timestamp};
use crate::kind::{Checked, Facts, Kind, Subjects};
use crate::subject::Subject;
use crate::watchdog::{time_limit, watched};

/// Lesson 12: what the catalog says of it, and its subjects.
pub struct InflightLesson(Checked<InflightVariant>);

/// The facts, the subjects and the ways of naming, failing and watching
/// a subject that every kind shares.
impl std::ops::Deref for InflightLesson {
    type Target = Checked<InflightVariant>;

    fn deref(&self) -> &Checked<InflightVariant> {
        &self.0
    }
}

impl Kind for InflightLesson {
    type Variant = InflightVariant;

    fn new(facts: Facts, subjects: Subjects<InflightVariant>) -> InflightLesson {
        InflightLesson(Checked {
            facts,
            subjects,
            noun: "limits",
        })
    }
}

/// One policy of lesson 12, for the config checks.
#[derive(Clone, Copy, Debug)]
pub enum Policy {
    Permits(usize, usize),
    /// `ConcurrencyLimitLayer::new(limit)`.
    Concurrency(usize),
    /// `DelayLayer::new(policy, clock)`, which refuses what its queue does.
    DelayLayer(DelayPolicy),
    Shed(ShedPolicy),
    Delay(DelayPolicy),
    Aimd(AimdPolicy),
    Gradient(GradientPolicy),
}

impl Policy {
    pub fn contract(&self) -> Result<(), PolicyError> {
        match self {
            Policy::Permits(l, r) => model::refuses_permits(*l, *r),
            Policy::Concurrency(l) => model::refuses_permits(*l, 0),
            Policy::DelayLayer(p) => model::refuses_delay(p),
            Policy::Shed(p) => model::refuses_shed(p),
            Policy::Delay(p) => model::refuses_delay(p),
            Policy::Aimd(p) => model::refuses_aimd(p),
            Policy::Gradient(p) => model::refuses_gradient(p),
        }
        .map_or(Ok(()), Err)
    }

    fn built(&self, v: InflightVariant) -> (String, Result<(), PolicyError>) {
        fn ok<T>(b: Built<T>) -> Result<(), PolicyError> {
            b.map(|_| ())
        }
        let inner = || Service::new(tower::service_fn(|_| async { unreachable!() }));
        match *self {
            Policy::Permits(l, r) => (format!("Permits::new({l}, {r})"), ok((v.permits)(l, r))),
            Policy::Shed(p) => (format!("ShedLayer::new({p:?})"), ok((v.shed)(p, inner()))),
            Policy::Concurrency(l) => (
                format!("ConcurrencyLimitLayer::new({l})"),
                ok((v.concurrency)(l, inner())),
            ),
            Policy::DelayLayer(p) => (
                format!("DelayLayer::new({p:?}, clock)"),
                ok((v.delay)(p, super::ManualClock::default(), inner())),
            ),
            Policy::Delay(p) => (format!("DelayQueue::new({p:?})"), ok((v.queue)(p))),
            Policy::Aimd(p) => (format!("Aimd::new({p:?})"), ok((v.aimd)(p))),
            Policy::Gradient(p) => (format!("Gradient::new({p:?})"), ok((v.gradient)(p))),
        }
    }
}

impl InflightLesson {
    /// Fails, naming the line, if the file reads the real clock, sleeps on
    /// tokio's, or takes its permits from tokio.
    pub fn uses_only_its_inputs(&self) {
        self.0.uses_only_its_inputs(crate::source::Inputs::InFlight)
    }

    /// The policy is refused, or not, as the contract says.
    pub fn policy(&self, policy: Policy, expected: Result<(), PolicyError>) {
        assert_eq!(
            policy.contract(),
            expected,
            "the case disagrees with the contract"
        );
        let v = self.tested();
        let (call, got) = self.watched("a policy", move || Ok(policy.built(v)));
        if got != expected {
            self.fail(
                &call,
                &format!("it answers {got:?}; the contract answers {expected:?}"),
            );
        }
    }

    /// The delay queue of `policy` answers requests at `arrivals` (ms) as
    /// `expected` says, and as the model does.
    pub fn admits(&self, policy: DelayPolicy, arrivals: &[u64], expected: &[Admit]) {
        let at: Vec<Timestamp> = arrivals
            .iter()
            .map(|&a| Timestamp::from_millis(a))
            .collect();
        let mut m = QueueModel::new(policy);
        let contract: Vec<Admit> = at.iter().map(|&t| m.admit(t)).collect();
        assert_eq!(
            contract, expected,
            "the example disagrees with the contract"
        );
        let v = self.tested();
        self.watched("DelayQueue::admit", move || queue_run(v, policy, &at));
    }

    /// Runs one property of `cases` cases; its failure shows the smallest
    /// case found, as `show` says it.
    fn property<T: std::fmt::Debug + Clone + Send + 'static>(
        &self,
        what: &str,
        cases: u32,
        strategy: &impl proptest::strategy::Strategy<Value = T>,
        show: fn(&T) -> String,
        check: impl Fn(&T) -> Result<(), String> + Clone + Send + 'static,
    ) {
        if let Err(f) = crate::run::run_cases(
            self.who(),
            cases,
            1_000,
            strategy,
            |_, _| String::new(),
            check,
        ) {
            self.fail(
                what,
                &format!(
                    "{}\n\nThe smallest case found: {}",
                    f.reason,
                    show(&f.value)
                ),
            );
        }
    }

    /// Random policies and arrivals: every answer is the model's.
    pub fn queue_agrees_with_model(&self, cases: u32) {
        let v = self.tested();
        self.property(
            "DelayQueue::admit",
            cases,
            &gen::arrivals(),
            |(p, a)| format!("{p:?}, arrivals at {}", list(a.iter().map(|t| seconds(*t)))),
            move |(p, a)| queue_run(v, *p, a),
        );
    }

    /// Random scripts of the family through the tested layer: each
    /// request's events are the contract's.
    pub fn agrees_with_model(&self, family: Family, cases: u32) {
        let v = self.tested();
        self.property(
            "a script",
            cases,
            &gen::script(family),
            describe,
            move |s| checked(v, s).map(|_| ()),
        );
    }

    /// Takes, give-backs and new limits, one at a time: each take answers
    /// as the contract says, and `in_flight` counts what is held.
    pub fn permits_agree_with_model(&self, wait: bool, cases: u32) {
        let v = self.tested();
        self.property(
            "Permits",
            cases,
            &gen::permit_steps(wait),
            |(l, r, steps)| {
                let steps: Vec<String> = steps.iter().map(gen::Step::describe).collect();
                format!("Permits::new({l}, {r}), then {}", steps.join("; "))
            },
            move |(limit, reserved, steps)| permits_run(v, *limit, *reserved, steps),
        );
    }

    /// Random samples: the controller's limit after each is the model's.
    pub fn controller_agrees_with_model(&self, which: Adaptive, cases: u32) {
        let v = self.tested();
        match which {
            Adaptive::Aimd => self.property(
                "Aimd",
                cases,
                &gen::aimd(),
                |(p, s)| format!("{p:?}, samples {s:?}"),
                move |(p, samples)| {
                    let mut m = AimdModel::new(*p);
                    let c = (v.aimd)(*p).map_err(|e| format!("Aimd::new refused {p:?}: {e}"))?;
                    follow(c, samples, |s| {
                        let why = m.explain(s);
                        m.on_sample(s);
                        (m.limit, why)
                    })
                },
            ),
            Adaptive::Gradient => self.property(
                "Gradient",
                cases,
                &gen::gradient(),
                |(p, s)| format!("{p:?}, samples {s:?}"),
                move |(p, samples)| {
                    let mut m = GradientModel::new(*p);
                    let c = (v.gradient)(*p)
                        .map_err(|e| format!("Gradient::new refused {p:?}: {e}"))?;
                    follow(c, samples, |s| {
                        let why = m.explain(s);
                        m.on_sample(s);
                        (m.limit, why)
                    })
                },
            ),
        }
    }

    /// The simulation tier: the controller, setting the limit of the
    /// file's permits, against the server whose latency grows with load:
    /// into the contract's band, and back off when the server halves.
    pub fn converges(&self, which: Adaptive) {
        let v = self.tested();
        let (steps, bands) = self.watched("the simulation", move || simulate(v, which));
        if let Some(e) = adapt::outside(&steps, bands) {
            self.fail(
                &format!("{which:?} against a server whose latency grows with load"),
                &format!(
                    "{e}.\nThe server serves {} at once, {:?} each, and half as many from step \
                     {}; the controller is {}.\nThe limit, every ten steps:\n{}",
                    SERVER.capacity,
                    SERVER.base,
                    adapt::HALVES_AT,
                    match which {
                        Adaptive::Aimd => format!("{AIMD:?}"),
                        Adaptive::Gradient => format!("{GRADIENT:?}"),
                    },
                    adapt::draw(&steps)
                ),
            );
        }
    }

    /// The named script's drawing is the contract's, and its snapshot's.
    pub fn named_snapshot(&self, name: &str) {
        let s = named(name);
        let want = expected(&s);
        let span = until(&[&want]);
        let reference = self.reference();
        let contract = self.watched("the reference", {
            let s = s.clone();
            move || checked(reference, &s).map(|log| super::draw::draw(&s, &log.events, span))
        });
        let model = super::draw::draw(&s, &want, span);
        let v = self.tested();
        let tested = self.watched(name, {
            let s = s.clone();
            move || checked(v, &s).map(|log| super::draw::draw(&s, &log.events, span))
        });
        crate::snapshot::assert_snapshot(
            (self.facts.root, self.facts.number, name),
            &describe(&s),
            [&tested, &contract, &model],
            &self.whose(),
        );
    }

    /// The simulation's drawings and the table the text quotes, for the
    /// reference and the contract's controllers.
    pub fn adaptive_snapshot(&self) {
        let table = super::verdict::adaptive_table;
        let (v, r) = (self.tested(), self.reference());
        let reference = self.watched("the reference", move || table(r));
        let contract = self.watched("the model", super::verdict::model_table);
        // The lesson's text quotes the table: it must be what is measured
        // (a maintainer's check: a learner's copy of the text is theirs).
        if self.subject() != Subject::Learner {
            let text = format!(
                "{}/lessons/lesson_{:02}.md",
                self.facts.root, self.facts.number
            );
            let quoted = contract.split("\n\n").next().unwrap_or_default();
            let read = std::fs::read_to_string(&text).unwrap_or_default();
            assert!(
                read.contains(quoted.trim_end()),
                "{text} quotes a table of fixed and adaptive limits that is not what the \
                 simulation measures now:\n{quoted}"
            );
        }
        let tested = self.watched("the simulation", move || table(v));
        crate::snapshot::assert_snapshot(
            (self.facts.root, self.facts.number, "adaptive"),
            "fixed limits, AIMD and the gradient against the simulated server",
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    /// `cargo run -- compare 12 NAME`: the tested file's log and drawing
    /// beside the reference's.
    pub fn print_comparison(&self, which: &str) {
        let name = super::comparison(Some(which).filter(|w| !w.trim().is_empty()))
            .unwrap_or_else(|e| panic!("{e}"));
        if name == "adaptive" {
            let show = |v: InflightVariant| match watched(
                time_limit(),
                |_| String::new(),
                move || super::verdict::adaptive_table(v).map(|t| t + &super::verdict::bands(v)),
            ) {
                Ok(Ok(table)) | Ok(Err(table)) => table,
                Err(stop) => stop.text().to_string(),
            };
            return crate::trial::println(format_args!(
                "{}:\n{}\nthe reference:\n{}",
                self.whose(),
                show(self.tested()),
                show(self.reference())
            ));
        }
        let s = named(&name);
        let run = |v: InflightVariant| -> Result<Log, String> {
            let s2 = s.clone();
            match watched(
                time_limit(),
                |_| String::new(),
                move || run_script(&s2, &|u, c, i| build(v, u, c, i)),
            ) {
                Ok(log) => log,
                Err(stop) => Err(stop.text().to_string()),
            }
        };
        let (mine, theirs) = (run(self.tested()), run(self.reference()));
        let empty = vec![];
        let events = |r: &Result<Log, String>| r.as_ref().map_or(&empty, |l| &l.events).clone();
        let span = until(&[&events(&mine), &events(&theirs)]);
        let show = |r: &Result<Log, String>| match r {
            Ok(log) => format!(
                "{}\n{}{}",
                super::draw::draw(&s, &log.events, span),
                log.text(),
                match difference(&s, log) {
                    None => "keeps the contract".to_string(),
                    Some(e) => e.lines().take(2).collect::<Vec<_>>().join("\n"),
                }
            ),
            Err(e) => e.clone(),
        };
        crate::trial::println(format_args!(
            "script {name}: {}\n\n{}:\n{}\n\nthe reference:\n{}",
            describe(&s),
            self.whose(),
            show(&mine),
            show(&theirs)
        ));
    }

    /// Loom: one race on the permits, over every schedule.
    pub fn permits_race(&self, race: super::race::Race) {
        let v = self.tested();
        if let Err(e) =
            crate::scenarios::explore_with(format!("{race:?}"), move || race.breaks(v.permits_loom))
        {
            self.fail("Permits under loom", &e);
        }
    }

    /// The end-to-end checks, over a real axum server on loopback.
    pub fn end_to_end(&self, check: super::serve::Check) {
        let v = self.tested();
        self.watched("over loopback", move || super::serve::run(check, v));
    }
}
