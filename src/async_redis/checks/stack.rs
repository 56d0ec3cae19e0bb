//! The whole service: three app server processes (lesson 08's, the test
//! binary run again), each serving the file's layer over the file's limiter
//! in an axum server on a loopback port, on one current-thread runtime, all
//! on one Redis. One client sends its requests round robin: the service as
//! a whole keeps one limit, a paused Redis gets the failure policy's answer
//! within the timeout from every process without stalling it, and each
//! process's `/metrics` counts what it answered.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::fallback::{add, LESSON_10};
use super::AsyncLesson;
use crate::async_redis::drive::{runtime, AsyncVariant};
use crate::async_redis::{metric, Bounds, OnFailure, Overflow, Reason, Settings};
use crate::infra::server::{next_id, RedisServer};
use crate::layer::{ManualClock, Policy};
use crate::redis_limiter::drive::{RuleKind, GRACE, RULES, SERVERS};
use crate::redis_limiter::processes::{answer_error, ask, hex, unhex};
use crate::store::metrics::{f64Bits, same_series, show_metrics, Metrics, Recorded};
use crate::time::Timestamp;
use crate::timeline::Config;
use crate::watchdog::time_limit;

/// The header that sets an app server's clock for a request (the harness's
/// own layer, outside the learner's).
const NOW: &str = "x-kata-now";
const LIMIT: u64 = 5;
const WINDOW: Duration = Duration::from_secs(10);
const TIMEOUT: Duration = Duration::from_millis(300);
/// What a request may take past the timeout with Redis paused: less than
/// one more timeout, so that requests waiting for each other show.
const MARGIN: Duration = Duration::from_millis(500);
/// Requests sent to each app server at once while Redis is paused.
const AT_ONCE: usize = 4;

// ------------------------------------------------------------ in the child

/// In an app server process: `http FILE RULE LIMIT PERIOD URL PREFIX
/// TIMEOUT POLICY` starts the file's stack on a loopback port and answers
/// `ok URL`. Other lines are lesson 08's.
pub(crate) fn answer(fields: &[&str], all: &[AsyncVariant]) -> Option<String> {
    let ["http", file, rule, limit, period, url, prefix, timeout, policy] = fields else {
        return None;
    };
    let started = (|| {
        let file = unhex(file)?;
        let v = *all
            .iter()
            .find(|v| v.file == file)
            .ok_or_else(|| format!("no implementation is compiled from {file}"))?;
        let number = |s: &str| s.parse::<u64>().map_err(|e| e.to_string());
        let kind = RULES[number(rule)? as usize];
        let (limit, period) = (number(limit)?, Duration::from_nanos(number(period)?));
        let policy = unhex(policy)?;
        let mut settings = Settings::new(&unhex(url)?).map_err(|e| e.to_string())?;
        settings.prefix = unhex(prefix)?;
        settings.timeout = Duration::from_nanos(number(timeout)?);
        settings.ttl_grace = GRACE;
        settings.on_failure = OnFailure::Closed {
            retry_after: Duration::from_secs(1),
        };
        settings.local = Bounds::new(&policy, 10_000, Overflow::Deny);
        let http = Policy::new(&policy, limit, period);
        start(v, kind.rule(limit, period), settings, http)
    })();
    Some(match started {
        Ok(url) => format!("ok {url}"),
        Err(e) => format!("fail {}", hex(&e)),
    })
}

/// Serves the stack on a thread of its own, on a current-thread runtime
/// (a call that blocks stalls the whole app server, as on a busy one) with
/// a recorder of its own; returns its URL once it listens.
fn start(
    v: AsyncVariant,
    rule: crate::async_redis::Rule,
    settings: Settings,
    policy: Policy,
) -> Result<String, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    crate::trial::spawn(move || {
        let runtime = runtime();
        let recorder = Arc::new(Recorded::default());
        let shown = recorder.clone();
        metrics::with_local_recorder(&*recorder, || {
            runtime.block_on(async move {
                let clock = ManualClock::new(Timestamp::ZERO);
                let hello = axum::Router::new().fallback(|| async { "hello\n" });
                let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    (v.stack)(hello, rule, settings, policy, clock.clone())
                }));
                let router = match built {
                    Ok(Ok(router)) => router,
                    Ok(Err(e)) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                    Err(_) => {
                        let text = crate::watchdog::take_panic()
                            .unwrap_or_else(|| "a panic without a message".into());
                        let _ = tx.send(Err(format!("building the stack panicked: {text}")));
                        return;
                    }
                };
                let router = router
                    .route(
                        "/metrics",
                        axum::routing::get(move || async move { show(&shown.read()) }),
                    )
                    .layer(tower::util::MapRequestLayer::new(
                        move |req: Request<Body>| {
                            let now = req.headers().get(NOW).and_then(|v| v.to_str().ok());
                            if let Some(nanos) = now.and_then(|v| v.parse().ok()) {
                                clock.set(Timestamp::from_nanos(nanos));
                            }
                            req
                        },
                    ));
                let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = tx.send(Err(format!("no loopback port: {e}")));
                        return;
                    }
                };
                let addr = listener.local_addr().map(|a| a.to_string());
                let _ = tx.send(
                    addr.map(|a| format!("http://{a}/"))
                        .map_err(|e| e.to_string()),
                );
                let _ = axum::serve(
                    listener,
                    router.into_make_service_with_connect_info::<SocketAddr>(),
                )
                .await;
            })
        });
    });
    match rx.recv_timeout(time_limit()) {
        Ok(listening) => listening,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(format!(
            "the app server did not listen within {} s",
            time_limit().as_secs()
        )),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err("the app server's thread ended before it listened".into())
        }
    }
}

/// A recorder's series, one per line: `name{labels} value`.
fn show(m: &Metrics) -> String {
    m.iter().map(|(k, v)| format!("{k} {v:?}\n")).collect()
}

fn parse(text: &str) -> Result<Metrics, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (series, value) = l
                .rsplit_once(' ')
                .ok_or_else(|| format!("cannot read the line {l:?}"))?;
            let value: f64 = value.parse().map_err(|e| format!("{l:?}: {e}"))?;
            Ok((series.to_string(), f64Bits(value.to_bits())))
        })
        .collect()
}

// ----------------------------------------------------------- in the check

/// One request of the check and what became of it (`want`: `None` for a
/// request whose answer is not judged).
struct Row {
    phase: &'static str,
    server: usize,
    at: Timestamp,
    got: Result<(StatusCode, String, Duration), String>,
    want: Option<StatusCode>,
}

fn table(rows: &[Row]) -> String {
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let got = match &r.got {
                Ok((status, ratelimit, took)) => format!(
                    "{} {ratelimit:<22} in {} ms",
                    status.as_u16(),
                    took.as_millis()
                ),
                Err(e) => e.clone(),
            };
            let want = r.want.map_or("any".to_string(), |w| w.as_u16().to_string());
            format!(
                "  {:>2}. {:<22} app server {} at {:>5.1} s: {got:<44} wanted {want}",
                i + 1,
                r.phase,
                r.server + 1,
                r.at.as_nanos() as f64 / 1e9
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the check's client answers with: a status, the `RateLimit` header,
/// how long it took, the body.
type Answer = (StatusCode, String, Duration, String);

/// A GET of `url` at `at` (the app server's clock).
async fn get(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Body>,
    url: &str,
    at: Option<Timestamp>,
) -> Result<Answer, String> {
    let mut req = Request::get(url);
    if let Some(at) = at {
        req = req.header(NOW, at.as_nanos().to_string());
    }
    let req = req.body(Body::empty()).expect("a request");
    let started = Instant::now();
    let res = tokio::time::timeout(time_limit(), client.request(req))
        .await
        .map_err(|_| format!("no answer within {} s", time_limit().as_secs()))?
        .map_err(|e| {
            format!(
                "the request failed ({e}): the app server closed the connection, as when the \
                 layer or the limiter panics while answering"
            )
        })?;
    let status = res.status();
    let ratelimit = res
        .headers()
        .get("ratelimit")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = res
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("the body failed: {e}"))?
        .to_bytes();
    Ok((
        status,
        ratelimit,
        started.elapsed(),
        String::from_utf8_lossy(&body).into_owned(),
    ))
}

/// The check's one client, the app servers' URLs, and what it saw.
struct Service {
    runtime: tokio::runtime::Runtime,
    client: Client<hyper_util::client::legacy::connect::HttpConnector, Body>,
    urls: Vec<String>,
    rows: Vec<Row>,
}

impl Service {
    /// One request to app server `server` at `at`, its row kept; the
    /// status, or why there was none.
    fn request(
        &mut self,
        phase: &'static str,
        server: usize,
        at: Timestamp,
        want: Option<StatusCode>,
    ) -> Result<StatusCode, String> {
        let got = self
            .runtime
            .block_on(get(&self.client, &self.urls[server], Some(at)))
            .map(|(s, r, took, _)| (s, r, took));
        let status = got.as_ref().map(|(s, _, _)| *s).map_err(Clone::clone);
        self.rows.push(Row {
            phase,
            server,
            at,
            got,
            want,
        });
        status
    }

    /// What app server `server` recorded, from its `/metrics`.
    fn metrics(&self, server: usize) -> Result<Metrics, String> {
        let url = format!("{}metrics", self.urls[server]);
        let (_, _, _, body) = self.runtime.block_on(get(&self.client, &url, None))?;
        parse(&body)
    }
}

fn status(allowed: bool) -> StatusCode {
    if allowed {
        StatusCode::OK
    } else {
        StatusCode::TOO_MANY_REQUESTS
    }
}

impl AsyncLesson {
    /// In an app server process the checks started: lesson 08's commands,
    /// and `http` (the whole stack on a loopback port).
    pub fn serve_app_server(&self) {
        let i = &self.subjects.implementations;
        let mut all = vec![i.learner, i.stub, i.reference];
        all.extend(i.mistakes.iter().map(|(_, v)| *v));
        all.extend(i.alternatives.iter().map(|(_, v)| *v));
        crate::redis_limiter::processes::serve_with(
            &self.subjects.map(|v| v.blocking).implementations,
            &mut |fields| answer(fields, &all),
        );
    }

    /// Three app server processes, each the file's layer over the file's
    /// limiter, on one Redis; one client round robin. The whole service
    /// admits what one limiter would; with Redis paused every process
    /// answers the policy's 429 within the timeout, 4 requests at once
    /// without one waiting for another; then Redis answers again; and each
    /// process's `/metrics` counts its decisions, the fallback's by reason.
    pub fn three_app_servers_keep_one_limit(&self) {
        let redis = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
        let kind = RuleKind::FixedWindow;
        let policy = format!("stack-{}", next_id());
        let line = format!(
            "http {} {} {LIMIT} {} {} {} {} {}",
            hex(self.tested().file),
            kind.index_in(&RULES),
            WINDOW.as_nanos(),
            hex(&redis.url()),
            hex(&format!("kata:{}:", next_id())),
            TIMEOUT.as_nanos(),
            hex(&policy)
        );
        let what = "the check of three app servers";
        let setting = format!(
            "three app server processes, each the file's AsyncRateLimitLayer over its \
             AsyncRedisLimiter (a fixed window of {LIMIT} per {} s, timeout {} ms, on failure \
             Closed {{ retry_after: 1s }}) on one current-thread runtime, all on one Redis; one \
             client",
            WINDOW.as_secs(),
            TIMEOUT.as_millis()
        );
        let urls: Vec<String> = (0..SERVERS)
            .map(|i| {
                let answer = ask(i, &line).unwrap_or_else(|e| panic!("{e}"));
                match answer.split_once(' ') {
                    Some(("ok", url)) => url.to_string(),
                    _ => self.fail(
                        what,
                        format!(
                            "app server process {} could not serve the stack: {}",
                            i + 1,
                            answer_error(&answer)
                        ),
                    ),
                }
            })
            .collect();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .on_thread_start(crate::trial::Output::inherited())
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"));
        let client = {
            let _inside = runtime.enter();
            Client::builder(TokioExecutor::new()).build_http()
        };
        let mut service = Service {
            runtime,
            client,
            urls,
            rows: Vec::new(),
        };
        let mut problems: Vec<String> = Vec::new();
        let stop = |service: &Service, problem: String| -> ! {
            self.fail(
                what,
                format!("{setting}:\n{}\n- {problem}", table(&service.rows)),
            )
        };
        // Warm: each app server connected and its script loaded, in a window
        // of its own, not judged; what it recorded is each one's baseline.
        for server in 0..SERVERS {
            if let Err(e) = service.request("warming up", server, Timestamp::ZERO, None) {
                stop(&service, format!("app server {}: {e}", server + 1));
            }
        }
        let mut want: Vec<Metrics> = (0..SERVERS)
            .map(|server| {
                service.metrics(server).unwrap_or_else(|e| {
                    stop(
                        &service,
                        format!("app server {}'s /metrics: {e}", server + 1),
                    )
                })
            })
            .collect();
        let count = |want: &mut Metrics, status: StatusCode| {
            let outcome = if status == StatusCode::OK {
                metric::ALLOWED
            } else {
                metric::DENIED
            };
            let labels = [
                (metric::POLICY, policy.as_str()),
                (metric::OUTCOME, outcome),
            ];
            add(want, metric::DECISIONS, &labels, 1);
        };
        let mut model = kind.algorithm().model(Config {
            limit: LIMIT,
            period: WINDOW,
        });
        let mut n = 0;
        // One limit: round robin, a request every 1.5 s over three windows,
        // then (after Redis was paused) six in a fourth.
        let mut one_limit =
            |service: &mut Service, want: &mut Vec<Metrics>, phase, at: Timestamp| {
                let server = n % SERVERS;
                n += 1;
                let wanted = status(model.decide("the client", at.as_nanos()).is_allowed());
                count(&mut want[server], wanted);
                let got = service
                    .request(phase, server, at, Some(wanted))
                    .unwrap_or_else(|e| stop(service, format!("app server {}: {e}", server + 1)));
                (got == wanted).then_some(()).ok_or((got, wanted))
            };
        let mut first_wrong = None;
        for i in 0..15u64 {
            let at = Timestamp::from_millis(10_000 + i * 1500);
            if let Err(wrong) = one_limit(&mut service, &mut want, "one client", at) {
                first_wrong = first_wrong.or(Some((service.rows.len(), wrong)));
            }
        }
        match first_wrong {
            Some((i, (got, _))) if got == StatusCode::OK => problems.push(format!(
                "request {i} was allowed where one limit of {LIMIT} per {} s for the whole \
                 service denies it. Three processes share nothing but Redis: a key, a count \
                 or a clock that differs by process (a process id, a host name, a counter in \
                 memory) makes each app server keep a limit of its own",
                WINDOW.as_secs()
            )),
            Some((i, (got, wanted))) => problems.push(format!(
                "request {i} got {got} where one limit answers {wanted}: a 429 from the \
                 failure policy (Redis did not answer within {} ms), or a request counted more \
                 than once",
                TIMEOUT.as_millis()
            )),
            None => {}
        }
        // Redis paused: every app server gets AT_ONCE requests at once.
        redis.pause();
        let paused_at = Timestamp::from_secs(35);
        let answers = service.runtime.block_on(async {
            let mut set = tokio::task::JoinSet::new();
            for (server, url) in service.urls.iter().enumerate() {
                for _ in 0..AT_ONCE {
                    let (client, url) = (service.client.clone(), url.clone());
                    set.spawn(async move { (server, get(&client, &url, Some(paused_at)).await) });
                }
            }
            let mut all = Vec::new();
            while let Some(joined) = set.join_next().await {
                all.push(joined.expect("a request task ends"));
            }
            all.sort_by_key(|(server, _)| *server);
            all
        });
        redis.resume();
        // Past the scripts the paused server had queued: they ran before
        // this answer, so none counts in the next window.
        crate::redis_limiter::checks::faults::admin(&redis, &["PING"]);
        let (mut slow, mut slowest) = (Vec::new(), Duration::ZERO);
        let denied = StatusCode::TOO_MANY_REQUESTS;
        for (server, got) in answers {
            let got = got.map(|(s, r, took, _)| (s, r, took));
            match &got {
                Ok((s, _, took)) => {
                    if *s != denied {
                        problems.push(format!(
                            "with Redis paused, app server {} answered {s}; the failure policy \
                             (Closed) answers 429",
                            server + 1
                        ));
                    }
                    if *took > TIMEOUT + MARGIN {
                        if !slow.contains(&(server + 1)) {
                            slow.push(server + 1);
                        }
                        slowest = slowest.max(*took);
                    }
                }
                Err(e) => problems.push(format!(
                    "with Redis paused, a request to app server {}: {e}",
                    server + 1
                )),
            }
            count(&mut want[server], denied);
            let labels = [
                (metric::POLICY, policy.as_str()),
                (metric::REASON, Reason::Timeout.label()),
            ];
            add(&mut want[server], metric::FALLBACKS, &labels, 1);
            service.rows.push(Row {
                phase: "Redis paused",
                server,
                at: paused_at,
                got,
                want: Some(denied),
            });
        }
        if !slow.is_empty() {
            problems.push(format!(
                "with Redis paused, requests to app server {slow:?} took up to {} ms, past the \
                 timeout of {} ms: {AT_ONCE} requests at once on an app server's one runtime \
                 thread each waited for the one before, as when a call blocks the thread (a \
                 blocking client or a blocking wait inside `check`)",
                slowest.as_millis(),
                TIMEOUT.as_millis()
            ));
        }
        // Redis back, a new window: the answers of one limit again.
        let mut wrong_after = false;
        for i in 0..6u64 {
            let at = Timestamp::from_millis(40_000 + i * 500);
            wrong_after |= one_limit(&mut service, &mut want, "Redis resumed", at).is_err();
        }
        if wrong_after && first_wrong.is_none() {
            problems.push(
                "after Redis resumed, the answers are not one limit's: an app server that \
                 stays on its failure policy, or on a connection that broke, never goes back"
                    .to_string(),
            );
        }
        // Each process's own metrics: its baseline, and what it answered since.
        if problems.is_empty() {
            for (server, want) in want.iter().enumerate() {
                let check = service.metrics(server).and_then(|got| {
                    same_series(want, &got, LESSON_10)
                        .map_err(|e| format!("{e}\nIt recorded: {}", show_metrics(&got)))
                });
                if let Err(e) = check {
                    problems.push(format!("app server {}'s /metrics: {e}", server + 1));
                    break;
                }
            }
        }
        if !problems.is_empty() {
            let problem = problems.join("\n- ");
            stop(&service, problem);
        }
    }
}
