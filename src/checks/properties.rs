//! The properties every lesson checks on generated timelines, and how a
//! failing timeline is shrunk.

use std::time::Duration;

use proptest::strategy::Strategy;
use proptest::test_runner::TestError;

use super::judge::{compare, invariant, probe};
use super::runs::{build, run, run_on_threads, run_watched};
use super::{replay, Ctx, Lesson};
use crate::gen::{timelines, Shape};
use crate::models::model_run;
use crate::run::{nth_request, run_alone, run_cases};
use crate::subject::Subject;
use crate::time::Timestamp;
use crate::timeline::{Config, Timeline};
use crate::watchdog::{time_limit, watched, Stop};

impl Lesson {
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
            .subjects
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

    /// The cost of a call does not grow with how long its key was idle: after
    /// gaps of 2^20, 2^40 and 2^62 periods of 1 ns, each call returns at once.
    /// A limiter that walks its window (or refill) forward one period at a
    /// time is right, and would take hours. The calls run in a child process
    /// (this test binary again), which is stopped after a few seconds: a loop
    /// with no lock or atomic in it cannot be stopped any other way.
    /// The child runs this trial alone, by its name.
    pub fn stays_quick_after_idle_gaps(&self) {
        let test = &crate::trial::name().expect("a check runs as a trial");
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
                    self.facts.algorithm.period_name(),
                    self.whose(),
                    self.facts.algorithm.period_name(),
                    limit.as_secs(),
                    self.facts.algorithm.period_name()
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

    /// A limit past 2^16: its `remaining` exact from the first request (a
    /// limit kept in 16 bits shows at once), and, for the rules that count
    /// (windows' counters, buckets' tokens), reached at one instant: 2^16 +
    /// 3 admissions, then a denial, which a count kept in 16 bits (saturating
    /// at 65,535, or wrapping) gets wrong. A log holds one entry per
    /// admission, and a correct one may scan them on each call, so the log
    /// gets ten requests.
    pub fn counts_past_2_16(&self) {
        let ctx = self.ctx();
        let limit = (1u64 << 16) + 3;
        let requests = match self.facts.algorithm {
            crate::models::Algorithm::SlidingLog => 10,
            _ => limit + 1,
        };
        let t = Timeline {
            config: Config::new(limit, 1_000_000),
            requests: (0..requests)
                .map(|_| crate::timeline::Request::new("a", 5))
                .collect(),
        };
        let got = self.unwrap(&t, run_watched(ctx.tested, &t));
        if let Err(message) = compare(ctx, &t, &got, "the contract", &model_run(ctx.algorithm, &t))
        {
            panic!(
                "lesson {:02} ({}): {} miscounts with a limit past 2^16 = 65,536 (a count or a \
                 limit kept in 16 bits?). The limit and the count are u64s.\n{message}",
                self.facts.number,
                self.facts.title,
                self.whose()
            );
        }
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
        let strategy = timelines(self.facts.algorithm, shape);
        let strategy = match self.pace().one_clock {
            true => strategy.prop_map(|t| t.on_one_clock()).boxed(),
            false => strategy,
        };
        let result = run_cases(
            ctx.subject,
            (cases / self.pace().cases_divisor).max(4),
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
                self.facts.number,
                self.facts.title,
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
                    replay(self.facts.number, &timeline)
                }
            ),
            Err(TestError::Abort(reason)) => panic!("property \"{name}\" could not run: {reason}"),
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

/// The property whose failures no single-threaded replay shows.
const THREADS_PROPERTY: &str = "answers do not depend on the calling thread";

/// Set in the child process of [`Lesson::stays_quick_after_idle_gaps`].
const IDLE_PROBE: &str = "KATA_IDLE_PROBE";
