//! What lesson 10 adds to lesson 08's calls: they wait without holding the
//! runtime's thread, each ends within the timeout, and concurrent calls
//! share one connection, their commands pipelined on it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::relay::Relay;
use super::AsyncLesson;
use crate::async_redis::drive::{runtime, AsyncLimiter};
use crate::async_redis::{Redis, Settings};
use crate::decision::{describe, Decision};
use crate::heartbeat::beside_heartbeat;
use crate::infra::proxy::panic_text;
use crate::infra::server::RedisServer;
use crate::redis_limiter::drive::{settings_on, RuleKind};
use crate::redis_limiter::OnFailure;
use crate::render::call;
use crate::time::Timestamp;

/// The timeout the runtime check configures, and what a call may take
/// past it.
const TIMEOUT: Duration = Duration::from_millis(400);
const MARGIN: Duration = Duration::from_millis(300);
/// Far past what a busy machine delays a ready task by, well short of the
/// timeout a blocking call holds the thread for.
const HELD: Duration = Duration::from_millis(250);
/// Calls made at once while Redis is paused.
const AT_ONCE: usize = 8;
/// Concurrent calls in the connection check.
const CONCURRENT: usize = 64;

/// What the paused run saw.
struct Paused {
    before: Decision,
    during: Vec<(String, Decision, Duration)>,
    together: Duration,
    after: Decision,
}

impl AsyncLesson {
    /// Redis paused (SIGSTOP) under a current-thread runtime that also runs
    /// a heartbeat: the heartbeat keeps beating, every one of calls made at
    /// once gets the failure policy's answer within the timeout (all of
    /// them together within one timeout), and once Redis is back the same
    /// instance gets Redis's answers again.
    pub fn calls_never_block_the_runtime(&self) {
        let server = Arc::new(RedisServer::start().unwrap_or_else(|e| panic!("{e}")));
        let mut settings = Settings::from(settings_on(&server));
        settings.timeout = TIMEOUT;
        let policy = Decision::Denied {
            retry_after: Duration::from_secs(7),
        };
        settings.on_failure = OnFailure::Closed {
            retry_after: Duration::from_secs(7),
        };
        let rule = RuleKind::FixedWindow.rule(3, Duration::from_secs(3600));
        let build = self.tested().build;
        let at = Timestamp::from_secs(10);
        let (tx, rx) = std::sync::mpsc::channel();
        let paused = server.clone();
        crate::trial::spawn(move || {
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                beside_heartbeat(async move {
                    let limiter = build(rule, settings)
                        .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
                    let before = limiter.check("k", at).await;
                    paused.pause();
                    let started = Instant::now();
                    let during = at_once(&limiter, AT_ONCE, at).await;
                    let together = started.elapsed();
                    paused.resume();
                    let after = limiter.check("k", at).await;
                    Paused {
                        before,
                        during,
                        together,
                        after,
                    }
                })
            }));
            let _ = tx.send(run);
        });
        let setup = format!(
            "a fixed window of 3 per hour, timeout {TIMEOUT:?}, on_failure Closed {{ retry_after: 7s }}; \
             {AT_ONCE} calls at once on a current-thread tokio runtime, Redis paused (SIGSTOP)"
        );
        let what = "the check that a call never blocks the runtime";
        let hung = crate::watchdog::time_limit();
        let (seen, beats) = match rx.recv_timeout(hung) {
            Ok(Ok(Ok(done))) => done,
            Ok(Ok(Err(e))) => panic!("{e}"),
            Ok(Err(p)) => {
                server.resume();
                self.fail(
                    what,
                    format!("{setup}:\nthe limiter panicked: {}", panic_text(&p)),
                )
            }
            Err(_) => {
                server.resume();
                self.fail(
                    what,
                    format!(
                        "{setup}:\nthe calls had not ended {} s after Redis was paused. A call must \
                         end within its timeout however long Redis keeps silent: bound each one \
                         with `tokio::time::timeout(settings.timeout, …)`, connecting included.",
                        hung.as_secs()
                    ),
                )
            }
        };
        let mut problems = Vec::new();
        let first = Decision::Allowed { remaining: 2 };
        if seen.before != first {
            problems.push(format!(
                "before Redis was paused, {} answered {}; Redis's answer is {}",
                call("k", at),
                describe(&seen.before),
                describe(&first)
            ));
        }
        if beats.held_for(HELD) {
            problems.push(format!(
                "the runtime's heartbeat, a task beside the calls, was kept from running for {:?} \
                 at a stretch: a call blocked the thread every task of the runtime runs on, as a \
                 blocking socket read or `std::thread::sleep` does (in axum, every request on \
                 that worker waits). Use the redis crate's async API and await it \
                 (`get_multiplexed_async_connection`, `invoke_async`, `query_async`), never its \
                 blocking `Connection`, `query` or `invoke`",
                beats.longest_gap
            ));
        }
        let late = seen
            .during
            .iter()
            .filter(|c| c.2 > TIMEOUT + MARGIN)
            .count();
        for (key, answer, took) in &seen.during {
            if *took > TIMEOUT + MARGIN {
                problems.push(format!(
                    "{} took {took:?}, past its timeout of {TIMEOUT:?}{}",
                    call(key, at),
                    if late > 1 && !beats.held_for(HELD) {
                        " (calls made at once that end one timeout after another wait for each \
                         other: a lock held across an `.await`, a `tokio::sync::Mutex` around the \
                         connection, makes each call queue behind the one that waits on Redis)"
                    } else {
                        ""
                    }
                ));
            }
            if *answer != policy {
                problems.push(format!(
                    "{} answered {} while Redis was paused; the failure policy's answer is {}",
                    call(key, at),
                    describe(answer),
                    describe(&policy)
                ));
            }
        }
        let slowest = seen.during.iter().map(|c| c.2).max().unwrap_or_default();
        if seen.together > TIMEOUT + MARGIN && slowest <= TIMEOUT + MARGIN {
            problems.push(format!(
                "the {AT_ONCE} calls made at once took {:?} together, though none took more than \
                 {slowest:?}: they ran one after another{}",
                seen.together,
                if beats.held_for(HELD) {
                    ", each holding the runtime's thread while it waited (see above)"
                } else {
                    ". Each must be under way while the others wait on Redis"
                }
            ));
        }
        let again = Decision::Allowed { remaining: 1 };
        if seen.after != again {
            problems.push(format!(
                "once Redis was back, {} answered {}; Redis's answer is {} (a failure must not \
                 leave the limiter on its policy: the next call asks Redis again, on a new \
                 connection if the old one broke)",
                call("k", at),
                describe(&seen.after),
                describe(&again)
            ));
        }
        if !problems.is_empty() {
            self.fail(what, format!("{setup}:\n- {}", problems.join("\n- ")));
        }
    }

    /// 64 calls made at once, Redis's replies held back until every
    /// command has had time to arrive: all 64 commands reach Redis while
    /// the first waits, and no call opens a connection of its own.
    pub fn concurrent_calls_share_one_connection(&self) {
        let server = RedisServer::shared();
        let relay = Relay::start(server.addr());
        let mut settings = Settings::from(settings_on(server));
        settings.redis = Redis::Server(relay.url());
        let rule = RuleKind::FixedWindow.rule(1_000, Duration::from_secs(3600));
        let build = self.tested().build;
        let at = Timestamp::from_secs(10);
        let relay = Arc::new(relay);
        let watched = relay.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        crate::trial::spawn(move || {
            let relay = watched;
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                runtime().block_on(async {
                    let limiter = {
                        build(rule, settings)
                            .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"))
                    };
                    let warm = limiter.try_check("w", at).await;
                    let (opened, sent) = (relay.connections(), relay.commands());
                    relay.hold();
                    let calls: Vec<_> = (0..CONCURRENT)
                        .map(|i| {
                            let l = limiter.clone();
                            tokio::spawn(async move { l.try_check(&format!("c{i}"), at).await })
                        })
                        .collect();
                    // Bounded: the commands arrive in milliseconds or not at all.
                    let deadline = Instant::now() + Duration::from_secs(2);
                    while relay.commands() - sent < CONCURRENT && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    let arrived = relay.commands() - sent;
                    relay.release();
                    let mut answers = Vec::new();
                    for c in calls {
                        answers.push(c.await.map_err(|e| e.to_string()));
                    }
                    (warm, arrived, relay.connections() - opened, answers)
                })
            }));
            let _ = tx.send(run);
        });
        let what = "the check that concurrent calls share one connection";
        let (warm, arrived, opened, answers) = match rx.recv_timeout(crate::watchdog::time_limit())
        {
            Ok(Ok(done)) => done,
            Ok(Err(p)) => self.fail(what, format!("the limiter panicked: {}", panic_text(&p))),
            Err(_) => {
                relay.release();
                self.fail(
                    what,
                    format!(
                        "{CONCURRENT} calls at once had not ended {} s after they began, Redis \
                         answering: a call waits on something that never comes",
                        crate::watchdog::time_limit().as_secs()
                    ),
                )
            }
        };
        let setup = format!(
            "a fixed window of 1000 per hour; {CONCURRENT} calls at once on one instance, each \
             for a key of its own, Redis's replies held back until the calls' commands arrived"
        );
        let want = Decision::Allowed { remaining: 999 };
        match warm {
            Ok(d) if d == want => {}
            other => self.fail(
                what,
                format!(
                    "{setup}:\nthe first call, {}, returned {other:?}; Redis's answer is {}",
                    call("w", at),
                    describe(&want)
                ),
            ),
        }
        let mut problems = Vec::new();
        if arrived < CONCURRENT {
            problems.push(format!(
                "while the reply to the first was held back, the commands of only {arrived} of \
                 the {CONCURRENT} calls reached Redis: the others waited for it. A multiplexed \
                 connection sends every caller's command at once and matches the replies as they \
                 come (pipelining); a lock held across the `.await` of a call makes them queue"
            ));
        }
        if opened > 1 {
            problems.push(format!(
                "the {CONCURRENT} calls opened {opened} connections to Redis: each costs a TCP \
                 handshake and a client slot on the server (10,000 by default), per call or per \
                 pool entry. One `MultiplexedConnection` (cheap to clone) serves every call"
            ));
        }
        for (i, a) in answers.iter().enumerate() {
            if a.as_ref().ok().and_then(|r| r.as_ref().ok()) != Some(&want) {
                problems.push(format!(
                    "{} returned {a:?}; Redis's answer is {}",
                    call(&format!("c{i}"), at),
                    describe(&want)
                ));
                break;
            }
        }
        if !problems.is_empty() {
            self.fail(what, format!("{setup}:\n- {}", problems.join("\n- ")));
        }
    }
}

/// `n` calls made at once on the runtime, each timed: `k0`, `k1`, ….
async fn at_once(
    limiter: &Arc<dyn AsyncLimiter>,
    n: usize,
    at: Timestamp,
) -> Vec<(String, Decision, Duration)> {
    let calls: Vec<_> = (0..n)
        .map(|i| {
            let l = limiter.clone();
            tokio::spawn(async move {
                let key = format!("k{i}");
                let started = Instant::now();
                let answer = l.check(&key, at).await;
                (key, answer, started.elapsed())
            })
        })
        .collect();
    let mut out = Vec::new();
    for c in calls {
        match c.await {
            Ok(done) => out.push(done),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    out
}
