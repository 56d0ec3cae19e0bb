//! The checks of the `bounded-limiter` kind (lesson 09).
//!
//! What a `Decision` can say is checked by the checks every lesson shares,
//! once per rule ([`BoundedLesson::rule`]), on a limiter with room for
//! every key that is swept each time the clock moves on: forgetting must
//! never change an answer. What it cannot say is checked here, step by step
//! against [`BoundedModel`]: the keys held, what a sweep forgets, the
//! overflow answers of a full store, the metrics, shadow mode, and a flood
//! of a million keys weighed in bytes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;

use super::drive::{Bounded, BoundedVariant, RuleKind};
use super::metrics::{expected_metrics, same_metrics, series, Metrics, Recorded};
use super::model::BoundedModel;
pub use super::races::Race;
use super::{metric, Bounds, Counting, Overflow, Rule};
use crate::checks::Lesson;
use crate::decision::{describe, ConfigError, Decision};
use crate::drive::{Implementations, Variant};
use crate::gen::{timelines, Shape};
use crate::models::Algorithm;
use crate::render::call;
use crate::run::{run_alone, run_cases};
use crate::snapshot::assert_snapshot;
use crate::subject::Subject;
use crate::time::{group_digits, Timestamp};
use crate::timeline::{parse_decisions, Request, Timeline};
use crate::watchdog::{progress, time_limit};

/// One implementation of lesson 09: the limiter itself, and the standard
/// variants the shared checks drive (one per [`RuleKind`]).
#[derive(Clone, Copy)]
pub struct BoundedImpl {
    pub bounded: BoundedVariant,
    pub rules: [Variant; 2],
}

/// Lesson 09 with the subject `KATA_SUBJECT` selects.
pub struct BoundedLesson {
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    pub limiter: &'static str,
    subject: Subject,
    implementations: Implementations<BoundedImpl>,
    rules: Vec<Lesson>,
}

/// One step of a case: a request, or a sweep at an instant.
#[derive(Clone, PartialEq, Eq)]
pub enum Step {
    Check(Request),
    Sweep(Timestamp),
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Check(r) => write!(f, "{r:?}"),
            Step::Sweep(at) => write!(f, "sweep@{}", at.as_nanos()),
        }
    }
}

impl Step {
    pub(crate) fn show(&self) -> String {
        match self {
            Step::Check(r) => call(&r.key, r.now),
            Step::Sweep(at) => format!("sweep({at})"),
        }
    }
}

/// A limiter's configuration and what is asked of it.
#[derive(Clone)]
pub struct Case {
    pub rule: Rule,
    pub bounds: Bounds,
    /// Asked through the shadow wrapper (swept through `Shadow::limiter`).
    pub shadow: bool,
    pub steps: Vec<Step>,
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.describe())?;
        for s in &self.steps {
            write!(f, " {s:?}")?;
        }
        Ok(())
    }
}

impl Case {
    fn describe(&self) -> String {
        let (limit, period) = self.rule.parts();
        let config = crate::timeline::Config::new(limit, period.as_nanos() as u64);
        format!(
            "{}; max_keys {}, overflow {:?}{}:",
            self.rule.algorithm().describe(&config),
            self.bounds.max_keys,
            self.bounds.overflow,
            if self.shadow { ", in shadow mode" } else { "" }
        )
    }
}

/// What one step showed.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Seen {
    answer: Answer,
    /// `keys_held()` after the step.
    held: usize,
    metrics: Metrics,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Answer {
    Decision(Decision),
    Swept(usize),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Decision(d) => f.write_str(&describe(d)),
            Answer::Swept(n) => write!(f, "forgot {n} key{}", if *n == 1 { "" } else { "s" }),
        }
    }
}

/// The flood: this many distinct keys, through a store of [`FLOOD_KEYS`].
const FLOOD: usize = 1_000_000;
const FLOOD_KEYS: usize = 10_000;
/// The bytes a held key may cost, at most, in the flood.
const BYTES_PER_KEY: usize = 1024;
/// Set in the child process that runs a flood alone.
const FLOOD_PROBE: &str = "KATA_FLOOD_PROBE";

impl BoundedLesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        limiter: &'static str,
        _algorithm: Algorithm,
        implementations: Implementations<BoundedImpl>,
    ) -> BoundedLesson {
        let subject = implementations.subject_from_env(root);
        let rules = RuleKind::ALL
            .iter()
            .enumerate()
            .map(|(i, kind)| {
                Lesson::new(
                    root,
                    number,
                    title,
                    limiter,
                    kind.rule(1, Duration::from_nanos(1)).algorithm(),
                    implementations.map(|v| v.rules[i]),
                )
                .on_one_clock()
                .titled(crate::checks::leak(format!(
                    "{title}: {}, swept whenever the clock moves on",
                    kind.name()
                )))
            })
            .collect();
        BoundedLesson {
            root,
            number,
            title,
            limiter,
            subject,
            implementations,
            rules,
        }
    }

    /// The checks every lesson shares, for one rule.
    pub fn rule(&self, kind: RuleKind) -> &Lesson {
        &self.rules[kind as usize]
    }

    fn tested(&self) -> BoundedVariant {
        self.implementations.pick(self.subject).bounded
    }

    fn whose(&self) -> String {
        format!("{} ({})", self.subject, self.tested().file)
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!(
            "lesson {:02} ({}): {what} fails for {}.\n{message}",
            self.number,
            self.title,
            self.whose()
        )
    }

    // ---------------------------------------------------------------- examples

    /// An example: steps as `key@nanos` (a request) or `sweep@nanos`, and
    /// what each gives: `+remaining` / `-retry_after_nanos` for a request,
    /// `=n` for a sweep that forgot n keys. The model must agree with the
    /// table before the subject is judged by it.
    pub fn example(
        &self,
        kind: RuleKind,
        (limit, period_nanos): (u64, u64),
        (max_keys, overflow): (usize, Overflow),
        steps: &str,
        expected: &str,
    ) {
        let case = Case {
            rule: kind.rule(limit, Duration::from_nanos(period_nanos)),
            bounds: Bounds::new("example", max_keys, overflow),
            shadow: false,
            steps: parse_steps(steps).unwrap_or_else(|e| panic!("bad example: {e}")),
        };
        let expected = parse_answers(expected).unwrap_or_else(|e| panic!("bad example: {e}"));
        assert_eq!(
            case.steps.len(),
            expected.len(),
            "bad example: one answer per step"
        );
        let model = model_run(&case);
        let contract: Vec<Answer> = model.iter().map(|s| s.answer).collect();
        assert_eq!(
            contract, expected,
            "bad example: the kata's model disagrees with the table"
        );
        if let Err(e) = self.compare(&case, &model) {
            self.fail("an example", format!("{case:?}\n\n{e}"));
        }
    }

    // ----------------------------------------------------------- configuration

    /// `max_keys: 0` is `ZeroKeys`, after the rule's own errors.
    pub fn refuses_zero_keys(&self) {
        let v = self.tested();
        let cases = [
            (
                Rule::TokenBucket {
                    capacity: 3,
                    refill_every: Duration::from_secs(1),
                },
                0,
                Err(ConfigError::ZeroKeys),
            ),
            (
                Rule::FixedWindow {
                    limit: 0,
                    window: Duration::from_secs(1),
                },
                0,
                Err(ConfigError::ZeroLimit),
            ),
            (
                Rule::FixedWindow {
                    limit: 1,
                    window: Duration::ZERO,
                },
                0,
                Err(ConfigError::ZeroPeriod),
            ),
            (
                Rule::FixedWindow {
                    limit: 1,
                    window: Duration::from_secs(1),
                },
                1,
                Ok(()),
            ),
        ];
        for (rule, max_keys, want) in cases {
            let bounds = Bounds::new("p", max_keys, Overflow::Deny);
            let got = (v.build)(rule, bounds.clone()).map(|_| ());
            if got != want {
                self.fail(
                    "the configuration check",
                    format!(
                        "new({rule:?}, {bounds:?}) returned {got:?}; the contract says {want:?}: \
                         the rule's errors first, in lesson 01's order, then ZeroKeys"
                    ),
                );
            }
            let shadow = (v.shadow)(rule, bounds.clone()).map(|_| ());
            if shadow != want {
                self.fail(
                    "the configuration check",
                    format!(
                        "the shadow wrapper over new({rule:?}, {bounds:?}) returned {shadow:?}; \
                         the contract says {want:?}"
                    ),
                );
            }
        }
    }

    // -------------------------------------------------------------- properties

    /// Step by step against the model, on timelines with late requests
    /// over three keys, stores of 1 to 3 keys (mostly 1 or 2, so that they
    /// fill), both overflow answers, and sweeps never, whenever the clock
    /// moves on, before every other request, or half a period ahead of
    /// every third request (so that the requests after it are late): each
    /// answer, `keys_held()` and every metric after every step.
    pub fn agrees_with_model_under_a_bound(&self, kind: RuleKind) {
        let strategy = (
            prop_oneof![exact(kind, Shape::InOrder), exact(kind, Shape::OutOfOrder)],
            small_stores(),
            any::<bool>(),
            0u8..4,
        )
            .prop_map(move |(t, max_keys, admit, sweeps)| {
                let steps = with_sweeps(kind, &t, sweeps);
                Case {
                    rule: kind.rule(t.config.limit, t.config.period),
                    bounds: Bounds::new("api", max_keys, overflow(admit)),
                    shadow: false,
                    steps,
                }
            });
        self.property(
            &format!("agrees with the model under a bound ({})", kind.name()),
            &strategy,
        );
    }

    /// A sweep one nanosecond before, at, or after the instant a key's
    /// state becomes a fresh key's, then a request of that key at the same
    /// instant: forgetting it a nanosecond early hands it a fresh quota,
    /// keeping it after that instant keeps a key the contract forgets.
    pub fn forgets_a_key_exactly_when_it_is_fresh(&self, kind: RuleKind) {
        let strategy = (
            exact(kind, Shape::InOrder),
            any::<prop::sample::Index>(),
            -1i8..=1,
        )
            .prop_map(move |(t, at, offset)| {
                let t = t.on_one_clock();
                let rule = kind.rule(t.config.limit, t.config.period);
                let bounds = Bounds::new("api", 1 << 20, Overflow::Deny);
                let n = at.index(t.requests.len().max(1)).min(t.requests.len());
                let mut steps: Vec<Step> =
                    t.requests[..n].iter().cloned().map(Step::Check).collect();
                let mut model = BoundedModel::new(rule, bounds.clone());
                for r in &t.requests[..n] {
                    model.decide(&r.key, r.now.as_nanos());
                }
                // The last request's key, or "a" on an empty timeline.
                let key = t.requests[..n].last().map_or("a", |r| r.key.as_str());
                let fresh = model.fresh_from(key).unwrap_or(u128::from(model.clock()));
                let probe = (fresh as i128 + i128::from(offset))
                    .clamp(i128::from(model.clock()), i128::from(u64::MAX))
                    as u64;
                steps.push(Step::Sweep(Timestamp::from_nanos(probe)));
                steps.push(Step::Check(Request::new(key, probe)));
                Case {
                    rule,
                    bounds,
                    shadow: false,
                    steps,
                }
            });
        self.property(
            &format!("forgets a key exactly when it is fresh ({})", kind.name()),
            &strategy,
        );
    }

    /// The shadow wrapper never denies: what the limit would deny is
    /// allowed with nothing remaining and counted as shadowed.
    pub fn shadow_never_denies(&self, kind: RuleKind) {
        let strategy = (exact(kind, Shape::InOrder), small_stores(), any::<bool>()).prop_map(
            move |(t, max_keys, admit)| {
                // Swept whenever the clock moves on, through its limiter.
                let steps = with_sweeps(kind, &t, 1);
                Case {
                    rule: kind.rule(t.config.limit, t.config.period),
                    bounds: Bounds::new("next", max_keys, overflow(admit)),
                    shadow: true,
                    steps,
                }
            },
        );
        self.property(
            &format!("shadow mode never denies ({})", kind.name()),
            &strategy,
        );
    }

    fn property(&self, name: &str, strategy: &impl Strategy<Value = Case>) {
        let v = self.tested();
        let cases = 128;
        let result = run_cases(self.subject, cases, 2048, strategy, nth_step, move |case| {
            compare_run(v, case)
        });
        if let Err(failed) = result {
            self.fail(
                &format!("property \"{name}\""),
                format!(
                    "{}: {:?}\n\n{}",
                    if failed.hung {
                        "case (not shrunk: it hung)"
                    } else {
                        "minimal case"
                    },
                    failed.value,
                    failed.reason
                ),
            );
        }
    }

    fn compare(&self, case: &Case, model: &[Seen]) -> Result<(), String> {
        let v = self.tested();
        let case = case.clone();
        let got = crate::watchdog::watched(
            time_limit(),
            {
                let case = case.clone();
                move |i| nth_step(&case, i)
            },
            move || subject_run(v, &case),
        );
        match got {
            Ok(Ok(got)) => judge(model, &got),
            Ok(Err(e)) => Err(e),
            Err(stop) => Err(stop.text().to_string()),
        }
    }

    // ------------------------------------------------------------------ races

    /// Explores a race under loom: the answers, the sweeps' counts and the
    /// keys held at the end must be those of some one-at-a-time order of the
    /// same calls.
    pub fn race(&self, race: Race) {
        let v = self.tested();
        let header = format!("loom scenario \"{}\" ({}; {})", race.name, race.what, {
            let mut c = race.case(vec![]);
            c.steps.clear();
            c.describe()
        });
        let r = race.clone();
        if let Err(e) = crate::scenarios::explore_with(header, move || r.breaks(v.build_loom)) {
            self.fail(&format!("the race \"{}\"", race.name), e);
        }
    }

    // ------------------------------------------------------------------ flood

    /// A million distinct keys, through a store of 10_000, while ten keys
    /// keep calling: at no step more than 10_000 keys held, every answer
    /// the contract's, and the bytes the limiter holds at the end at most
    /// 1 KiB per key of the bound. Runs alone in a child process (bytes are
    /// counted for the whole process) that is stopped after a while: a
    /// store that scans every key on every call takes hours here.
    pub fn holds_at_most_max_keys_under_a_flood(&self, kind: RuleKind, test: &str) {
        if std::env::var_os(FLOOD_PROBE).is_some() {
            // Every line of the verdict carries the probe's name, for the
            // parent to find among libtest's.
            let (verdict, text) = match self.flood(kind) {
                Ok(line) => ("passed", line),
                Err(e) => ("failed", e),
            };
            for line in text.lines() {
                println!("{FLOOD_PROBE} {verdict} {line}");
            }
            return;
        }
        let limit = time_limit() * 2;
        let (out, stopped) = run_alone(test, FLOOD_PROBE, limit);
        // libtest prints the test's name and its output on one line.
        let said = |verdict: &str| -> Vec<&str> {
            out.lines()
                .filter_map(|l| l.split_once(FLOOD_PROBE))
                .filter_map(|(_, rest)| rest.trim_start().strip_prefix(verdict))
                .map(str::trim_start)
                .collect()
        };
        let failed = said("failed");
        match (stopped, said("passed").is_empty()) {
            _ if !failed.is_empty() => {
                self.fail(&format!("the flood ({})", kind.name()), failed.join("\n"))
            }
            (false, false) => {}
            (true, _) => {
                let reached = said("progress")
                    .last()
                    .map_or("it stopped before its first request".to_string(), |p| {
                        format!("it had reached request {p}")
                    });
                self.fail(
                    &format!("the flood ({})", kind.name()),
                    format!(
                        "{} distinct keys through a store of {} did not finish within {} s (a \
                         correct limiter takes a few seconds); {reached}. Either a call looks at \
                         every held key (find the keys that can be forgotten in order of the \
                         instant each becomes fresh, a BTreeMap or a heap keyed by that \
                         instant, so that a call looks only at those it forgets), or a call \
                         never returns (a lock taken twice, a loop that does not end).",
                        group_digits(FLOOD as u128),
                        group_digits(FLOOD_KEYS as u128),
                        limit.as_secs(),
                    ),
                )
            }
            (false, true) => self.fail(
                &format!("the flood ({})", kind.name()),
                out.lines()
                    .filter(|l| {
                        let l = l.trim();
                        !(l.is_empty()
                            || l == "running 1 test"
                            || l == "failures:"
                            || l.starts_with("test result:"))
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }

    /// The flood itself (in the child process).
    fn flood(&self, kind: RuleKind) -> Result<String, String> {
        assert!(
            Counting::held() > 0,
            "the test binary must install kata::memory::Counting as its global allocator"
        );
        let period = Duration::from_millis(1);
        let rule = kind.rule(2, period);
        let over = match kind {
            RuleKind::FixedWindow => Overflow::Admit,
            RuleKind::TokenBucket => Overflow::Deny,
        };
        let bounds = Bounds::new("flood", FLOOD_KEYS, over);
        let step_of = |i: usize| -> Request {
            // 20_000 new keys per period, twice what the store holds; one
            // of ten steady keys every hundredth step.
            let now = i as u64 * 50;
            if i.is_multiple_of(100) {
                Request::new(&format!("steady-{}", i / 100 % 10), now)
            } else {
                Request::new(&format!("flood-{i}"), now)
            }
        };
        let total = FLOOD + FLOOD / 99;
        // The contract's answers first, so that the bytes counted below are
        // the limiter's alone.
        let mut want: Vec<(Decision, u32)> = Vec::with_capacity(total);
        {
            let mut model = BoundedModel::new(rule, bounds.clone());
            for i in 0..total {
                let r = step_of(i);
                let d = model.check(&r.key, r.now.as_nanos(), false);
                want.push((d, model.held() as u32));
            }
        }
        let before = Counting::held();
        let limiter = (self.tested().build)(rule, bounds).map_err(|e| e.to_string())?;
        let mut most = 0;
        for (i, (d, held)) in want.iter().enumerate() {
            if i % 100_000 == 0 {
                // Read by the parent if this run is stopped.
                println!("{FLOOD_PROBE} progress {i} of {}", want.len());
            }
            let r = step_of(i);
            let got = limiter.check(&r.key, r.now);
            let got_held = limiter.keys_held();
            most = most.max(got_held);
            if got != *d || got_held != *held as usize {
                return Err(format!(
                    "{} distinct keys through a store of {} ({}, max_keys {}, overflow {over:?}; \
                     new keys arrive every 50ns, 20_000 per period, and ten steady keys call \
                     every 100th step). At step #{}, {}: yours answered {} and holds {got_held} \
                     keys; the contract answers {} and holds {held}.",
                    group_digits(FLOOD as u128),
                    group_digits(FLOOD_KEYS as u128),
                    kind_algorithm(kind).describe(&crate::timeline::Config::new(2, 1_000_000)),
                    FLOOD_KEYS,
                    i + 1,
                    call(&r.key, r.now),
                    describe(&got),
                    describe(d),
                ));
            }
        }
        let bytes = Counting::held().saturating_sub(before);
        let budget = FLOOD_KEYS * BYTES_PER_KEY;
        if bytes > budget {
            return Err(format!(
                "after {} distinct keys through a store of {}, the limiter holds {} bytes ({} per \
                 key of the bound), more than the {} bytes (1 KiB per key) the check allows: \
                 something grows with the keys seen, not the keys held (a map that is never \
                 shrunk, an index of expired entries never cleaned up).",
                group_digits(FLOOD as u128),
                group_digits(FLOOD_KEYS as u128),
                group_digits(bytes as u128),
                group_digits((bytes / FLOOD_KEYS) as u128),
                group_digits(budget as u128)
            ));
        }
        Ok(format!(
            "most keys held {most}, {} bytes held, {} per key",
            group_digits(bytes as u128),
            bytes / most.max(1)
        ))
    }

    // --------------------------------------------------------------- snapshot

    /// A store of three keys under pressure, drawn step by step: each answer,
    /// the keys held, and the metrics.
    pub fn store_snapshot(&self) {
        let case = pressure_case();
        let draw = |seen: &[Seen]| draw(&case, seen);
        let contract = draw(&model_run(&case));
        let run = |v: BoundedVariant| {
            let c = case.clone();
            match crate::watchdog::watched(
                time_limit(),
                |_| String::new(),
                move || subject_run(v, &c),
            ) {
                Ok(Ok(seen)) => draw(&seen),
                Ok(Err(e)) => self.fail("the store's drawing", e),
                Err(stop) => self.fail("the store's drawing", stop.text().to_string()),
            }
        };
        let reference = run(self.implementations.reference.bounded);
        let tested = run(self.tested());
        assert_snapshot(
            (self.root, self.number, "store_under_pressure"),
            &format!("{case:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    /// `cargo run -- compare 9 [STEPS]`: the store's drawing of the worked
    /// example (or of STEPS, such as `"a@0 b@0 sweep@1000 c@1000"`, on the
    /// same limiter), yours and the reference's, line by line, the first
    /// difference marked. Panics, after the drawings, when they differ.
    pub fn print_comparison(&self, which: &str) {
        let which = which.trim();
        let mut case = pressure_case();
        if which == "store_under_pressure" {
            // The snapshot's name: the worked example.
        } else if !which.is_empty() && parse_steps(which).is_err() {
            // A timeline as the checks every lesson shares print it: each
            // rule's answers on a limiter swept as those checks sweep it.
            for kind in RuleKind::ALL {
                println!("== {}, swept whenever the clock moves on", kind.name());
                self.rule(kind).print_comparison(which);
            }
            return;
        } else if !which.is_empty() {
            case.steps = parse_steps(which).unwrap_or_else(|e| {
                panic!(
                    "{e}\n(steps are `key@nanos` or `sweep@nanos`, such as \"a@0 b@0 sweep@1000\")"
                )
            });
        }
        let run = |v: BoundedVariant| {
            let c = case.clone();
            match crate::watchdog::watched(
                time_limit(),
                |_| String::new(),
                move || subject_run(v, &c),
            ) {
                Ok(Ok(seen)) => draw(&case, &seen),
                Ok(Err(e)) => format!("(no drawing: {e})"),
                Err(stop) => format!("(no drawing: {})", stop.text()),
            }
        };
        let (yours, theirs) = (
            run(self.tested()),
            run(self.implementations.reference.bounded),
        );
        println!(
            "yours ({}):\n{yours}\nthe reference's:\n{theirs}",
            self.tested().file
        );
        let first = yours.lines().zip(theirs.lines()).position(|(a, b)| a != b);
        match first {
            None if yours == theirs => println!("no difference on these steps."),
            _ => {
                let line = first.unwrap_or(yours.lines().count().min(theirs.lines().count()));
                panic!(
                    "the first difference is on line {} of the drawings:\n  yours:           {}\n  the reference's: {}",
                    line + 1,
                    yours.lines().nth(line).unwrap_or("(nothing)"),
                    theirs.lines().nth(line).unwrap_or("(nothing)")
                )
            }
        }
    }

    // ----------------------------------------------------------------- source

    pub fn uses_only_its_inputs(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_its_inputs();
    }
}

/// Timelines whose every answer the contract fixes exactly (where `now +
/// C·T`, or `now + 2·W`, fits in u64): beyond, the checks every lesson
/// shares judge only that nothing panics and no wait is zero.
fn exact(kind: RuleKind, shape: Shape) -> impl Strategy<Value = Timeline> {
    let algorithm = kind_algorithm(kind);
    timelines(algorithm, shape).prop_filter("answers the contract fixes exactly", move |t| {
        t.requests
            .iter()
            .all(|r| algorithm.exact_at(&t.config, r.now.as_nanos()))
    })
}

/// A timeline's requests with sweeps among them: never (0), whenever the
/// clock moves on (1), before every other request (2), or half a period
/// ahead of every third request, where the arithmetic stays exact (3).
fn with_sweeps(kind: RuleKind, t: &Timeline, mode: u8) -> Vec<Step> {
    let algorithm = kind_algorithm(kind);
    let half = t.config.period_nanos() / 2 + 1;
    let mut steps = Vec::new();
    let mut last = None;
    for (i, r) in t.requests.iter().enumerate() {
        let at = r.now.as_nanos();
        let sweep = match mode {
            1 => (last != Some(r.now)).then_some(at),
            2 => (i % 2 == 1).then_some(at),
            3 => (i % 3 == 0)
                .then(|| at.saturating_add(half))
                .filter(|ahead| algorithm.exact_at(&t.config, *ahead)),
            _ => None,
        };
        if let Some(at) = sweep {
            steps.push(Step::Sweep(Timestamp::from_nanos(at)));
        }
        last = Some(r.now);
        steps.push(Step::Check(r.clone()));
    }
    steps
}

/// `max_keys` for timelines of three keys: mostly stores that fill.
fn small_stores() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 1usize..=2, 1 => Just(3usize)]
}

/// The worked example of the lesson text, drawn by the snapshot.
fn pressure_case() -> Case {
    Case {
        rule: Rule::TokenBucket {
            capacity: 2,
            refill_every: Duration::from_nanos(1_000),
        },
        bounds: Bounds::new("api", 3, Overflow::Deny),
        shadow: false,
        steps: parse_steps(
            "a@0 b@0 c@0 a@0 a@0 d@500 sweep@1000 d@1000 e@1000 a@1500 sweep@2000 e@2000 \
             f@2000 g@2500 sweep@3000 g@3000",
        )
        .expect("a valid timeline"),
    }
}

fn kind_algorithm(kind: RuleKind) -> Algorithm {
    kind.rule(1, Duration::from_nanos(1)).algorithm()
}

fn overflow(admit: bool) -> Overflow {
    if admit {
        Overflow::Admit
    } else {
        Overflow::Deny
    }
}

fn nth_step(case: &Case, i: usize) -> String {
    match case.steps.get(i) {
        Some(s) => format!("step #{}, {}", i + 1, s.show()),
        None => format!("step #{}", i + 1),
    }
}

/// Steps in timeline notation, with `sweep@nanos` among the requests.
pub fn parse_steps(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for token in text.split_whitespace() {
        if let Some(at) = token.strip_prefix("sweep@") {
            let at: u64 = at
                .replace('_', "")
                .parse()
                .map_err(|_| format!("{token:?}: the instant of a sweep is whole nanoseconds"))?;
            steps.push(Step::Sweep(Timestamp::from_nanos(at)));
        } else {
            let t = Timeline::parse(crate::timeline::Config::new(1, 1), token)?;
            steps.extend(t.requests.into_iter().map(Step::Check));
        }
    }
    Ok(steps)
}

/// Answers in the kata's notation, `=n` for a sweep that forgot n keys.
fn parse_answers(text: &str) -> Result<Vec<Answer>, String> {
    text.split_whitespace()
        .map(|token| match token.strip_prefix('=') {
            Some(n) => n
                .parse()
                .map(Answer::Swept)
                .map_err(|_| format!("{token:?}: a sweep's answer is =n")),
            None => parse_decisions(token).map(|d| Answer::Decision(d[0])),
        })
        .collect()
}

/// The contract's answers to a case, step by step.
fn model_run(case: &Case) -> Vec<Seen> {
    let mut model = BoundedModel::new(case.rule, case.bounds.clone());
    case.steps
        .iter()
        .map(|s| {
            let answer = match s {
                Step::Check(r) => {
                    Answer::Decision(model.check(&r.key, r.now.as_nanos(), case.shadow))
                }
                Step::Sweep(at) => Answer::Swept(model.sweep(at.as_nanos())),
            };
            Seen {
                answer,
                held: model.held(),
                metrics: expected_metrics(&case.bounds.policy, &model.counts),
            }
        })
        .collect()
}

/// A subject's answers to a case, step by step, with its metrics read by a
/// recorder of the run's own.
fn subject_run(v: BoundedVariant, case: &Case) -> Result<Vec<Seen>, String> {
    let recorder = Recorded::default();
    metrics::with_local_recorder(&recorder, || {
        let built = if case.shadow {
            (v.shadow)(case.rule, case.bounds.clone())
        } else {
            (v.build)(case.rule, case.bounds.clone())
        };
        let subject: Arc<dyn Bounded> = built.map_err(|e| {
            format!(
                "new({:?}, {:?}) returned Err({e:?}) for a valid configuration",
                case.rule, case.bounds
            )
        })?;
        let mut seen = Vec::with_capacity(case.steps.len());
        for (i, s) in case.steps.iter().enumerate() {
            progress(i);
            let answer = match s {
                Step::Check(r) => Answer::Decision(subject.check(&r.key, r.now)),
                Step::Sweep(at) => Answer::Swept(subject.sweep(*at)),
            };
            seen.push(Seen {
                answer,
                held: subject.keys_held(),
                metrics: recorder.read(),
            });
        }
        Ok(seen)
    })
}

fn compare_run(v: BoundedVariant, case: &Case) -> Result<(), String> {
    judge(&model_run(case), &subject_run(v, case)?)
        .map_err(|e| format!("{}\n\n{e}", show_case(case)))
}

fn show_case(case: &Case) -> String {
    let mut out = case.describe();
    for (i, s) in case.steps.iter().enumerate() {
        out.push_str(&format!("\n  #{:<3} {}", i + 1, s.show()));
    }
    out
}

/// The first step where the subject shows something else than the model.
fn judge(want: &[Seen], got: &[Seen]) -> Result<(), String> {
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        if w.answer != g.answer {
            return Err(format!(
                "step #{}: yours answered {}; the contract says {}.",
                i + 1,
                g.answer,
                w.answer
            ));
        }
        if w.held != g.held {
            return Err(format!(
                "step #{} answered as the contract says, but then keys_held() is {}; the \
                 contract holds {} (a key is forgotten by a sweep, or to make room for a new \
                 key in a full store, exactly when its state has become a fresh key's).",
                i + 1,
                g.held,
                w.held
            ));
        }
        if let Err(e) = same_metrics(&w.metrics, &g.metrics) {
            return Err(format!("after step #{}: {e}", i + 1));
        }
    }
    Ok(())
}

// ------------------------------------------------------------------ drawing

fn draw(case: &Case, seen: &[Seen]) -> String {
    let mut out = format!("{}\n", case.describe());
    out.push_str("step                      answer                              held  metrics\n");
    for (s, v) in case.steps.iter().zip(seen) {
        let m = &v.metrics;
        let read = |name: &str, extra: Option<(&str, &str)>| {
            let mut labels = vec![(metric::POLICY, case.bounds.policy.as_str())];
            labels.extend(extra);
            m.get(&series(name, &labels))
                .map_or(0.0, |b| f64::from_bits(b.0))
        };
        out.push_str(&format!(
            "{:<25} {:<35} {:>4}  allowed {} denied {} evicted {} overflow {} keys {}\n",
            s.show(),
            v.answer.to_string(),
            v.held,
            read(metric::DECISIONS, Some((metric::OUTCOME, metric::ALLOWED))),
            read(metric::DECISIONS, Some((metric::OUTCOME, metric::DENIED))),
            read(metric::EVICTIONS, None),
            read(metric::OVERFLOWS, None),
            read(metric::KEYS, None),
        ));
    }
    out
}
