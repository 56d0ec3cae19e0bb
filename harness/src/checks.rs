//! The checks every lesson runs, written once. A lesson's test file names its
//! cases; everything here is generic over the lesson's algorithm and subjects.

use std::sync::Arc;
use std::time::Duration;

use proptest::strategy::Strategy;
use proptest::test_runner::TestError;

use crate::decision::{describe, ConfigError, Decision};
use crate::drive::{Implementations, Variant};
use crate::gen::{timelines, Shape};
use crate::models::{model_run, Algorithm};
use crate::render::{call, first_difference, render, render_compare};
use crate::run::{nth_request, run_alone, run_cases};
use crate::snapshot::assert_snapshot;
use crate::subject::Subject;
use crate::time::Timestamp;
use crate::timeline::{parse_decisions, Config, Timeline};
use crate::watchdog::{progress, time_limit, watched, Stop};

/// Everything a check needs, cheap to copy onto a watched thread.
#[derive(Clone, Copy)]
struct Ctx {
    algorithm: Algorithm,
    subject: Subject,
    tested: Variant,
    reference: Variant,
    baseline: Option<Variant>,
}

/// A lesson's implementations and which of them is under test.
pub struct Lesson {
    /// The folder of the package whose tests these are (snapshots live in
    /// its `tests/snapshots`).
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    /// The learner-facing type, for messages (`ConcurrentFixedWindow`).
    pub limiter: &'static str,
    pub algorithm: Algorithm,
    subject: Subject,
    implementations: Implementations,
    /// Each property runs its number of cases divided by this (at least
    /// 4): 1, or more for subjects whose every call crosses a socket.
    divisor: u32,
    /// Whether the subject keeps one clock for all its keys (lesson 09):
    /// its properties then draw timelines whose instants never go back.
    one_clock: bool,
}

/// A text made once for the life of the test binary (a lesson's title for
/// one of its rules).
pub fn leak(text: String) -> &'static str {
    Box::leak(text.into_boxed_str())
}

impl Lesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        limiter: &'static str,
        algorithm: Algorithm,
        implementations: Implementations,
    ) -> Lesson {
        let subject = implementations.subject_from_env(root);
        Lesson {
            root,
            number,
            title,
            limiter,
            algorithm,
            subject,
            implementations,
            divisor: 1,
            one_clock: false,
        }
    }

    /// The same lesson under another title (in every failure's first line).
    pub fn titled(mut self, title: &'static str) -> Lesson {
        self.title = title;
        self
    }

    /// The same lesson for a subject that answers every call at the latest
    /// instant it was given, whatever the key (lesson 09): every generated
    /// timeline is put on one clock ([`Timeline::on_one_clock`]).
    pub fn on_one_clock(mut self) -> Lesson {
        self.one_clock = true;
        self
    }

    /// The same lesson with each property's cases divided by `divisor`.
    pub fn with_fewer_cases(mut self, divisor: u32) -> Lesson {
        self.divisor = divisor.max(1);
        self
    }

    /// The subject under test (`KATA_SUBJECT`; an invalid one stops the
    /// test binary when the lesson is first built).
    pub fn subject(&self) -> Subject {
        self.subject
    }

    /// The implementation under test.
    pub fn tested(&self) -> Variant {
        self.implementations.pick(self.subject())
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            algorithm: self.algorithm,
            subject: self.subject(),
            tested: self.tested(),
            reference: self.implementations.reference,
            baseline: self.implementations.baseline.map(|(_, v)| v),
        }
    }

    /// Where failures should send the learner.
    fn whose(&self) -> String {
        format!("{} ({})", self.subject(), self.tested().path())
    }

    // ---------------------------------------------------------------- examples

    /// An example: the requests in timeline notation and the decisions the
    /// contract gives them (`+remaining` / `-retry_after_nanos`). The harness's
    /// model must agree with the table before the subject is judged by it.
    pub fn example(&self, limit: u64, period_nanos: u64, requests: &str, expected: &str) {
        let config = Config::new(limit, period_nanos);
        let timeline =
            Timeline::parse(config, requests).unwrap_or_else(|e| panic!("bad example: {e}"));
        let expected = parse_decisions(expected).unwrap_or_else(|e| panic!("bad example: {e}"));
        assert_eq!(
            timeline.requests.len(),
            expected.len(),
            "bad example: one decision per request"
        );
        assert!(
            timeline.in_order(),
            "bad example: the contract fixes exact answers only for requests that are not late \
             for their key; late requests are checked by the properties"
        );
        let modelled = model_run(self.algorithm, &timeline);
        if let Some(i) = first_difference(&modelled, &expected) {
            panic!(
                "this example's table contradicts the kata's model at request #{} (a bug in the tests, not in your code):\n{}",
                i + 1,
                render_compare(self.algorithm, &timeline, ("model", "table"), &modelled, &expected, Some(i))
            );
        }
        let tested = self.tested();
        let got = self.unwrap(&timeline, run_watched(tested, &timeline));
        if let Some(i) = first_difference(&got, &expected) {
            panic!(
                "{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                divergence(&timeline, i, &self.whose(), &got, "the contract", &expected),
                render_compare(
                    self.algorithm,
                    &timeline,
                    ("yours", "expected"),
                    &got,
                    &expected,
                    Some(i)
                ),
                replay(self.number, &timeline)
            );
        }
    }

    /// A constructor case: `new(limit, period)` must give `windowed` in the
    /// windowed lessons and `bucket` in the token buckets.
    pub fn config(
        &self,
        limit: u64,
        period: Duration,
        windowed: Result<(), ConfigError>,
        bucket: Result<(), ConfigError>,
    ) {
        let expected = if self.algorithm.windowed() {
            windowed
        } else {
            bucket
        };
        assert_eq!(
            self.algorithm.validate(limit, period),
            expected,
            "bad config case: the contract says otherwise"
        );
        let build = self.tested().build;
        let shown = format!("{}::new({limit}, {period:?})", self.limiter);
        // The constructor and the first call are watched apart, so that a
        // failure names the one that failed.
        let built = watched(
            time_limit(),
            |_| String::new(),
            move || build(limit, period),
        );
        let got = match built {
            Err(stop) => Err(stop),
            Ok(Err(e)) => Ok(Err(e)),
            Ok(Ok(mut limiter)) => {
                match watched(
                    time_limit(),
                    |_| String::new(),
                    move || limiter.check("key", Timestamp::ZERO),
                ) {
                    Ok(first) => Ok(Ok(first)),
                    Err(stop) => panic!(
                        "{}: the first check(\"key\", 0ns) after {shown} {}",
                        self.subject(),
                        stop.text()
                    ),
                }
            }
        };
        match (got, expected) {
            (Err(stop), _) => panic!("{shown} {}", stop.text()),
            (Ok(Ok(first)), Ok(())) => {
                let want = Decision::Allowed { remaining: limit - 1 };
                assert!(
                    first == want,
                    "{shown} built a limiter, but its first request was {}; a fresh key must be {}",
                    describe(&first),
                    describe(&want)
                );
            }
            (Ok(Ok(_)), Err(e)) => panic!(
                "{shown} returned Ok, but this configuration must be rejected with ConfigError::{e:?}: {e}"
            ),
            (Ok(Err(got)), Ok(())) => {
                panic!("{shown} returned Err(ConfigError::{got:?}), but this configuration is valid")
            }
            (Ok(Err(got)), Err(e)) => assert!(
                got == e,
                "{shown} returned Err(ConfigError::{got:?}), but the contract checks in order \
                 (zero limit, zero period, too large) and this one is ConfigError::{e:?}: {e}"
            ),
        }
    }

    /// Every limit from {0, 1, 2, 2^32 + 1, u64::MAX} with every period from
    /// {0, 1 ns, 1 s, u64::MAX / 2 ns and one more, u64::MAX ns and one more}:
    /// each fault at its edge, alone and with every other fault it can occur
    /// with, judged by the contract's order of checks.
    pub fn config_grid(&self) {
        let max = Duration::from_nanos(u64::MAX);
        let one = Duration::from_nanos(1);
        let limits = [0, 1, 2, (1u64 << 32) + 1, u64::MAX];
        let periods = [
            Duration::ZERO,
            one,
            Duration::from_secs(1),
            Duration::from_nanos(u64::MAX / 2),
            Duration::from_nanos(u64::MAX / 2 + 1),
            max,
            max + one,
        ];
        for limit in limits {
            for period in periods {
                let expected = self.algorithm.validate(limit, period);
                self.config(limit, period, expected, expected);
            }
        }
    }

    fn unwrap<T>(&self, timeline: &Timeline, r: Result<T, Stop>) -> T {
        r.unwrap_or_else(|stop| panic!("{} {}\ntimeline: {timeline:?}", self.whose(), stop.text()))
    }

    // --------------------------------------------------------------- snapshots

    /// One of the standard timelines, drawn and compared with its snapshot.
    pub fn standard_snapshot(&self, name: &str) {
        let s = crate::timeline::Standard::named(name)
            .unwrap_or_else(|| panic!("no standard timeline is named {name:?}"));
        self.snapshot(s.name, s.limit, s.period, s.requests);
    }

    /// Prints the subject's and the reference's answers to a timeline side by
    /// side, the first difference marked. `which` is a standard timeline's
    /// name, a whole timeline as failures print it (`L=1 W=2ns: b@3 b@3`), or
    /// requests alone (run with limit 3 and period 1_000 ns). Panics with the
    /// list of names otherwise, and when the subject panics or hangs, after
    /// the table of its answers up to that request.
    pub fn print_comparison(&self, which: &str) {
        let which = if which.trim().is_empty() {
            DEFAULT_COMPARISON
        } else {
            which
        };
        let timeline = crate::timeline::Standard::resolve(which).unwrap_or_else(|e| panic!("{e}"));
        match crate::timeline::Standard::named(which) {
            Some(s) => println!("{}: {}\n", s.name, s.about),
            None if !which.trim().starts_with("L=") => println!(
                "(requests alone run with {:?}; write `L=2 W=10ns: a@0 …` to choose)\n",
                timeline.config
            ),
            None => {}
        }
        let reference = self.unwrap(
            &timeline,
            run_watched(self.implementations.reference, &timeline),
        );
        let (yours, stop) = run_partial(self.tested(), &timeline);
        // Only answers the contract fixes exactly are marked: a late request,
        // or one past the exact horizon, may be answered more than one way.
        let placed = timeline.placed();
        let at = match &stop {
            Some(_) => Some(yours.len()),
            None => (0..timeline.requests.len()).find(|&i| {
                let now = timeline.requests[i].now.as_nanos();
                placed[i] == now
                    && self.algorithm.exact_at(&timeline.config, now)
                    && yours.get(i) != reference.get(i)
            }),
        };
        println!(
            "{}",
            render_compare(
                self.algorithm,
                &timeline,
                ("yours", "reference"),
                &yours,
                &reference,
                at
            )
        );
        if let Some(stop) = stop {
            let r = &timeline.requests[yours.len()];
            panic!(
                "request #{}, {}: {} {}",
                yours.len() + 1,
                call(&r.key, r.now),
                self.whose(),
                stop.text()
            );
        }
        match at {
            Some(i) => println!(
                "first difference: {}",
                divergence(
                    &timeline,
                    i,
                    &self.whose(),
                    &yours,
                    "the reference",
                    &reference
                )
            ),
            None => println!(
                "no difference on this timeline: your answers are the reference's here. (Other \
                 timelines may still tell them apart: `cargo run -- test {}` runs every check.)",
                self.number
            ),
        }
    }

    /// A named timeline, drawn as a table and strip chart, compared with the
    /// committed snapshot `tests/snapshots/lesson_NN_<name>.snap`. The snapshot
    /// must be what the model and the reference draw, so accepting a wrong
    /// drawing as the new snapshot cannot make this pass.
    pub fn snapshot(&self, name: &str, limit: u64, period_nanos: u64, requests: &str) {
        let timeline = Timeline::parse(Config::new(limit, period_nanos), requests)
            .unwrap_or_else(|e| panic!("bad snapshot timeline: {e}"));
        let draw = |d: &[Decision]| render(self.algorithm, &timeline, d);
        let contract = draw(&model_run(self.algorithm, &timeline));
        let reference = draw(&self.unwrap(
            &timeline,
            run_watched(self.implementations.reference, &timeline),
        ));
        let tested = draw(&self.unwrap(&timeline, run_watched(self.tested(), &timeline)));
        assert_snapshot(
            (self.root, self.number, name),
            &format!("{timeline:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    // -------------------------------------------------------------- properties

    /// Exact agreement with the reference solution on in-order timelines.
    pub fn agrees_with_reference(&self) {
        self.property(
            "agrees with the reference",
            256,
            Shape::InOrder,
            |ctx, t| {
                if ctx.subject == Subject::Reference {
                    return Ok(());
                }
                let got = run(ctx.tested, t)?;
                let want = run(ctx.reference, t)?;
                compare(ctx, t, &got, "the reference", &want)
            },
        );
    }

    /// Exact agreement, request by request, with the lesson's baseline: another
    /// lesson's reference that implements the same contract another way.
    pub fn agrees_with_baseline(&self) {
        let (name, _) = self
            .implementations
            .baseline
            .expect("agrees_with_baseline needs a `baseline` in lessons/lessons.toml");
        self.property(
            &format!("decides like the {name} reference"),
            256,
            Shape::InOrder,
            |ctx, t| {
                let baseline = ctx.baseline.expect("checked above");
                let got = run(ctx.tested, t)?;
                let want = run(baseline, t)?;
                compare(
                    ctx,
                    t,
                    &got,
                    &format!("the {} reference", baseline.path()),
                    &want,
                )
            },
        );
    }

    /// Exact agreement with the kata's model of the contract.
    pub fn agrees_with_model(&self) {
        self.property(
            "agrees with the contract's model",
            256,
            Shape::InOrder,
            |ctx, t| {
                let got = run(ctx.tested, t)?;
                compare(ctx, t, &got, "the contract", &model_run(ctx.algorithm, t))
            },
        );
    }

    /// The lesson's limit invariant, on in-order and late-delivered timelines
    /// (a late request is placed at the latest timestamp its key had seen).
    pub fn keeps_the_limit(&self) {
        for shape in [Shape::InOrder, Shape::OutOfOrder] {
            self.property("keeps the limit", 256, shape, |ctx, t| {
                invariant(ctx, t, &run(ctx.tested, t)?)
            });
        }
    }

    /// `remaining` and `retry_after` mean what the contract says: replaying the
    /// timeline, `remaining` more requests at the same instant are allowed and
    /// the next one is denied; a request `retry_after` later is allowed and one
    /// a nanosecond earlier is not.
    pub fn answers_mean_what_they_say(&self) {
        self.property(
            "remaining and retry_after mean what they say",
            96,
            Shape::InOrder,
            probe,
        );
    }

    /// The same answers when every call comes from another OS thread: a
    /// limiter that keeps state per thread (`thread_local!`, a map keyed by
    /// thread id) answers each new thread as a stranger. Only real threads
    /// show it: loom runs all its threads on one.
    pub fn answers_do_not_depend_on_the_thread(&self) {
        self.property(THREADS_PROPERTY, 64, Shape::InOrder, |ctx, t| {
            let want = model_run(ctx.algorithm, t);
            // A difference that one thread shows too is the other
            // properties' finding, not this one's.
            if compare(ctx, t, &run(ctx.tested, t)?, "the contract", &want).is_err() {
                return Ok(());
            }
            let got = run_on_threads(ctx.tested, t)?;
            compare(
                ctx,
                t,
                &got,
                "the contract (calls made one thread after another)",
                &want,
            )
        });
    }

    /// Many distinct keys, more than any fixed number of buckets a limiter
    /// might keep state in (a hash modulo 64, 4096 or 65536, a striped lock
    /// array used as the state itself): each key's answers must be its own.
    /// Whatever the hasher, two of these keys then share a bucket, and the
    /// second's first answer shows it. A failure is shrunk to the two keys.
    pub fn keeps_many_keys_apart(&self) {
        let ctx = self.ctx();
        for (limit, period) in [(1, 1_000), (2, 1)] {
            let config = Config::new(limit, period);
            // Keys of many shapes: short, long, with shared prefixes, numbered.
            let keys = (0..MANY_KEYS).map(|i| match i % 4 {
                0 => format!("{i}"),
                1 => format!("client-{i:06}"),
                2 => format!("10.0.{}.{}", i / 256, i % 256),
                _ => format!("tenant/{}/user/{i}", i % 7),
            });
            // Every key twice at one instant (the second answer shows a limit
            // or a count shared with another key), then once a period later.
            let mut requests = Vec::with_capacity(MANY_KEYS * 3);
            for key in keys {
                requests.push(crate::timeline::Request::new(&key, 5));
                requests.push(crate::timeline::Request::new(&key, 5));
            }
            let later: Vec<_> = requests
                .iter()
                .step_by(2)
                .map(|r| crate::timeline::Request::new(&r.key, 5 + period))
                .collect();
            requests.extend(later);
            let timeline = Timeline { config, requests };
            let got = self.unwrap(&timeline, run_watched(ctx.tested, &timeline));
            let want = model_run(ctx.algorithm, &timeline);
            let Some(i) = first_difference(&got, &want) else {
                continue;
            };
            // A key that goes wrong on its own is not this check's finding.
            let wrong = &timeline.requests[i].key;
            let mut alone = timeline.prefix(i + 1);
            alone.requests.retain(|r| r.key == *wrong);
            let alone_got = self.unwrap(&alone, run_watched(ctx.tested, &alone));
            let alone_want = model_run(ctx.algorithm, &alone);
            if let Some(j) = first_difference(&alone_got, &alone_want) {
                panic!(
                    "lesson {:02} ({}): {} answers a key wrongly on its own.\nminimal timeline: {alone:?}\n\n{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                    self.number,
                    self.title,
                    self.whose(),
                    divergence(&alone, j, &self.whose(), &alone_got, "the contract", &alone_want),
                    render_compare(ctx.algorithm, &alone, ("yours", "contract"), &alone_got, &alone_want, Some(j)),
                    replay(self.number, &alone)
                );
            }
            // The smallest timeline that shows it: the key that went wrong and
            // one earlier key, each with its requests up to that point.
            let shrunk = timeline.requests[..i]
                .iter()
                .map(|r| &r.key)
                .filter(|k| *k != wrong)
                .rev()
                .find_map(|other| {
                    let mut small = timeline.prefix(i + 1);
                    small
                        .requests
                        .retain(|r| r.key == *other || r.key == *wrong);
                    let got = run_watched(ctx.tested, &small).ok()?;
                    let want = model_run(ctx.algorithm, &small);
                    first_difference(&got, &want).map(|j| (small, got, want, j))
                });
            let (t, got, want, j) = shrunk.unwrap_or((timeline.prefix(i + 1), got, want, i));
            panic!(
                "lesson {:02} ({}): {} answers one key as if it were another: with {} distinct \
                 keys, more than any fixed number of buckets, two of them share state. Keep \
                 state per key (the whole key, as it was given), not per bucket of a hash.\n\
                 minimal timeline: {t:?}\n\n{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                self.number,
                self.title,
                self.whose(),
                MANY_KEYS,
                divergence(&t, j, &self.whose(), &got, "the contract", &want),
                render_compare(
                    ctx.algorithm,
                    &t,
                    ("yours", "contract"),
                    &got,
                    &want,
                    Some(j)
                ),
                replay(self.number, &t)
            );
        }
    }

    /// The cost of a call does not grow with how long its key was idle: after
    /// gaps of 2^20, 2^40 and 2^62 periods of 1 ns, each call returns at once.
    /// A limiter that walks its window (or refill) forward one period at a
    /// time is right, and would take hours. The calls run in a child process
    /// (this test binary again), which is stopped after a few seconds: a loop
    /// with no lock or atomic in it cannot be stopped any other way.
    /// `test` is the test's path (`module_path!()` and its name), by which
    /// the child runs it alone.
    pub fn stays_quick_after_idle_gaps(&self, test: &str) {
        const EXPONENTS: [u32; 3] = [20, 40, 62];
        if std::env::var_os(IDLE_PROBE).is_some() {
            // The child: the calls themselves, one line per gap done.
            for k in EXPONENTS {
                let mut limiter =
                    build(self.tested(), Config::new(1, 1)).unwrap_or_else(|e| panic!("{e}"));
                limiter.check("a", Timestamp::ZERO);
                limiter.check("a", Timestamp::from_nanos(1 << k));
                println!("{IDLE_PROBE} 2^{k} done");
            }
            return;
        }
        // A correct call returns in microseconds; a walk over 2^40 periods
        // takes hours. The margin between them needs no tuning.
        let limit = time_limit().min(Duration::from_secs(5));
        let (out, stopped) = run_alone(test, IDLE_PROBE, limit);
        let finished = !stopped;
        let done = EXPONENTS
            .iter()
            .take_while(|k| out.contains(&format!("{IDLE_PROBE} 2^{k} done")))
            .count();
        match finished {
            true if done == EXPONENTS.len() => {}
            true => panic!(
                "{} failed while answering after an idle gap:\n{}",
                self.whose(),
                out.lines()
                    .filter(|l| !l.starts_with(IDLE_PROBE))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            false => {
                let k = EXPONENTS[done.min(EXPONENTS.len() - 1)];
                panic!(
                    "too slow after an idle gap of 2^{k} {}s: {} answered check(\"a\", 0ns), then \
                     check(\"a\", 2^{k}ns) with a {} of 1ns did not return within {} s. The work of a \
                     call must not grow with how long the key was idle: compute the current {} \
                     directly (a division, a subtraction) instead of stepping through every one \
                     that went by.",
                    self.algorithm.period_name(),
                    self.whose(),
                    self.algorithm.period_name(),
                    limit.as_secs(),
                    self.algorithm.period_name()
                )
            }
        }
    }

    /// Limits in the hundreds to thousands, reached by long bursts of one key
    /// and of several keys at once: exact answers, and the limit kept. A
    /// limiter that caps its state (a log or a map of a few thousand
    /// entries) shows it here.
    pub fn keeps_long_bursts(&self) {
        self.property("keeps long bursts exactly", 16, Shape::Long, |ctx, t| {
            let got = run(ctx.tested, t)?;
            compare(ctx, t, &got, "the contract", &model_run(ctx.algorithm, t))?;
            invariant(ctx, t, &got)
        });
    }

    /// No panic, a `retry_after` of at least 1 ns, and the invariant where the
    /// arithmetic fits, for periods and timestamps up to `u64::MAX` (late
    /// timestamps among them; late ones near the origin are `keeps_the_limit`'s).
    pub fn survives_extremes(&self) {
        self.property(
            "survives extreme timestamps",
            256,
            Shape::Extreme,
            |ctx, t| invariant(ctx, t, &run(ctx.tested, t)?),
        );
    }

    /// Runs one property with a fixed seed (deterministic runs). A case that
    /// hangs is reported at once: later cases pass untried, so shrinking stops
    /// at the timeline that hung instead of hanging again.
    fn property(
        &self,
        name: &str,
        cases: u32,
        shape: Shape,
        check: fn(Ctx, &Timeline) -> Result<(), String>,
    ) {
        let ctx = self.ctx();
        // Each step of a long timeline replays thousands of requests.
        let shrink = if shape == Shape::Long { 16 } else { 4096 };
        let strategy = timelines(self.algorithm, shape);
        let strategy = match self.one_clock {
            true => strategy.prop_map(|t| t.on_one_clock()).boxed(),
            false => strategy,
        };
        let result = run_cases(
            ctx.subject,
            (cases / self.divisor).max(4),
            shrink,
            &strategy,
            nth_request,
            move |t| check(ctx, t),
        );
        let hung = result.as_ref().err().is_some_and(|f| f.hung);
        let result = match result {
            Err(failed) if !failed.hung => {
                let (reason, timeline) = minimize(ctx, check, failed.reason, failed.value);
                Err(TestError::Fail(reason.into(), timeline))
            }
            Err(failed) => Err(TestError::Fail(failed.reason.into(), failed.value)),
            Ok(()) => Ok(()),
        };
        match result {
            Ok(()) => {}
            Err(TestError::Fail(reason, timeline)) => panic!(
                "lesson {:02} ({}): property \"{name}\" fails for {} ({shape:?} timelines).\n{}: {timeline:?}\n\n{reason}\n\nreplay it beside the reference's answers:\n  {}",
                self.number,
                self.title,
                self.whose(),
                if hung {
                    "timeline (not shrunk: it hung, and a hang is not run again)"
                } else {
                    "minimal timeline"
                },
                if name == THREADS_PROPERTY {
                    "(on one thread the answers may well agree: this property makes every call \
                     from a new OS thread, and only that shows state kept per thread)"
                        .to_string()
                } else {
                    replay(self.number, &timeline)
                }
            ),
            Err(TestError::Abort(reason)) => panic!("property \"{name}\" could not run: {reason}"),
        }
    }

    // --------------------------------------------------------------------- loom

    /// Fails, naming the line, if the file under test takes sync primitives from
    /// anywhere but `super::sync`.
    pub fn uses_only_the_sync_facade(&self) {
        let v = self.tested();
        if let Err(e) = crate::source::check_sync_imports(&v.path(), v.source) {
            panic!("{e}");
        }
    }

    /// Fails, naming the line and the reason, if the file under test uses a
    /// real clock, per-thread state, sleeps, threads or randomness (its
    /// answers may depend only on its configuration and its calls), or an
    /// atomic ordering std rejects.
    pub fn uses_only_its_inputs(&self) {
        let v = self.tested();
        for check in [crate::source::check_inputs, crate::source::check_orderings] {
            if let Err(e) = check(&v.path(), v.source) {
                panic!("{e}");
            }
        }
    }

    /// Runs one loom scenario against the subject's loom build.
    pub fn loom(&self, scenario: crate::scenarios::Scenario) {
        self.uses_only_the_sync_facade();
        let v = self.tested();
        let build = v
            .build_loom
            .expect("loom scenarios need a lesson of kind shared-limiter");
        if let Err(e) = crate::scenarios::explore(self.algorithm, build, scenario) {
            panic!("{} ({}): {e}", self.subject(), v.path());
        }
    }
}

/// Shrinks a failing timeline further than proptest can through its
/// generator: drops chunks of requests, halving their size down to single
/// requests, keeping each drop after which the check still fails (so a long
/// timeline shrinks in few runs). Returns the failure of the smallest
/// timeline found. Bounded: it replays at most [`SHRINK_BUDGET`] requests.
fn minimize(
    ctx: Ctx,
    check: fn(Ctx, &Timeline) -> Result<(), String>,
    mut reason: String,
    mut timeline: Timeline,
) -> (String, Timeline) {
    let fails = |t: &Timeline| -> Option<String> {
        let t = t.clone();
        match watched(time_limit(), |_| String::new(), move || check(ctx, &t)) {
            Ok(Ok(())) => None,
            Ok(Err(message)) => Some(message),
            Err(Stop::Panicked(message)) => Some(format!("{} {message}", ctx.subject)),
            // Not a smaller version of the same failure.
            Err(Stop::Hung(_)) => None,
        }
    };
    let mut budget = SHRINK_BUDGET;
    let mut size = timeline.requests.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        while i < timeline.requests.len() && timeline.requests.len() > 1 && budget > 0 {
            let mut smaller = timeline.clone();
            let end = (i + size).min(smaller.requests.len());
            smaller.requests.drain(i..end);
            budget = budget.saturating_sub(smaller.requests.len().max(1));
            match (smaller.requests.is_empty(), fails(&smaller)) {
                (false, Some(message)) => {
                    timeline = smaller;
                    reason = message;
                }
                _ => i += size,
            }
        }
        if size == 1 || budget == 0 {
            break;
        }
        size /= 2;
    }
    (reason, timeline)
}

/// How many requests [`minimize`] may replay in all.
const SHRINK_BUDGET: usize = 400_000;

/// A fresh limiter of `variant` for a timeline's configuration, which is
/// always valid.
fn build(variant: Variant, config: Config) -> Result<Box<dyn crate::drive::Drive>, String> {
    (variant.build)(config.limit, config.period).map_err(|e| {
        format!(
            "new({}, {:?}) returned Err(ConfigError::{e:?}) for a valid configuration",
            config.limit, config.period
        )
    })
}

/// Runs a timeline on a fresh limiter of `variant`, on the current thread,
/// handing each answer to `keep` as it comes.
fn run_into(
    variant: Variant,
    timeline: &Timeline,
    mut keep: impl FnMut(Decision),
) -> Result<(), String> {
    let mut limiter = build(variant, timeline.config)?;
    for (i, r) in timeline.requests.iter().enumerate() {
        progress(i);
        keep(limiter.check(&r.key, r.now));
    }
    Ok(())
}

/// Runs a timeline on a fresh limiter of `variant`, on the current thread.
fn run(variant: Variant, timeline: &Timeline) -> Result<Vec<Decision>, String> {
    let mut answers = Vec::with_capacity(timeline.requests.len());
    run_into(variant, timeline, |d| answers.push(d))?;
    Ok(answers)
}

/// Runs a timeline on a fresh limiter of `variant`, each call on a new OS
/// thread, one after another.
fn run_on_threads(variant: Variant, timeline: &Timeline) -> Result<Vec<Decision>, String> {
    let mut limiter = build(variant, timeline.config)?;
    let mut answers = Vec::with_capacity(timeline.requests.len());
    for (i, r) in timeline.requests.iter().enumerate() {
        progress(i);
        let limiter = &mut limiter;
        let answer = crate::watchdog::on_another_thread(move || limiter.check(&r.key, r.now))
            .map_err(|panic| {
                format!(
                    "{panic}\n(request #{} {}, on a thread of its own)",
                    i + 1,
                    call(&r.key, r.now)
                )
            })?;
        answers.push(answer);
    }
    Ok(answers)
}

/// Runs a timeline under the watchdog, keeping the answers given before a
/// panic or a hang, and the stop.
fn run_partial(variant: Variant, timeline: &Timeline) -> (Vec<Decision>, Option<Stop>) {
    let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (t, kept) = (timeline.clone(), answers.clone());
    let describe = |i: usize| nth_request(timeline, i);
    let outcome = watched(time_limit(), describe, move || {
        run_into(variant, &t, |d| {
            kept.lock().unwrap_or_else(|e| e.into_inner()).push(d)
        })
    });
    let got = answers.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match outcome {
        Ok(Ok(())) => (got, None),
        Ok(Err(e)) => (got, Some(Stop::Panicked(e))),
        Err(stop) => (got, Some(stop)),
    }
}

/// What `cargo run -- compare N` shows when no timeline is named.
pub const DEFAULT_COMPARISON: &str = "first_look";

/// The command that replays a failing timeline beside the reference's
/// answers, quoted for a POSIX shell.
pub fn replay(number: u32, timeline: &Timeline) -> String {
    let text = format!("{timeline:?}").replace('\'', "'\\''");
    format!("cargo run -- compare {number} '{text}'")
}

/// Runs a timeline under the watchdog.
fn run_watched(variant: Variant, timeline: &Timeline) -> Result<Vec<Decision>, Stop> {
    let t = timeline.clone();
    let describe = |i: usize| nth_request(timeline, i);
    match watched(time_limit(), describe, move || run(variant, &t)) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(Stop::Panicked(e)),
        Err(stop) => Err(stop),
    }
}

fn divergence(
    timeline: &Timeline,
    i: usize,
    whose: &str,
    got: &[Decision],
    other: &str,
    want: &[Decision],
) -> String {
    let r = &timeline.requests[i];
    let show = |d: Option<&Decision>| d.map(describe).unwrap_or_else(|| "no answer".into());
    format!(
        "request #{}, {}: {whose} answered {}; {other} says {}.",
        i + 1,
        call(&r.key, r.now),
        show(got.get(i)),
        show(want.get(i))
    )
}

/// Compares two runs of an in-order timeline, on the requests whose answer
/// the contract fixes exactly.
fn compare(
    ctx: Ctx,
    t: &Timeline,
    got: &[Decision],
    other: &str,
    want: &[Decision],
) -> Result<(), String> {
    // Late requests have no one exact answer; the invariant judges them.
    let placed = t.placed();
    let exact = |i: usize| {
        let now = t.requests[i].now.as_nanos();
        placed[i] == now && ctx.algorithm.exact_at(&t.config, now)
    };
    let first = (0..t.requests.len()).find(|&i| exact(i) && got.get(i) != want.get(i));
    match first {
        None => Ok(()),
        Some(i) => {
            let shown = t.prefix(i + 1);
            Err(format!(
                "{}\n\n{}",
                divergence(
                    t,
                    i,
                    &format!("{} ({})", ctx.subject, ctx.tested.path()),
                    got,
                    other,
                    want
                ),
                render_compare(
                    ctx.algorithm,
                    &shown,
                    ("yours", other.trim_start_matches("the ")),
                    got,
                    want,
                    Some(i)
                )
            ))
        }
    }
}

/// Every `retry_after` is at least 1 ns, and the allowed requests, each placed
/// at the latest timestamp its key had seen, obey the lesson's invariant.
fn invariant(ctx: Ctx, t: &Timeline, got: &[Decision]) -> Result<(), String> {
    for (i, d) in got.iter().enumerate() {
        if let Decision::Denied { retry_after } = d {
            if retry_after.is_zero() {
                let r = &t.requests[i];
                return Err(format!(
                    "request #{}, {}: denied with a retry_after of 0, but retry_after is never zero: a \
                     caller retrying at once would be denied again.\n\n{}",
                    i + 1,
                    call(&r.key, r.now),
                    render(ctx.algorithm, &t.prefix(i + 1), got)
                ));
            }
        }
    }
    let placed = t.placed();
    let mut keys: Vec<&str> = t.requests.iter().map(|r| r.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let allowed: Vec<u64> = (0..t.requests.len())
            .filter(|&i| t.requests[i].key == key && got[i].is_allowed())
            .map(|i| placed[i])
            .filter(|p| ctx.algorithm.exact_at(&t.config, *p))
            .collect();
        if let Err(e) = ctx.algorithm.invariant(&t.config, &allowed) {
            return Err(format!(
                "key {key:?}: {e}.\n\n{}",
                render(ctx.algorithm, t, got)
            ));
        }
    }
    Ok(())
}

/// Replays prefixes of the timeline on fresh limiters to test what each answer
/// claims about the future.
fn probe(ctx: Ctx, t: &Timeline) -> Result<(), String> {
    let got = run(ctx.tested, t)?;
    let limit = t.config.limit;
    for (i, d) in got.iter().enumerate() {
        let r = &t.requests[i];
        let now = r.now.as_nanos();
        if !ctx.algorithm.exact_at(&t.config, now) {
            continue;
        }
        let replay = |extra: &[u64]| -> Result<Vec<Decision>, String> {
            let mut probe = t.prefix(i + 1);
            probe.requests.extend(
                extra
                    .iter()
                    .map(|at| crate::timeline::Request::new(&r.key, *at)),
            );
            Ok(run(ctx.tested, &probe)?.split_off(i + 1))
        };
        let fail = |claim: String| {
            Err(format!(
                "request #{}, {} was answered {}, {claim}\n\n{}",
                i + 1,
                call(&r.key, r.now),
                describe(d),
                render(ctx.algorithm, &t.prefix(i + 1), &got)
            ))
        };
        match *d {
            Decision::Allowed { remaining } => {
                if remaining >= limit {
                    return fail(format!(
                        "but the limit is {limit}, so at most {} can remain",
                        limit - 1
                    ));
                }
                if remaining > PROBE_MOST {
                    // Too many to replay; the agreement properties check it exactly.
                    continue;
                }
                let after = replay(&vec![now; remaining as usize + 1])?;
                if let Some(j) = after
                    .iter()
                    .take(remaining as usize)
                    .position(|d| !d.is_allowed())
                {
                    return fail(format!(
                        "but in a replay the {} further request at that instant was {}",
                        ordinal(j + 1),
                        describe(&after[j])
                    ));
                }
                if after[remaining as usize].is_allowed() {
                    return fail(if remaining == 0 {
                        "but in a replay a further request at that instant was allowed".to_string()
                    } else {
                        format!(
                            "but in a replay {} further requests at that instant were all allowed",
                            remaining + 1
                        )
                    });
                }
            }
            Decision::Denied { retry_after } => {
                let wait = u64::try_from(retry_after.as_nanos()).unwrap_or(u64::MAX);
                if wait == 0 {
                    return fail("but retry_after is never zero".into());
                }
                let Some(at) = now.checked_add(wait) else {
                    continue;
                };
                let later = replay(&[at])?;
                if !later[0].is_allowed() {
                    return fail(format!(
                        "but in a replay a request {} later, at {}, was {}",
                        retry_after.as_nanos(),
                        Timestamp::from_nanos(at),
                        describe(&later[0])
                    ));
                }
                if wait > 1 {
                    let sooner = replay(&[at - 1])?;
                    if sooner[0].is_allowed() {
                        return fail(format!(
                            "but in a replay a request 1ns sooner, at {}, was already allowed: retry_after \
                             must be the shortest wait",
                            Timestamp::from_nanos(at - 1)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The property whose failures no single-threaded replay shows.
const THREADS_PROPERTY: &str = "answers do not depend on the calling thread";

/// Set in the child process of [`Lesson::stays_quick_after_idle_gaps`].
const IDLE_PROBE: &str = "KATA_IDLE_PROBE";

/// How many distinct keys [`Lesson::keeps_many_keys_apart`] uses: more than
/// 2^13 buckets, and enough that a 16-bit hash of them collides.
const MANY_KEYS: usize = 10_007;

/// The largest `remaining` that is checked by replaying that many requests.
const PROBE_MOST: u64 = 64;

fn ordinal(n: usize) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}
