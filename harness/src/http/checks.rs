//! Lesson 07's checks, written once: the `http-layer` kind's suite.

use std::sync::Arc;
use std::time::Duration;

use proptest::strategy::Strategy;

use super::drive::{run, HttpVariant, Run};
use super::exchange::{self, nanos, transcript, Call, HttpTimeline, Observed};
use super::model::{client_key, expected, leftmost_decides, problem_body_errors, Expected, Keyed};
use super::{gen, LayerError, Policy, PolicyError};
use crate::drive::Implementations;
use crate::models::Algorithm;
use crate::subject::Subject;
use crate::watchdog::{time_limit, watched, Stop};

/// Lesson 07 and which of its implementations is under test.
pub struct HttpLesson {
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    pub layer: &'static str,
    /// The rule of the limiter behind the layer in the checks.
    pub algorithm: Algorithm,
    subject: Subject,
    implementations: Implementations<HttpVariant>,
}

#[derive(Clone, Copy)]
struct Ctx {
    algorithm: Algorithm,
    subject: Subject,
    tested: HttpVariant,
    reference: HttpVariant,
}

impl HttpLesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        layer: &'static str,
        algorithm: Algorithm,
        implementations: Implementations<HttpVariant>,
    ) -> HttpLesson {
        let subject = implementations.subject_from_env(root);
        HttpLesson {
            root,
            number,
            title,
            layer,
            algorithm,
            subject,
            implementations,
        }
    }

    pub fn subject(&self) -> Subject {
        self.subject
    }

    pub fn tested(&self) -> HttpVariant {
        self.implementations.pick(self.subject)
    }

    fn ctx(&self) -> Ctx {
        Ctx {
            algorithm: self.algorithm,
            subject: self.subject,
            tested: self.tested(),
            reference: self.implementations.reference,
        }
    }

    fn whose(&self) -> String {
        match self.subject {
            Subject::Learner => format!("your layer ({})", self.tested().path()),
            other => format!("{other} ({})", self.tested().path()),
        }
    }

    // ---------------------------------------------------------------- examples

    /// An example: a timeline in notation (`SETUP: CALL; CALL`) and the
    /// contract's answers, one per request, separated by `;`: `KEY 200 r=N`
    /// or `KEY 429 t=S`. The model must agree with the table before the
    /// subject is judged by it.
    pub fn example(&self, timeline: &str, answers: &str) {
        let timeline = exchange::parse(timeline).unwrap_or_else(|e| panic!("bad example: {e}"));
        let table: Vec<String> = answers.split(';').map(|a| a.trim().to_string()).collect();
        assert_eq!(
            table.len(),
            timeline.calls.len(),
            "bad example: one answer per request"
        );
        let model: Vec<String> = contract(self.algorithm, &timeline)
            .iter()
            .map(|(keyed, e)| short(&keyed.key, e))
            .collect();
        assert_eq!(
            model, table,
            "bad example: the table contradicts the kata's model"
        );
        let ctx = self.ctx();
        let t = timeline.clone();
        let outcome = self.watched(&timeline, move || {
            judge(ctx.algorithm, &t, &run(ctx.tested, ctx.algorithm, &t)?)
        });
        if let Err(e) = outcome {
            panic!(
                "{} fails this example:\n{e}\n\nreplay it beside the reference:\n  {}",
                self.whose(),
                replay(self.number, &timeline)
            );
        }
    }

    // ----------------------------------------------------------- configuration

    /// A policy case: `RateLimitLayer::new` must answer `expected`.
    pub fn policy(
        &self,
        name: &str,
        quota: u64,
        window: Duration,
        expected: Result<(), PolicyError>,
    ) {
        let policy = Policy::new(name, quota, window);
        assert_eq!(
            policy.validate(),
            expected,
            "bad policy case: the contract says otherwise"
        );
        let tested = self.tested();
        let algorithm = self.algorithm;
        let shown =
            format!("RateLimitLayer::new(…, Policy::new({name:?}, {quota}, {window:?}), …)");
        let got = watched(
            time_limit(),
            |_| String::new(),
            move || build_only(tested, algorithm, policy),
        );
        match got {
            Ok(got) if got == expected => {}
            Ok(got) => panic!(
                "{shown} gave {got:?} in {}; the contract says {expected:?}{}",
                self.whose(),
                match expected {
                    Err(e) => format!(" ({e})"),
                    Ok(()) => String::new(),
                }
            ),
            Err(stop) => panic!("{shown}: {} {}", self.whose(), stop.text()),
        }
    }

    /// Every pair of a name, a quota and a window from the edges of each
    /// fault, judged by the contract's order of checks.
    pub fn policy_grid(&self) {
        let names = [
            "",
            "é",
            "限流",
            "tab\there",
            "del\x7f",
            "api",
            "say \"hi\"",
            " ",
        ];
        let quotas = [0, 1, u64::MAX];
        let windows = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(999),
            Duration::from_secs(1),
            Duration::from_millis(1_500),
            Duration::new(1, 1),
            Duration::new(1 << 24, 1),
            Duration::from_secs(1 << 40),
            Duration::from_secs(60),
            Duration::from_secs(u64::MAX),
        ];
        for name in names {
            for quota in quotas {
                for window in windows {
                    let expected = Policy::new(name, quota, window).validate();
                    self.policy(name, quota, window, expected);
                }
            }
        }
    }

    // -------------------------------------------------------------- properties

    /// Status, every rate-limit header byte, the problem body, the key and
    /// instant the limiter is asked for, and the inner service's calls, for
    /// every request of generated timelines, against the model.
    pub fn agrees_with_model(&self) {
        self.property(
            "agrees with the model",
            256,
            gen::timelines(14),
            |ctx, t| judge(ctx.algorithm, t, &run(ctx.tested, ctx.algorithm, t)?),
        );
    }

    /// The same answers as the reference, request by request.
    pub fn agrees_with_reference(&self) {
        self.property(
            "agrees with the reference",
            128,
            gen::timelines(14),
            |ctx, t| {
                if ctx.subject == Subject::Reference {
                    return Ok(());
                }
                let yours = run(ctx.tested, ctx.algorithm, t)?;
                let reference = run(ctx.reference, ctx.algorithm, t)?;
                for (i, (y, r)) in yours.answers.iter().zip(&reference.answers).enumerate() {
                    let (ys, rs) = (seen(y), seen(r));
                    if ys != rs {
                        return Err(format!(
                        "request #{} ({:?}):\n  yours:         {ys}\n  the reference: {rs}\n\n{}",
                        i + 1,
                        t.calls[i],
                        transcript(&t.clone_upto(i), &yours.answers)
                    ));
                    }
                }
                Ok(())
            },
        );
    }

    /// Whatever a client writes in front of its `X-Forwarded-For`, a request
    /// that comes through the trusted chain keeps its key, and a directly
    /// connected client keeps its own.
    pub fn keys_cannot_be_forged(&self) {
        let ctx = self.ctx();
        let strategy = gen::with_forged_prefixes(10).prop_map(|(t, prefixes)| {
            let calls = t
                .calls
                .iter()
                .zip(&prefixes)
                .map(|(c, (own_line, forged))| gen::forge(c, *own_line, forged))
                .collect();
            let forged = HttpTimeline {
                setup: t.setup.clone(),
                calls,
            };
            Forged { honest: t, forged }
        });
        let outcome = run_property(ctx, 256, strategy, forged_keys);
        if let Err((reason, case)) = outcome {
            let (reason, case) = drop_requests(
                ctx,
                forged_keys,
                reason,
                case,
                |c| c.honest.calls.len(),
                |c, i| {
                    c.honest.calls.remove(i);
                    c.forged.calls.remove(i);
                },
            );
            panic!(
                "lesson {:02} ({}): property \"keys cannot be forged\" fails for {}.\nsmallest timeline found (with the forged parts): {:?}\n\n{reason}\n\nreplay it beside the reference:\n  {}",
                self.number,
                self.title,
                self.whose(),
                case.forged,
                replay(self.number, &case.forged)
            );
        }
    }

    /// The inner service is called exactly once for each allowed request,
    /// after a `poll_ready` of its own, and never for a denied one.
    pub fn calls_the_inner_service_once_per_allowed_request(&self) {
        self.property("calls the inner service once per allowed request", 128, gen::timelines(10), |ctx, t| {
            let got = run(ctx.tested, ctx.algorithm, t)?;
            let allowed: Vec<bool> = contract(ctx.algorithm, t).iter().map(|(_, e)| e.reaches_inner).collect();
            for (i, o) in got.answers.iter().enumerate() {
                let want = usize::from(allowed[i]);
                if o.inner_calls != want {
                    return Err(format!(
                        "request #{} ({:?}) was answered {} and the inner service was called {} times for it; \
                         it must be called {want} time(s){}.",
                        i + 1,
                        t.calls[i],
                        o.status,
                        o.inner_calls,
                        if want == 0 { ": a denied request never reaches it (the work the limit protects would be done anyway)" } else { "" }
                    ));
                }
            }
            if got.unready_calls > 0 {
                return Err(format!(
                    "the inner service was called {} time(s) without its own `poll_ready` first: \
                     `poll_ready` must delegate to the inner service (tower's contract: call only \
                     after ready).",
                    got.unready_calls
                ));
            }
            polled_then_called(ctx)
        });
    }

    /// A server without connection info: reported once, with the fix, and
    /// every client without an API key shares one quota.
    pub fn reports_a_missing_peer_address_once(&self) {
        let timeline = exchange::parse(
            "name=\"api\" q=2 w=10 api=x-api-key: @0s from none; @0s from none via layer; @0s from none key \"k1\"; @1s from none via same; @2s from none; @61s from none via layer; @3600s from none",
        )
        .expect("a valid timeline");
        let ctx = self.ctx();
        let t = timeline.clone();
        let outcome = self.watched(&timeline, move || {
            let got = run(ctx.tested, ctx.algorithm, &t)?;
            if got.reported != [LayerError::NoPeerAddress] {
                return Err(format!(
                    "the layer reported {:?} to its KeyRule's `report` over {} requests without a peer \
                     address (through clones and new layers); the contract reports \
                     [NoPeerAddress] once per layer, so that a log shows the fix once instead of \
                     a line per request.",
                    got.reported,
                    t.calls.len()
                ));
            }
            judge(ctx.algorithm, &t, &got)?;
            reported_once_at_once(ctx)
        });
        if let Err(e) = outcome {
            panic!("{}: {e}", self.whose());
        }
    }

    /// The layer must serve over any limiter: checked at compile time
    /// against one that is not `Clone`, as none of lessons 02–06 is.
    pub fn compiles_over_any_limiter(&self) {
        if !(self.tested().over_any_limiter)() {
            panic!(
                "{}: `RateLimitLayer<L, C>` over a limiter that is not `Clone` is not a tower \
                 `Layer` whose service is `Clone + Send + Sync` (what axum's `Router::layer` \
                 needs). None of the limiters of lessons 02–06 is `Clone`: a bound like \
                 `L: Clone`, often added by `#[derive(Clone)]` on a generic struct, makes the \
                 layer unusable with all of them. Write `Clone` by hand, cloning the `Arc`.",
                self.whose()
            );
        }
    }

    // --------------------------------------------------------------- snapshots

    /// One of [`SNAPSHOTS`], drawn and compared with its snapshot.
    pub fn named_snapshot(&self, name: &str) {
        let (_, timeline) = SNAPSHOTS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no exchange is named {name:?}"));
        self.snapshot(name, timeline);
    }

    /// A named exchange, drawn as a transcript and compared with its
    /// snapshot, which must be the model's and the reference's.
    pub fn snapshot(&self, name: &str, timeline: &str) {
        let timeline =
            exchange::parse(timeline).unwrap_or_else(|e| panic!("bad snapshot timeline: {e}"));
        let ctx = self.ctx();
        let draw = |v: HttpVariant| -> String {
            let t = timeline.clone();
            match self.watched(&timeline, move || {
                run(v, ctx.algorithm, &t).map(|r| transcript(&t, &r.answers))
            }) {
                Ok(s) => s,
                Err(e) => panic!("{}: {e}", self.whose()),
            }
        };
        let contract = model_transcript(self.algorithm, &timeline);
        let reference = draw(self.implementations.reference);
        let tested = draw(self.tested());
        crate::snapshot::assert_snapshot(
            (self.root, self.number, name),
            &format!("{timeline:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    /// For `cargo run -- compare 7 [TIMELINE]`: the subject's transcript and
    /// the reference's, the first difference named.
    pub fn print_comparison(&self, which: &str) {
        let text = match crate::http::checks::SNAPSHOTS
            .iter()
            .find(|(n, _)| *n == which.trim())
        {
            Some((_, t)) => t.to_string(),
            None if which.trim().is_empty() => SNAPSHOTS[0].1.to_string(),
            None => which.to_string(),
        };
        let timeline = exchange::parse(&text).unwrap_or_else(|e| {
            let names: Vec<&str> = SNAPSHOTS.iter().map(|(n, _)| *n).collect();
            panic!("{e}\n(name one of {} or write a timeline: `name=\"api\" q=2 w=1: @0s from 203.0.113.7; …`)", names.join(", "))
        });
        let ctx = self.ctx();
        let answers = |v: HttpVariant, t: &HttpTimeline| {
            let t2 = t.clone();
            self.watched_stop(t, move || run(v, ctx.algorithm, &t2).map(|r| r.answers))
        };
        let reference = answers(self.implementations.reference, &timeline)
            .unwrap_or_else(|e| panic!("the reference: {}", e.text()));
        let (yours, stop) = match answers(self.tested(), &timeline) {
            Ok(a) => (a, None),
            Err(e) => {
                // The answers before the request that failed, unless it hung
                // (a hang is not run again).
                let mut kept = Vec::new();
                if let Stop::Panicked(_) = e {
                    for i in 0..timeline.calls.len() {
                        match answers(self.tested(), &timeline.clone_upto(i)) {
                            Ok(a) => kept = a,
                            Err(_) => break,
                        }
                    }
                }
                (kept, Some(e))
            }
        };
        let first = (0..timeline.calls.len()).find(|&i| match (yours.get(i), reference.get(i)) {
            (Some(y), Some(r)) => seen(y) != seen(r),
            _ => true,
        });
        println!("{:?}    (yours: {})", timeline.setup, self.whose());
        for (i, call) in timeline.calls.iter().enumerate() {
            let mut request = format!("{call:?}");
            request.remove(0);
            println!("#{:<2} {request}", i + 1);
            let line = |o: Option<&Observed>| match o {
                Some(o) => seen(o),
                None => "(no answer)".to_string(),
            };
            let (y, r) = (line(yours.get(i)), line(reference.get(i)));
            let mark = if first == Some(i) {
                "   <- first difference"
            } else {
                ""
            };
            if y == r {
                println!("    both:      {y}");
            } else {
                println!("    yours:     {y}{mark}\n    reference: {r}");
            }
            if i >= yours.len() && stop.is_some() {
                break;
            }
        }
        if let Some(e) = stop {
            panic!(
                "request #{}: {} {}",
                yours.len() + 1,
                self.whose(),
                e.text()
            );
        }
        match first {
            Some(i) => println!(
                "\nfirst difference: request #{} ({:?})",
                i + 1,
                timeline.calls[i]
            ),
            None => println!(
                "\nno difference on this timeline: your answers are the reference's here. (Other \
                 timelines may still tell them apart: `cargo run -- test {}` runs every check.)",
                self.number
            ),
        }
    }

    // ------------------------------------------------------------ end to end

    /// The layer in an axum server on a loopback port, with connection
    /// info; a real HTTP client fires concurrent requests of one client at
    /// a frozen clock: exactly the quota is admitted, and the answers
    /// cross the wire intact.
    pub fn end_to_end_over_loopback(&self) {
        let ctx = self.ctx();
        let outcome = watched(
            Duration::from_secs(30),
            |_| String::new(),
            move || super::serve::concurrent_burst(ctx.tested, ctx.algorithm),
        );
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => panic!("{} over a real socket: {e}", self.whose()),
            Err(stop) => panic!("{} over a real socket: {}", self.whose(), stop.text()),
        }
    }

    /// The workshop's demo server (`cargo run -- serve`).
    pub fn demo(&self, port: u16) {
        super::serve::demo(self.tested(), self.algorithm, port);
    }

    /// Fails, naming the line, if the layer reads time or anything else
    /// but the clock it is given.
    pub fn uses_only_its_inputs(&self) {
        let v = self.tested();
        if let Err(e) =
            crate::source::check_inputs_of(&v.path(), v.source, crate::source::Inputs::Clock)
        {
            panic!("{e}");
        }
    }

    /// Fails, naming the line, if the file takes locks or atomics from
    /// anywhere but `super::sync` (whose primitives tell the watchdog where
    /// a hang is).
    pub fn uses_only_the_sync_facade(&self) {
        let v = self.tested();
        if let Err(e) = crate::source::check_sync_imports(&v.path(), v.source) {
            panic!("{e}");
        }
    }

    fn watched<R: Send + 'static>(
        &self,
        timeline: &HttpTimeline,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> Result<R, String> {
        self.watched_stop(timeline, work)
            .map_err(|stop| stop.text().to_string())
    }

    /// Runs `work` under the watchdog: a failure it returns or a panic is
    /// `Stop::Panicked`, a hang `Stop::Hung`.
    fn watched_stop<R: Send + 'static>(
        &self,
        timeline: &HttpTimeline,
        work: impl FnOnce() -> Result<R, String> + Send + 'static,
    ) -> Result<R, Stop> {
        let t = timeline.clone();
        let describe = move |i: usize| describe_call(&t, i);
        match watched(time_limit(), describe, work) {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Stop::Panicked(e)),
            Err(stop) => Err(stop),
        }
    }

    fn property(
        &self,
        name: &str,
        cases: u32,
        strategy: impl Strategy<Value = HttpTimeline>,
        check: fn(Ctx, &HttpTimeline) -> Result<(), String>,
    ) {
        let ctx = self.ctx();
        match run_property(ctx, cases, strategy, check) {
            Ok(()) => {}
            Err((reason, timeline)) => {
                let (reason, timeline) = minimize(ctx, check, reason, timeline);
                panic!(
                    "lesson {:02} ({}): property \"{name}\" fails for {}.\nsmallest timeline found: {timeline:?}\n\n{reason}\n\nreplay it beside the reference:\n  {}",
                    self.number,
                    self.title,
                    self.whose(),
                    replay(self.number, &timeline)
                )
            }
        }
    }
}

/// A timeline and the same timeline with forged `X-Forwarded-For` prefixes.
#[derive(Clone, Debug)]
struct Forged {
    honest: HttpTimeline,
    forged: HttpTimeline,
}

/// Each request of the forged timeline is counted under its honest key,
/// wherever the contract says the prefix cannot matter.
/// Each request keeps the key the layer gives it without the forged part:
/// a comparison of the layer with itself, so that only a key that follows
/// what the client wrote fails here (other key mistakes fail the
/// agreement properties). A request is left out only where the contract
/// itself lets the leftmost address decide: every address of its chain is
/// a trusted proxy.
fn forged_keys(ctx: Ctx, case: &Forged) -> Result<(), String> {
    let rule = case.honest.setup.key_rule(super::Report::stderr());
    let honest = run(ctx.tested, ctx.algorithm, &case.honest)?;
    let forged = run(ctx.tested, ctx.algorithm, &case.forged)?;
    let keys = |o: &Observed| o.checks.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    for (i, (plain, spoofed)) in case.honest.calls.iter().zip(&case.forged.calls).enumerate() {
        let api: Vec<&[u8]> = plain.api_keys.iter().map(Vec::as_slice).collect();
        let xff: Vec<&[u8]> = plain.forwarded.iter().map(Vec::as_slice).collect();
        if leftmost_decides(&rule, &api, &xff, plain.peer) {
            continue;
        }
        let (before, after) = (keys(&honest.answers[i]), keys(&forged.answers[i]));
        if before != after {
            return Err(format!(
                "request #{} was counted under {before:?}; with a forged prefix in front of its \
                 X-Forwarded-For it was counted under {after:?}.\n  without the forged part: \
                 {plain:?}\n  with it:                 {spoofed:?}\nA key that follows what the \
                 client wrote lets it buy a fresh quota with every request: only the rightmost \
                 address that no trusted proxy wrote is the client's.",
                i + 1,
            ));
        }
    }
    Ok(())
}

/// The named exchanges drawn as snapshots: `(name, timeline)`. The first
/// is what `cargo run -- compare 7` shows by default: a burst past the
/// quota, a wait that is not a whole number of seconds, and a new window.
pub const SNAPSHOTS: &[(&str, &str)] = &[
    (
        "first_look",
        "name=\"api\" q=2 w=2: @0s from 203.0.113.7; @0s from 203.0.113.7; @0s from 203.0.113.7; @0.5s from 203.0.113.7; @2s from 203.0.113.7",
    ),
    (
        "retry_after_rounds_up",
        "name=\"api\" q=1 w=3: @0s from 198.51.100.1; @0.5s from 198.51.100.1; @2s from 198.51.100.1; @2.000000001s from 198.51.100.1; @2.999999999s from 198.51.100.1; @3s from 198.51.100.1",
    ),
    (
        "behind_a_proxy",
        "name=\"api\" q=1 w=60 trust=10.0.0.0/8: @0s from 10.0.0.1 xff \"203.0.113.7\"; @0s from 10.0.0.1 xff \"1.2.3.4, 203.0.113.7\"; @0s from 10.0.0.1 xff \"5.6.7.8\" xff \"203.0.113.7, 10.0.0.2\"; @0s from 203.0.113.7 xff \"9.9.9.9\"; @0s from 10.0.0.1 xff \"unknown, 10.0.0.3\"",
    ),
    (
        "api_keys_and_ipv6",
        "name=\"per \\\"key\\\"\" q=1 w=10 api=x-api-key: @0s from 2001:db8:1:2::1 key \"k1\"; @0s from 2001:db8:1:2::1; @0s from 2001:db8:1:2::ffff; @0s from 2001:db8:1:3::1; @0s from ::ffff:192.0.2.1; @0s from 192.0.2.1 key \"k 1\"",
    ),
];

/// Four requests without a peer address through four clones on four
/// threads at once: one report. A report waits until every other request
/// is either answered or reporting itself, so a layer that checks its
/// flag, reports, and only then sets it lets every other request report
/// too, every time, however the threads are scheduled. (A layer that holds
/// a lock while it reports makes the others wait for it; the report then
/// gives up waiting after a few seconds, and one report is counted.)
fn reported_once_at_once(ctx: Ctx) -> Result<(), String> {
    use std::sync::{Barrier, Condvar, Mutex};
    use std::time::Instant;
    const THREADS: usize = 4;
    #[derive(Default)]
    struct Counts {
        reports: usize,
        reporting: usize,
        answered: usize,
    }
    let state = Arc::new((Mutex::new(Counts::default()), Condvar::new()));
    let sink = state.clone();
    let report = super::Report::from_fn(move |_| {
        let (lock, changed) = &*sink;
        let mut counts = lock.lock().unwrap_or_else(|p| p.into_inner());
        counts.reports += 1;
        counts.reporting += 1;
        changed.notify_all();
        let deadline = Instant::now() + Duration::from_secs(5);
        while counts.reporting + counts.answered < THREADS {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            counts = changed
                .wait_timeout(counts, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    });
    let policy = Policy::new("api", 100, Duration::from_secs(10));
    let parts = super::drive::Parts {
        limiter: super::drive::TestLimiter::new(ctx.algorithm, &policy),
        policy,
        keys: super::KeyRule::by_address().reporting_to(report),
        clock: super::ManualClock::default(),
        inner: super::drive::Echo::default(),
    };
    let mut layered = (ctx.tested.build)(parts)
        .map_err(|e| format!("RateLimitLayer::new refused a valid policy: {e:?}"))?;
    let services: Vec<super::drive::Svc> = (0..THREADS)
        .map(|_| layered.service(exchange::Via::Clone).clone())
        .collect();
    let start = Barrier::new(THREADS);
    let no_peer = Call {
        peer: None,
        ..Call::from(0, "192.0.2.1")
    };
    std::thread::scope(|scope| {
        for (i, mut svc) in services.into_iter().enumerate() {
            let (start, state, no_peer) = (&start, &state, &no_peer);
            scope.spawn(move || {
                use tower::{Service, ServiceExt};
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a runtime");
                start.wait();
                let req = super::drive::request(no_peer, None, i);
                let _ = runtime.block_on(async {
                    let ready = svc.ready().await.unwrap_or_else(|e| match e {});
                    ready.call(req).await
                });
                let (lock, changed) = &**state;
                lock.lock().unwrap_or_else(|p| p.into_inner()).answered += 1;
                changed.notify_all();
            });
        }
    });
    let reports = state.0.lock().unwrap_or_else(|p| p.into_inner()).reports;
    if reports != 1 {
        return Err(format!(
            "{THREADS} requests without a peer address, through {THREADS} clones on {THREADS} \
             threads at once, were reported {reports} times; the contract reports once. Check \
             and set the \"reported\" flag in one step (`AtomicBool::swap`), before reporting: \
             a load, then the report, then a store lets every request that comes in between \
             report too."
        ));
    }
    Ok(())
}

/// Two clones of the service, both made ready, then both called: each
/// call must reach the inner service instance its own `poll_ready` made
/// ready (a layer whose clones share one inner service spends one
/// readiness twice).
fn polled_then_called(ctx: Ctx) -> Result<(), String> {
    use tower::{Service, ServiceExt};
    let policy = Policy::new("api", 100, Duration::from_secs(10));
    let inner = super::drive::Echo::default();
    let log = inner.clone();
    let parts = super::drive::Parts {
        limiter: super::drive::TestLimiter::new(ctx.algorithm, &policy),
        policy,
        keys: super::KeyRule::by_address(),
        clock: super::ManualClock::default(),
        inner,
    };
    let mut layered = (ctx.tested.build)(parts)
        .map_err(|e| format!("RateLimitLayer::new refused a valid policy: {e:?}"))?;
    let mut first = layered.service(exchange::Via::Clone).clone();
    let mut second = layered.service(exchange::Via::Clone).clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let call = Call::from(0, "192.0.2.1");
    runtime.block_on(async {
        let _ = first.ready().await;
        let _ = second.ready().await;
        let _ = first.call(super::drive::request(&call, None, 0)).await;
        let _ = second.call(super::drive::request(&call, None, 1)).await;
        // A clone of a service that is ready is a service that is not.
        let _ = first.ready().await;
        let mut third = first.clone();
        let _ = third.ready().await;
        let _ = third.call(super::drive::request(&call, None, 2)).await;
        let _ = first.call(super::drive::request(&call, None, 3)).await;
    });
    match log.unready_calls() {
        0 => Ok(()),
        n => Err(format!(
            "two clones of the service were made ready, then both called: the inner service \
             was called {n} time(s) without a `poll_ready` of its own. Each clone must keep its \
             own inner service (cloned with it), so that the readiness one clone was given is \
             spent by that clone's call."
        )),
    }
}

/// What the contract answers to each request: the key and the answer.
pub fn contract(algorithm: Algorithm, t: &HttpTimeline) -> Vec<(Keyed, Expected)> {
    let rule = t.setup.key_rule(super::Report::stderr());
    let algorithm = t.setup.rule(algorithm);
    let mut model = algorithm.model(super::drive::limiter_config(&t.setup.policy, algorithm));
    t.calls
        .iter()
        .map(|c| {
            let keyed = model_key(&rule, c);
            let decision = model.decide(&keyed.key, c.at);
            let mut answer = expected(&t.setup.policy, &decision);
            if answer.reaches_inner {
                // The inner service's own answer, passed on.
                let asked = c
                    .other
                    .iter()
                    .find(|(n, _)| n == super::model::INNER_ANSWER)
                    .map(|(_, v)| v.as_str());
                let (status, retry_after) = super::model::inner_answer(asked);
                answer.status = status;
                answer.retry_after = retry_after.map(str::to_string);
            }
            (keyed, answer)
        })
        .collect()
}

/// The contract's key for a request.
fn model_key(rule: &super::KeyRule, c: &Call) -> Keyed {
    let api: Vec<&[u8]> = c.api_keys.iter().map(Vec::as_slice).collect();
    let xff: Vec<&[u8]> = c.forwarded.iter().map(Vec::as_slice).collect();
    client_key(rule, &api, &xff, c.peer)
}

/// `ip:203.0.113.7 200 r=1` / `api:k1 429 t=2`.
fn short(key: &str, e: &Expected) -> String {
    let (r, t) = parse_ratelimit(&e.ratelimit);
    match t {
        Some(t) => format!("{key} {} t={t}", e.status),
        None => format!("{key} {} r={r}", e.status),
    }
}

fn parse_ratelimit(value: &str) -> (String, Option<String>) {
    let params: Vec<&str> = value.rsplit(';').collect();
    let get = |p: &str| {
        params
            .iter()
            .find_map(|x| x.strip_prefix(p))
            .map(str::to_string)
    };
    (get("r=").unwrap_or_default(), get("t="))
}

/// The model's transcript: what the reference and the snapshot must show.
fn model_transcript(algorithm: Algorithm, t: &HttpTimeline) -> String {
    let answers: Vec<Observed> = contract(algorithm, t)
        .into_iter()
        .zip(&t.calls)
        .map(|((keyed, e), c)| {
            let mut headers = Vec::new();
            if let Some(r) = &e.retry_after {
                headers.push(("retry-after".to_string(), r.clone().into_bytes()));
            }
            headers.push(("ratelimit".to_string(), e.ratelimit.clone().into_bytes()));
            headers.push((
                "ratelimit-policy".to_string(),
                e.ratelimit_policy.clone().into_bytes(),
            ));
            Observed {
                status: e.status,
                headers,
                body: Vec::new(),
                inner_calls: usize::from(e.reaches_inner),
                inner_request_changed: false,
                checks: vec![(keyed.key, c.at)],
            }
        })
        .collect();
    transcript(t, &answers)
}

/// What two implementations must agree on: key, status, the rate-limit
/// headers, the content type and the problem body's fields.
fn seen(o: &Observed) -> String {
    let mut out = format!("key {}  →  {}", o.keys(), o.summary());
    if o.status == 429 {
        if let Ok(Some(ct)) = o.header("content-type") {
            out.push_str(&format!("  Content-Type: {}", String::from_utf8_lossy(ct)));
        }
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&o.body) {
            for f in ["type", "status", "violated-policies"] {
                out.push_str(&format!(
                    "  {f}: {}",
                    v.get(f).map(|x| x.to_string()).unwrap_or_default()
                ));
            }
        }
    }
    out
}

/// Judges a run against the contract, request by request.
pub fn judge(algorithm: Algorithm, t: &HttpTimeline, got: &Run) -> Result<(), String> {
    let want = contract(algorithm, t);
    let missing = want.iter().any(|(keyed, _)| keyed.missing_peer);
    for (i, ((keyed, e), c)) in want.iter().zip(&t.calls).enumerate() {
        let o = &got.answers[i];
        if let Some(problem) = differs(&t.setup.policy, &keyed.key, c.at, e, o) {
            return Err(format!(
                "request #{} ({c:?}): {problem}\n\nyour transcript up to there:\n{}\nthe contract's:\n{}",
                i + 1,
                transcript(&t.clone_upto(i), &got.answers),
                model_transcript(algorithm, &t.clone_upto(i))
            ));
        }
    }
    let reports = usize::from(missing);
    if got.reported.len() != reports {
        return Err(format!(
            "the layer reported {:?}; over these requests the contract reports {}",
            got.reported,
            if missing {
                "[NoPeerAddress] once"
            } else {
                "nothing"
            }
        ));
    }
    if got.unready_calls > 0 {
        return Err(format!(
            "the inner service was called {} time(s) without a `poll_ready` of its own first: \
             `poll_ready` must delegate to the inner service.",
            got.unready_calls
        ));
    }
    Ok(())
}

/// What is wrong with one answer, if anything.
fn differs(policy: &Policy, key: &str, at: u64, e: &Expected, o: &Observed) -> Option<String> {
    let asked: Vec<(&str, u64)> = o.checks.iter().map(|(k, n)| (k.as_str(), *n)).collect();
    if asked != [(key, at)] {
        return Some(format!(
            "the limiter was asked {}; the contract asks it once, for key {key:?} at {} (the \
             clock's time)",
            if asked.is_empty() {
                "nothing".to_string()
            } else {
                asked
                    .iter()
                    .map(|(k, n)| format!("{k:?} at {}", nanos(*n)))
                    .collect::<Vec<_>>()
                    .join(", then ")
            },
            nanos(at)
        ));
    }
    if o.status != e.status {
        return Some(format!(
            "the status was {}; the contract says {}",
            o.status, e.status
        ));
    }
    let header = |name: &str, want: Option<&str>| -> Option<String> {
        match o.header(name) {
            Err(e) => Some(e),
            Ok(got) => {
                let got = got.map(|v| String::from_utf8_lossy(v).into_owned());
                (got.as_deref() != want).then(|| match (got, want) {
                    (None, Some(w)) => {
                        format!("there was no {name} header; the contract sends `{name}: {w}`")
                    }
                    (Some(g), None) => format!(
                        "`{name}: {g}` was sent; the contract sends no {name} on a {} response",
                        o.status
                    ),
                    (Some(g), Some(w)) => {
                        format!("`{name}: {g}` was sent; the contract says `{name}: {w}`")
                    }
                    (None, None) => unreachable!(),
                })
            }
        }
    };
    if let Some(p) = header("ratelimit-policy", Some(&e.ratelimit_policy))
        .or_else(|| header("ratelimit", Some(&e.ratelimit)))
        .or_else(|| header("retry-after", e.retry_after.as_deref()))
    {
        return Some(p);
    }
    let inner = usize::from(e.reaches_inner);
    if o.inner_calls != inner {
        return Some(format!(
            "the inner service was called {} time(s) for it; the contract calls it {inner} time(s)",
            o.inner_calls
        ));
    }
    if o.inner_request_changed {
        return Some(
            "the request reached the inner service changed: its `ConnectInfo<SocketAddr>`, \
             method, URI or header lines were not the ones it came with. The handlers behind \
             the layer read them (the peer's address, `X-Forwarded-For`, …): read the request; \
             leave it as it is."
                .into(),
        );
    }
    if e.reaches_inner {
        for (name, _) in super::model::INNER_HEADERS {
            let sent: Vec<&[u8]> = super::model::INNER_HEADERS
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_bytes())
                .collect();
            let kept: Vec<&[u8]> = o
                .headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v.as_slice())
                .collect();
            if kept != sent {
                let shown = |lines: &[&[u8]]| {
                    lines
                        .iter()
                        .map(|l| String::from_utf8_lossy(l).into_owned())
                        .collect::<Vec<_>>()
                };
                return Some(format!(
                    "the inner service sent `{name}` as {:?} and the client got {:?}: an allowed \
                     request gets the inner service's response as it was (every line of every \
                     header), plus the layer's two rate-limit headers",
                    shown(&sent),
                    shown(&kept)
                ));
            }
        }
        if o.body != super::drive::INNER_BODY.as_bytes() {
            return Some("the inner service's body was not passed on as it was".into());
        }
    } else {
        if let Some(p) = header("content-type", Some("application/problem+json")) {
            return Some(p);
        }
        if let Some(p) = problem_body_errors(policy, &o.body) {
            return Some(format!("the 429's problem body is wrong: {p}"));
        }
    }
    None
}

impl HttpTimeline {
    /// The setup and the requests up to and including the `i`th.
    pub fn clone_upto(&self, i: usize) -> HttpTimeline {
        HttpTimeline {
            setup: self.setup.clone(),
            calls: self.calls[..=i.min(self.calls.len().saturating_sub(1))].to_vec(),
        }
    }
}

fn describe_call(t: &HttpTimeline, i: usize) -> String {
    t.calls
        .get(i)
        .map(|c| format!("request #{} ({c:?})", i + 1))
        .unwrap_or_else(|| "a request".into())
}

fn build_only(v: HttpVariant, algorithm: Algorithm, policy: Policy) -> Result<(), PolicyError> {
    let limiter =
        super::drive::TestLimiter::new(algorithm, &Policy::new("x", 1, Duration::from_secs(1)));
    let parts = super::drive::Parts {
        limiter,
        policy,
        keys: super::KeyRule::by_address(),
        clock: super::ManualClock::default(),
        inner: super::drive::Echo::default(),
    };
    (v.build)(parts).map(|_| ())
}

/// Runs one property (see [`crate::run::run_cases`]).
fn run_property<T: std::fmt::Debug + Clone + Send + 'static>(
    ctx: Ctx,
    cases: u32,
    strategy: impl Strategy<Value = T>,
    check: impl Fn(Ctx, &T) -> Result<(), String> + Send + Sync + Copy + 'static,
) -> Result<(), (String, T)> {
    crate::run::run_cases(
        ctx.subject,
        cases,
        1024,
        &strategy,
        |_, i| format!("request #{}", i + 1),
        move |t| check(ctx, t),
    )
    .map_err(|f| (f.reason, f.value))
}

/// Drops requests one at a time while the check still fails.
fn minimize(
    ctx: Ctx,
    check: fn(Ctx, &HttpTimeline) -> Result<(), String>,
    reason: String,
    t: HttpTimeline,
) -> (String, HttpTimeline) {
    drop_requests(
        ctx,
        check,
        reason,
        t,
        |t| t.calls.len(),
        |t, i| {
            t.calls.remove(i);
        },
    )
}

/// Drops requests one at a time (`remove`) while `check` still fails, at
/// most [`SHRINK_RUNS`] runs. A run that hangs is not a smaller version of
/// the same failure.
fn drop_requests<T: Clone + Send + 'static>(
    ctx: Ctx,
    check: fn(Ctx, &T) -> Result<(), String>,
    mut reason: String,
    mut value: T,
    len: fn(&T) -> usize,
    remove: fn(&mut T, usize),
) -> (String, T) {
    let mut i = 0;
    let mut budget = SHRINK_RUNS;
    while i < len(&value) && len(&value) > 1 && budget > 0 {
        budget -= 1;
        let mut smaller = value.clone();
        remove(&mut smaller, i);
        let s = smaller.clone();
        match watched(time_limit(), |_| String::new(), move || check(ctx, &s)) {
            Ok(Err(m)) => (value, reason) = (smaller, m),
            Err(Stop::Panicked(m)) => (value, reason) = (smaller, format!("{} {m}", ctx.subject)),
            _ => i += 1,
        }
    }
    (reason, value)
}

/// How many runs shrinking a failure by dropping requests may take.
const SHRINK_RUNS: usize = 200;

/// The command that replays a timeline beside the reference.
pub fn replay(number: u32, t: &HttpTimeline) -> String {
    let text = format!("{t:?}").replace('\'', "'\\''");
    format!("cargo run -- compare {number} '{text}'")
}
