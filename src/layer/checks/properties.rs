//! The properties of the layer on generated timelines, the inner service's
//! calls, the missing peer address, and how a failing timeline is shrunk.

use std::sync::Arc;
use std::time::Duration;

use proptest::strategy::Strategy;

use super::replay;
use super::verdict::{contract, judge, seen, wrong_key};
use super::{Ctx, HttpLesson};
use crate::layer::drive::run;
use crate::layer::exchange::{self, transcript, Call, HttpTimeline, Observed};
use crate::layer::model::leftmost_decides;
use crate::layer::{gen, LayerError, Policy};
use crate::subject::Subject;
use crate::text::{count, times};
use crate::watchdog::{time_limit, watched, Stop};

impl HttpLesson {
    /// Status, every rate-limit header byte, the problem body, the key and
    /// instant the limiter is asked for, and the inner service's calls, for
    /// every request of generated timelines, against the model.
    pub fn agrees_with_model(&self) {
        self.property("agrees with the model", 256, gen::timelines(14), with_model);
    }

    /// The same answers as the reference, request by request.
    pub fn agrees_with_reference(&self) {
        self.property(
            "agrees with the reference",
            128,
            gen::timelines(14),
            with_reference,
        );
    }

    /// Whatever a client writes in front of its `X-Forwarded-For`, a request
    /// that comes through the trusted chain keeps its key, and a directly
    /// connected client keeps its own.
    pub fn keys_cannot_be_forged(&self) {
        if let Some((reason, case)) = falsify_forged_keys(self.ctx()) {
            panic!(
                "lesson {:02} ({}): property \"keys cannot be forged\" fails for {}.\nsmallest timeline found (with the forged parts): {:?}\n\n{reason}\n\nreplay it beside the reference:\n  {}",
                self.facts.number,
                self.facts.title,
                self.whose(),
                case.forged,
                replay(self.facts.number, &case.forged)
            );
        }
    }

    /// The inner service is called exactly once for each allowed request,
    /// after a `poll_ready` of its own, and never for a denied one.
    pub fn calls_the_inner_service_once_per_allowed_request(&self) {
        self.property(
            "calls the inner service once per allowed request",
            128,
            gen::timelines(10),
            inner_calls,
        );
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
                    "the layer reported {:?} to its KeyRule's `report` over {} without a peer \
                     address (through clones and new layers); the contract reports \
                     [NoPeerAddress] once per layer, so that a log shows the fix once instead of \
                     a line per request.",
                    got.reported,
                    count(t.calls.len(), "request")
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

    fn property(
        &self,
        name: &str,
        cases: u32,
        strategy: impl Strategy<Value = HttpTimeline>,
        check: Check,
    ) {
        if let Some((reason, timeline)) = falsify(self.ctx(), cases, strategy, check) {
            panic!(
                "lesson {:02} ({}): property \"{name}\" fails for {}.\nsmallest timeline found: {timeline:?}\n\n{reason}\n\nreplay it beside the reference:\n  {}",
                self.facts.number,
                self.facts.title,
                self.whose(),
                replay(self.facts.number, &timeline)
            )
        }
    }
}

/// Every request's answer, key and inner calls as the model's.
pub(super) fn with_model(ctx: Ctx, t: &HttpTimeline) -> Result<(), String> {
    judge(ctx.algorithm, t, &run(ctx.tested, ctx.algorithm, t)?)
}

/// The same answers as the reference, request by request.
pub(super) fn with_reference(ctx: Ctx, t: &HttpTimeline) -> Result<(), String> {
    if ctx.subject == Subject::Reference {
        return Ok(());
    }
    let yours = run(ctx.tested, ctx.algorithm, t)?;
    let reference = run(ctx.reference, ctx.algorithm, t)?;
    for (i, (y, r)) in yours.answers.iter().zip(&reference.answers).enumerate() {
        let (ys, rs) = (seen(y), seen(r));
        if ys != rs {
            let answers = format!("\n  yours:         {ys}\n  the reference: {rs}");
            let at = format!("request #{} ({:?}):", i + 1, t.calls[i]);
            let lead = match wrong_key(t, &contract(ctx.algorithm, t), &yours.answers, i) {
                Some((k, wrong)) if k == i => format!("{wrong}{answers}"),
                Some((_, wrong)) => format!("{wrong}\nThen, at {at}{answers}"),
                None => format!("{at}{answers}"),
            };
            return Err(format!(
                "{lead}\n\n{}",
                transcript(&t.clone_upto(i), &yours.answers)
            ));
        }
    }
    Ok(())
}

/// The inner service is called once for each allowed request, after a
/// `poll_ready` of its own, and never for a denied one.
pub(super) fn inner_calls(ctx: Ctx, t: &HttpTimeline) -> Result<(), String> {
    let got = run(ctx.tested, ctx.algorithm, t)?;
    let want = contract(ctx.algorithm, t);
    for (i, o) in got.answers.iter().enumerate() {
        let (keyed, e) = &want[i];
        if o.inner_calls != usize::from(e.reaches_inner) {
            let called = |request: String| {
                format!(
                    "{request} was answered {} and the inner service was {} for it",
                    o.status,
                    match o.inner_calls {
                        0 => "not called".to_string(),
                        n => format!("called {}", times(n)),
                    }
                )
            };
            let request = format!("request #{} ({:?})", i + 1, t.calls[i]);
            let contract = if e.reaches_inner {
                format!(
                    "the contract allows it (under key {:?}) and calls the inner service once",
                    keyed.key
                )
            } else {
                format!(
                    "the contract denies it (429, under key {:?}) and never calls the inner \
                     service: a denied request never reaches it (the work the limit protects \
                     would be done anyway)",
                    keyed.key
                )
            };
            return Err(match wrong_key(t, &want, &got.answers, i) {
                Some((k, wrong)) => format!(
                    "{wrong}\nThen {}, where {contract}. Fix the key first: the answers follow \
                     from it.",
                    called(if k == i { "it".into() } else { request })
                ),
                None => format!("{}; {contract}.", called(request)),
            });
        }
    }
    if got.unready_calls > 0 {
        return Err(super::verdict::unready(got.unready_calls));
    }
    polled_then_called(ctx)
}

/// A property of one timeline: `Err` says what is wrong.
pub(super) type Check = fn(Ctx, &HttpTimeline) -> Result<(), String>;

/// Runs a property on generated timelines: its smallest failure found, if
/// any (shrunk by proptest, then by dropping requests).
pub(super) fn falsify(
    ctx: Ctx,
    cases: u32,
    strategy: impl Strategy<Value = HttpTimeline>,
    check: Check,
) -> Option<(String, HttpTimeline)> {
    let (reason, timeline) = run_property(ctx, cases, strategy, check).err()?;
    Some(minimize(ctx, check, reason, timeline))
}

/// Runs "keys cannot be forged": its smallest failure found, if any.
pub(super) fn falsify_forged_keys(ctx: Ctx) -> Option<(String, Forged)> {
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
    let (reason, case) = run_property(ctx, 256, strategy, forged_keys).err()?;
    Some(drop_requests(
        ctx,
        forged_keys,
        reason,
        case,
        |c| c.honest.calls.len(),
        |c, i| {
            c.honest.calls.remove(i);
            c.forged.calls.remove(i);
        },
    ))
}

/// A timeline and the same timeline with forged `X-Forwarded-For` prefixes.
#[derive(Clone, Debug)]
pub(super) struct Forged {
    pub(super) honest: HttpTimeline,
    pub(super) forged: HttpTimeline,
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
    let rule = case.honest.setup.key_rule(crate::layer::Report::stderr());
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
    let report = crate::layer::Report::from_fn(move |_| {
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
    let parts = crate::layer::drive::Parts {
        limiter: crate::layer::drive::TestLimiter::new(ctx.algorithm, &policy),
        policy,
        keys: crate::layer::KeyRule::by_address().reporting_to(report),
        clock: crate::layer::ManualClock::default(),
        inner: crate::layer::drive::Echo::default(),
    };
    let mut layered = (ctx.tested.build)(parts)
        .map_err(|e| format!("RateLimitLayer::new refused a valid policy: {e:?}"))?;
    let services: Vec<crate::layer::drive::Svc> = (0..THREADS)
        .map(|_| layered.service(exchange::Via::Clone).clone())
        .collect();
    let start = Barrier::new(THREADS);
    let no_peer = Call {
        peer: None,
        ..Call::from(0, "192.0.2.1")
    };
    let output = crate::trial::Output::current();
    std::thread::scope(|scope| {
        for (i, mut svc) in services.into_iter().enumerate() {
            let (start, state, no_peer) = (&start, &state, &no_peer);
            let output = output.clone();
            scope.spawn(move || {
                // A panic here shows under the check, as with libtest.
                crate::trial::Output::adopt(output);
                use tower::{Service, ServiceExt};
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .expect("a runtime");
                start.wait();
                let req = crate::layer::drive::request(no_peer, None, i);
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
             threads at once, were reported {}; the contract reports once. Check \
             and set the \"reported\" flag in one step (`AtomicBool::swap`), before reporting: \
             a load, then the report, then a store lets every request that comes in between \
             report too.",
            times(reports)
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
    let inner = crate::layer::drive::Echo::default();
    let log = inner.clone();
    let parts = crate::layer::drive::Parts {
        limiter: crate::layer::drive::TestLimiter::new(ctx.algorithm, &policy),
        policy,
        keys: crate::layer::KeyRule::by_address(),
        clock: crate::layer::ManualClock::default(),
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
        let _ = first
            .call(crate::layer::drive::request(&call, None, 0))
            .await;
        let _ = second
            .call(crate::layer::drive::request(&call, None, 1))
            .await;
        // A clone of a service that is ready is a service that is not.
        let _ = first.ready().await;
        let mut third = first.clone();
        let _ = third.ready().await;
        let _ = third
            .call(crate::layer::drive::request(&call, None, 2))
            .await;
        let _ = first
            .call(crate::layer::drive::request(&call, None, 3))
            .await;
    });
    match log.unready_calls() {
        0 => Ok(()),
        n => Err(format!(
            "two clones of the service were made ready, then both called: the inner service \
             was called {} without a `poll_ready` of its own. Each clone must keep its \
             own inner service (cloned with it), so that the readiness one clone was given is \
             spent by that clone's call.",
            times(n)
        )),
    }
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
fn minimize(ctx: Ctx, check: Check, reason: String, t: HttpTimeline) -> (String, HttpTimeline) {
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
