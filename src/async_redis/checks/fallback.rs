//! The fallback's own contract: `OnFailure::Local` answers from lesson 09's
//! bounded store, and every decision is counted, the fallback's by why
//! Redis did not answer.

use std::sync::Arc;
use std::time::Duration;

use super::AsyncLesson;
use crate::async_redis::drive::{runtime, AsyncLimiter};
use crate::async_redis::{metric, Bounds, OnFailure, Overflow, Reason, Settings};
use crate::decision::{describe, Decision};
use crate::infra::server::{free_port, RedisServer};
use crate::redis_limiter::checks::faults::admin;
use crate::redis_limiter::drive::{settings_at, RuleKind, RULES};
use crate::render::call;
use crate::store::metrics::{
    expected_metrics, f64Bits, same_series, series, show_metrics, Contract, Metrics, Recorded,
};
use crate::store::model::BoundedModel;
use crate::time::Timestamp;
use crate::timeline::Config;

/// Lesson 10's metrics: lesson 09's, and the fallback's decisions by reason.
pub(crate) const LESSON_10: Contract = &[
    (metric::DECISIONS, &[metric::POLICY, metric::OUTCOME]),
    (metric::KEYS, &[metric::POLICY]),
    (metric::EVICTIONS, &[metric::POLICY]),
    (metric::OVERFLOWS, &[metric::POLICY]),
    (metric::FALLBACKS, &[metric::POLICY, metric::REASON]),
];

/// The `policy` label the checks configure.
const POLICY: &str = "kata-10";
/// The local store's bound in the bounded check: small, so that a few
/// keys fill it.
const MAX_KEYS: usize = 3;
const TIMEOUT: Duration = Duration::from_millis(250);
/// For a series that reads nothing though the code counts it.
const STATIC: &str = "(A series that reads nothing though your code counts it: a handle kept \
                      in a `static` or a `OnceLock` belongs to the recorder in place when it \
                      was first registered, not to this check's. Register handles per limiter, \
                      in `new`, or use `metrics::counter!` where you count.)";

/// Adds `n` to a counter series of `want`.
pub(crate) fn add(want: &mut Metrics, name: &str, labels: &[(&str, &str)], n: u64) {
    if n == 0 {
        return;
    }
    let key = series(name, labels);
    let before = want.get(&key).map_or(0.0, |v| f64::from_bits(v.0));
    want.insert(key, f64Bits((before + n as f64).to_bits()));
}

/// Settings on `url` as the fallback checks set them.
fn settings(url: &str, on_failure: OnFailure, max_keys: usize) -> Settings {
    let mut settings = Settings::from(settings_at(url));
    settings.timeout = TIMEOUT;
    settings.on_failure = on_failure;
    settings.local = Bounds::new(POLICY, max_keys, Overflow::Deny);
    settings
}

impl AsyncLesson {
    /// The tested implementation, built inside `runtime`.
    fn build_in(
        &self,
        runtime: &tokio::runtime::Runtime,
        rule: crate::async_redis::Rule,
        settings: Settings,
    ) -> Arc<dyn AsyncLimiter> {
        let _inside = runtime.enter();
        (self.tested().build)(rule, settings)
            .unwrap_or_else(|e| panic!("new({rule:?}, …) returned Err({e:?})"))
    }

    /// Redis refuses every connection and the policy is `Local`: every
    /// answer is lesson 09's bounded store's (at most 3 keys, a new key
    /// denied when it is full, or admitted untracked for the sliding log's
    /// `Overflow::Admit`), for each rule, and the metrics say so. A store
    /// of no keys is refused (`ZeroKeys`).
    pub fn the_local_fallback_is_bounded(&self) {
        // A port nothing listens on: every connection is refused at once.
        let port = free_port().unwrap_or_else(|e| panic!("no free loopback port: {e}"));
        let url = format!("redis://127.0.0.1:{port}/");
        let (limit, period) = (2, Duration::from_secs(1));
        let rule = RuleKind::FixedWindow.rule(limit, period);
        let built = {
            let runtime = runtime();
            let _inside = runtime.enter();
            (self.tested().build)(rule, settings(&url, OnFailure::Local, 0)).map(|_| ())
        };
        if built != Err(crate::decision::ConfigError::ZeroKeys) {
            self.fail(
                "the check of the local fallback",
                format!(
                    "new({rule:?}, settings) with settings.local.max_keys = 0 returned \
                     {built:?}; it must return Err(ZeroKeys): lesson 09's store refuses to hold \
                     no key. `kata::async_redis::LocalLimiter::new(&rule, settings.local.clone())` \
                     returns that error: build the fallback's store with it, once, in `new`, and \
                     pass its error on (lesson 08's `LocalLimiter` takes no bounds: a store \
                     without a bound)"
                ),
            );
        }
        for kind in RULES {
            let mut settings = settings(&url, OnFailure::Local, MAX_KEYS);
            if kind == RuleKind::SlidingLog {
                settings.local.overflow = Overflow::Admit;
            }
            let bounds = settings.local.clone();
            let rule = kind.rule(limit, period);
            let runtime = runtime();
            let mut model = BoundedModel::of(
                kind.algorithm().model(Config { limit, period }),
                bounds.clone(),
            );
            let recorder = Recorded::default();
            let mut history = Vec::new();
            let calls = calls();
            let n = calls.len() as u64;
            metrics::with_local_recorder(&recorder, || {
                // Built with the recorder in place: handles registered in
                // `new` record to it.
                let limiter = self.build_in(&runtime, rule, settings);
                for (i, (key, at)) in calls.iter().enumerate() {
                    let overflows = model.counts.overflows;
                    let want = model.check(key, at.as_nanos(), false);
                    let overflowed = model.counts.overflows > overflows;
                    let got = runtime.block_on(limiter.check(key, *at));
                    history.push(format!(
                        "  {:>2}. {:<28} {}",
                        i + 1,
                        call(key, *at),
                        describe(&want)
                    ));
                    if got != want {
                        let fresh = Decision::Allowed {
                            remaining: limit - 1,
                        };
                        let why = if overflowed && got == fresh {
                            format!(
                                " The store already held {MAX_KEYS} keys, none of them fresh \
                                 yet, so a new key gets the overflow answer ({:?}): the \
                                 fallback must hold at most `settings.local.max_keys` keys, \
                                 and yours answered as if it had room. Build it once, as \
                                 `LocalLimiter::new(&rule, settings.local.clone())` from \
                                 `kata::async_redis` (lesson 09's store), not lesson 08's \
                                 unbounded one: an app server cut off from Redis would \
                                 otherwise keep a key for every client it sees.",
                                bounds.overflow
                            )
                        } else if overflowed {
                            " The store was full, so this is the overflow answer, which \
                                 `settings.local.overflow` chooses: Deny answers denied until \
                                 the first held key is forgotten, Admit answers allowed (0 \
                                 remaining) and tracks nothing. Build the store from \
                                 `settings.local` whole, not from bounds of your own."
                                .to_string()
                        } else {
                            String::new()
                        };
                        self.fail(
                            "the check of the local fallback",
                            format!(
                                "{}, on_failure Local, local bounds max_keys {MAX_KEYS} with \
                                 Overflow::{:?}, and nothing listening at {url} (every \
                                 connection refused). Call {} answered {}; lesson 09's bounded \
                                 store answers {}.{why}\nThe calls so far, with the store's \
                                 answers:\n{}",
                                kind.name(),
                                bounds.overflow,
                                i + 1,
                                describe(&got),
                                describe(&want),
                                history.join("\n")
                            ),
                        );
                    }
                }
            });
            // Each call's reason is `connection_refused`, or `timeout` for a
            // client that retries a refused connection until the timeout
            // (`ConnectionManager`): either, as long as they add up.
            let got = recorder.read();
            let mut want = expected_metrics(POLICY, &model.counts);
            let fallbacks = |reason: Reason| {
                series(
                    metric::FALLBACKS,
                    &[(metric::POLICY, POLICY), (metric::REASON, reason.label())],
                )
            };
            let read = |reason| {
                got.get(&fallbacks(reason))
                    .map_or(0, |v| f64::from_bits(v.0) as u64)
            };
            let (refused, timeouts) = (read(Reason::ConnectionRefused), read(Reason::Timeout));
            if refused + timeouts == n {
                for (reason, count) in [
                    (Reason::ConnectionRefused, refused),
                    (Reason::Timeout, timeouts),
                ] {
                    add(
                        &mut want,
                        metric::FALLBACKS,
                        &[(metric::POLICY, POLICY), (metric::REASON, reason.label())],
                        count,
                    );
                }
            } else {
                add(
                    &mut want,
                    metric::FALLBACKS,
                    &[
                        (metric::POLICY, POLICY),
                        (metric::REASON, Reason::ConnectionRefused.label()),
                    ],
                    n,
                );
            }
            if let Err(e) = same_series(&want, &got, LESSON_10) {
                self.fail(
                    "the check of the local fallback's metrics",
                    format!(
                        "{}, on_failure Local, every connection refused, after {n} calls each \
                         answered by the fallback: {e}\nEvery decision counts in {} (by \
                         outcome), and each fallback decision also in {} with the reason \
                         `Reason::of(&error).label()`; `LocalLimiter` records its store's \
                         series itself. {STATIC}",
                        kind.name(),
                        metric::DECISIONS,
                        metric::FALLBACKS
                    ),
                );
            }
        }
    }

    /// A healthy server, then paused, out of memory, and a replica whose
    /// master is down: each call is counted by its outcome, and each of the
    /// policy's by why (`timeout`, `error_reply`, `cluster_down`).
    pub fn fallback_decisions_are_counted_by_reason(&self) {
        let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
        let retry_after = Duration::from_secs(1);
        let settings = settings(&server.url(), OnFailure::Closed { retry_after }, 10_000);
        let open_settings = Settings {
            on_failure: OnFailure::Open,
            ..settings.clone()
        };
        let rule = RuleKind::FixedWindow.rule(100, Duration::from_secs(3600));
        let runtime = runtime();
        let recorder = Recorded::default();
        let mut want = Metrics::new();
        let mut rows = Vec::new();
        let mut t = 100;
        metrics::with_local_recorder(&recorder, || {
            // Two app servers' limiters: one closed on failure, one open.
            let closed = self.build_in(&runtime, rule, settings);
            let open = self.build_in(&runtime, rule, open_settings);
            // Warm: connected, the script loaded (bounded: a loaded machine
            // may miss the first timeout); what it recorded is the baseline.
            let warm = [&closed, &open].iter().all(|limiter| {
                (0..10).any(|i| {
                    let at = Timestamp::from_secs(i);
                    runtime.block_on(limiter.check("warm", at)).is_allowed()
                })
            });
            if !warm {
                self.fail(
                    "the check of the fallback's metrics",
                    "with Redis healthy, 10 calls never got Redis's answer (allowed)".into(),
                );
            }
            want = recorder.read();
            let mut calls = |phase: &str, n: usize, reason: Option<Reason>, on_failure| {
                let (limiter, policy) = match on_failure {
                    OnFailure::Open => (&open, Decision::Allowed { remaining: 0 }),
                    _ => (&closed, Decision::Denied { retry_after }),
                };
                for _ in 0..n {
                    t += 1;
                    let at = Timestamp::from_secs(t);
                    let got = runtime.block_on(limiter.check("k", at));
                    let (wanted, outcome) = match reason {
                        None => ("Redis's answer, allowed".to_string(), metric::ALLOWED),
                        Some(r) => (
                            format!("{}, counted as {r}", describe(&policy)),
                            if policy.is_allowed() {
                                metric::ALLOWED
                            } else {
                                metric::DENIED
                            },
                        ),
                    };
                    rows.push(format!(
                        "  {phase:<44} {:<28} {:<34} wanted: {wanted}",
                        call("k", at),
                        describe(&got)
                    ));
                    let right = match reason {
                        None => got.is_allowed(),
                        Some(_) => got == policy,
                    };
                    if !right {
                        self.fail(
                            "the check of the fallback's metrics",
                            format!(
                                "a fixed window of 100 per hour, timeout {TIMEOUT:?}, on_failure \
                                 Closed {{ retry_after: 1s }} (and Open where it says):\n{}",
                                rows.join("\n")
                            ),
                        );
                    }
                    add(
                        &mut want,
                        metric::DECISIONS,
                        &[(metric::POLICY, POLICY), (metric::OUTCOME, outcome)],
                        1,
                    );
                    if let Some(r) = reason {
                        add(
                            &mut want,
                            metric::FALLBACKS,
                            &[(metric::POLICY, POLICY), (metric::REASON, r.label())],
                            1,
                        );
                    }
                }
            };
            let closed = OnFailure::Closed { retry_after };
            calls("healthy", 2, None, closed);
            server.pause();
            calls("paused (SIGSTOP)", 2, Some(Reason::Timeout), closed);
            calls(
                "paused, the limiter open on failure",
                2,
                Some(Reason::Timeout),
                OnFailure::Open,
            );
            server.resume();
            calls("resumed", 1, None, closed);
            admin(
                &server,
                &["CONFIG", "SET", "maxmemory-policy", "noeviction"],
            );
            admin(&server, &["CONFIG", "SET", "maxmemory", "1"]);
            calls(
                "out of memory (OOM replies)",
                2,
                Some(Reason::ErrorReply),
                closed,
            );
            admin(&server, &["CONFIG", "SET", "maxmemory", "0"]);
            calls("memory back", 1, None, closed);
            // A replica whose master is gone, told not to serve stale data:
            // every command gets `MASTERDOWN`.
            let port = free_port().unwrap_or_else(|e| panic!("no free loopback port: {e}"));
            admin(
                &server,
                &["CONFIG", "SET", "replica-serve-stale-data", "no"],
            );
            admin(&server, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
            calls(
                "master down (MASTERDOWN replies)",
                2,
                Some(Reason::ClusterDown),
                closed,
            );
            admin(&server, &["REPLICAOF", "NO", "ONE"]);
            admin(
                &server,
                &["CONFIG", "SET", "replica-serve-stale-data", "yes"],
            );
            calls("a master again", 1, None, closed);
        });
        if let Err(e) = same_series(&want, &recorder.read(), LESSON_10) {
            self.fail(
                "the check of the fallback's metrics",
                format!(
                    "a fixed window of 100 per hour, timeout {TIMEOUT:?}, on_failure Closed \
                     {{ retry_after: 1s }} (and Open where it says), policy label {POLICY:?}; the \
                     calls:\n{}\n{e}\nEvery \
                     answer counts once in {} by its outcome; each of the failure policy's also \
                     once in {} by why Redis did not answer: `Reason::Timeout` when your \
                     timeout ran out, `Reason::of(&error)` for an error. {STATIC} Want: {}",
                    rows.join("\n"),
                    metric::DECISIONS,
                    metric::FALLBACKS,
                    show_metrics(&want)
                ),
            );
        }
    }
}

/// The bounded check's calls: six keys for a store of three, at times that
/// fill it, overflow it, and let its keys become fresh (a small fixed
/// generator: the same calls every run).
fn calls() -> Vec<(String, Timestamp)> {
    let mut state = 0x2545_f491_u64;
    let mut t = 0u64;
    (0..48)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let key = ["a", "b", "c", "d", "e", "f"][(state >> 33) as usize % 6];
            t += [0, 0, 90, 240, 410][(state >> 45) as usize % 5];
            (key.to_string(), Timestamp::from_nanos(t * 1_000_000))
        })
        .collect()
}
