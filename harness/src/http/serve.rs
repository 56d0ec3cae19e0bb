//! The layer in a real axum server on a loopback port: the end-to-end check
//! and the workshop's demo server.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use super::drive::{AnyClock, Echo, HttpVariant, TestLimiter};
use super::{KeyRule, LayerError, ManualClock, MonotonicClock, Policy, Report, UNKNOWN_CLIENT};
use crate::models::Algorithm;
use crate::time::Timestamp;

/// How many requests the end-to-end check fires at once, and the quota.
const FIRED: usize = 24;
const QUOTA: u64 = 5;

/// Fires [`FIRED`] concurrent requests of one client through the layer in
/// a real server at a frozen clock: exactly [`QUOTA`] pass, each with its
/// own `remaining`, and the 429s cross the wire with their headers. Then a
/// server started without connection info: the layer reports it once and
/// still limits, never answering 500.
pub fn concurrent_burst(variant: HttpVariant, algorithm: Algorithm) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let limit = crate::watchdog::time_limit();
    let outcome = runtime.block_on(async {
        tokio::time::timeout(limit, burst(variant, algorithm))
            .await
            .map_err(|_| {
                format!(
                    "the server did not answer all requests within {} s (a request that never \
                     completes, or a layer that blocks its worker thread)",
                    limit.as_secs()
                )
            })?
    });
    // The servers' tasks end with the runtime. A worker stuck in the layer
    // is left behind rather than waited for.
    runtime.shutdown_background();
    outcome
}

struct Served {
    url: String,
    inner: Echo,
    reported: super::Reported,
}

async fn serve(
    variant: HttpVariant,
    algorithm: Algorithm,
    policy: Policy,
    connect_info: bool,
) -> Result<Served, String> {
    let (report, reported) = Report::collect();
    let inner = Echo::default();
    let counted = inner.clone();
    let router = (variant.router)(
        axum::Router::new().route_service("/", inner),
        TestLimiter::new(algorithm, &policy),
        policy.clone(),
        KeyRule::by_address().reporting_to(report),
        AnyClock::Manual(ManualClock::new(Timestamp::ZERO)),
    )
    .map_err(|e| format!("RateLimitLayer::new refused a valid policy: {e:?}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("no loopback port: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let app = router;
    if connect_info {
        tokio::spawn(async move {
            let _ = axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .await;
        });
    } else {
        tokio::spawn(async move {
            let _ = axum::serve(listener, app.into_make_service()).await;
        });
    }
    Ok(Served {
        url: format!("http://{addr}/"),
        inner: counted,
        reported,
    })
}

async fn fire(url: &str, n: usize) -> Result<Vec<Response<Vec<u8>>>, String> {
    let client: Client<_, Body> = Client::builder(TokioExecutor::new()).build_http();
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let client = client.clone();
        let url = url.to_string();
        set.spawn(async move {
            let req = Request::get(url.as_str())
                .body(Body::empty())
                .expect("a request");
            let res = client
                .request(req)
                .await
                .map_err(|e| format!("the request failed: {e}"))?;
            let (parts, body) = res.into_parts();
            let body = body
                .collect()
                .await
                .map_err(|e| format!("the body failed: {e}"))?;
            Ok::<_, String>(Response::from_parts(parts, body.to_bytes().to_vec()))
        });
    }
    let mut out = Vec::new();
    while let Some(r) = set.join_next().await {
        out.push(r.map_err(|e| format!("a client task failed: {e}"))??);
    }
    Ok(out)
}

fn header<'a>(r: &'a Response<Vec<u8>>, name: &str) -> &'a str {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(none)")
}

async fn burst(variant: HttpVariant, algorithm: Algorithm) -> Result<(), String> {
    let policy = Policy::new("api", QUOTA, Duration::from_secs(60));
    let served = serve(variant, algorithm, policy.clone(), true).await?;
    let answers = fire(&served.url, FIRED).await?;
    // What the contract answers, in some order: the model's answers to the
    // same requests of one key at one instant.
    let mut model = algorithm.model(super::drive::limiter_config(&policy, algorithm));
    let expected: Vec<super::model::Expected> = (0..FIRED)
        .map(|_| super::model::expected(&policy, &model.decide("ip:127.0.0.1", 0)))
        .collect();
    let ok: Vec<&Response<Vec<u8>>> = answers.iter().filter(|r| r.status() == 200).collect();
    let denied: Vec<&Response<Vec<u8>>> = answers.iter().filter(|r| r.status() == 429).collect();
    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    let admitted = expected.iter().filter(|e| e.status == 200).count();
    if ok.len() != admitted || denied.len() != FIRED - admitted {
        return Err(format!(
            "{FIRED} concurrent requests from one client (127.0.0.1) at one instant, quota {QUOTA} \
             per 60 s: {} were admitted and {} denied (statuses {statuses:?}); exactly {admitted} \
             must be admitted. More means the layer's clones (axum clones the service for every \
             connection) do not share one limiter.",
            ok.len(),
            denied.len()
        ));
    }
    let seen = |r: &Response<Vec<u8>>| {
        let mut line = format!("{}", r.status().as_u16());
        for name in ["retry-after", "ratelimit", "ratelimit-policy"] {
            line.push_str(&format!("  {name}: {}", header(r, name)));
        }
        line
    };
    let mut got: Vec<String> = answers.iter().map(seen).collect();
    let mut want: Vec<String> = expected
        .iter()
        .map(|e| {
            format!(
                "{}  retry-after: {}  ratelimit: {}  ratelimit-policy: {}",
                e.status,
                e.retry_after.as_deref().unwrap_or("(none)"),
                e.ratelimit,
                e.ratelimit_policy
            )
        })
        .collect();
    got.sort();
    want.sort();
    if got != want {
        let first = got.iter().zip(&want).find(|(g, w)| g != w);
        return Err(format!(
            "{FIRED} concurrent requests at one instant: the answers that arrived are not the \
             contract's (in any order). First difference, sorted: {first:?}"
        ));
    }
    let d = denied[0];
    if header(d, "content-type") != "application/problem+json" {
        return Err(format!(
            "a 429 arrived with `content-type: {}`; the contract sends `application/problem+json`",
            header(d, "content-type")
        ));
    }
    if let Some(p) = super::model::problem_body_errors(&policy, d.body()) {
        return Err(format!("a 429's body, as it arrived: {p}"));
    }
    let inner = served.inner.calls();
    if inner != admitted {
        return Err(format!(
            "the route behind the layer ran {inner} times for {admitted} admitted requests"
        ));
    }

    // Without connection info.
    let blind = serve(variant, algorithm, policy, false).await?;
    let answers = fire(&blind.url, 3).await?;
    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    if statuses.iter().any(|s| *s != 200 && *s != 429) {
        return Err(format!(
            "a server started without connection info answered {statuses:?}; the contract keys \
             such requests as {UNKNOWN_CLIENT} and reports the misconfiguration once, never a 500"
        ));
    }
    if blind.reported.all() != [LayerError::NoPeerAddress] {
        return Err(format!(
            "a server started without connection info: after 3 requests the layer had reported {:?}; \
             the contract reports [NoPeerAddress] once",
            blind.reported.all()
        ));
    }
    Ok(())
}

/// Resolves when the process that started this one ends (on Unix: the
/// parent changes), so that a demo server never outlives its command.
async fn parent_gone() {
    #[cfg(unix)]
    {
        let parent = std::os::unix::process::parent_id();
        let mut every = tokio::time::interval(Duration::from_millis(500));
        loop {
            every.tick().await;
            if std::os::unix::process::parent_id() != parent {
                return;
            }
        }
    }
    #[cfg(not(unix))]
    std::future::pending::<()>().await
}

/// The process's Prometheus recorder, installed as the global recorder the
/// first time a demo server is built.
fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            // Another recorder already installed (by a test of its own)
            // keeps its place; /metrics then shows only what reaches this one.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// The demo's policy: 5 requests per 10 s per client.
pub fn demo_policy() -> Policy {
    Policy::new("demo", 5, Duration::from_secs(10))
}

/// The demo API: the layer under test over lesson 09's bounded limiter (the
/// harness's model of it, 10_000 keys, reporting through `metrics`), and
/// `/metrics` beside it, outside the limit, in Prometheus's text format.
/// Returns the router and the limiter, for a task that sweeps it.
pub fn demo_router(
    variant: HttpVariant,
    algorithm: Algorithm,
    clock: MonotonicClock,
) -> Result<(axum::Router, TestLimiter), String> {
    let policy = demo_policy();
    let keys = KeyRule::by_address()
        .with_api_key("x-api-key")
        .and_then(|k| k.trusting(&["127.0.0.1", "::1"]))
        .expect("a valid key rule");
    let handle = prometheus();
    let limiter = TestLimiter::metered(algorithm, &policy, 10_000);
    let site = axum::Router::new().fallback(|| async { "hello from the demo API\n" });
    let router = (variant.router)(
        site,
        limiter.clone(),
        policy,
        keys,
        AnyClock::Monotonic(clock),
    )
    .map_err(|e| format!("RateLimitLayer::new refused the demo's policy: {e}"))?;
    let router = router.route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            async move { handle.render() }
        }),
    );
    Ok((router, limiter))
}

/// Sweeps the demo's limiter once a second, on the server's clock.
async fn sweeping(limiter: TestLimiter, clock: MonotonicClock) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        limiter.sweep(super::Clock::now(&clock));
    }
}

/// The workshop's demo: the layer under test in an axum API on a loopback
/// port, with the kata's model of lesson 09's limiter behind it and a real
/// clock, and `/metrics`; prints the URL and curl lines, and serves until
/// stopped.
pub fn demo(variant: HttpVariant, algorithm: Algorithm, port: u16) {
    let clock = MonotonicClock::new();
    let (router, limiter) =
        demo_router(variant, algorithm, clock).unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .unwrap_or_else(|e| panic!("cannot listen on 127.0.0.1:{port}: {e} (choose another with --port)"));
        let addr = listener.local_addr().expect("an address");
        println!(
            "Serving {} on http://{addr}/ with policy \"demo\": 5 requests per 10 s per client.\n\
             Try, in another terminal:\n\
             \x20 curl -i http://{addr}/\n\
             \x20 curl -i -H 'x-api-key: my-key' http://{addr}/\n\
             \x20 curl -i -H 'X-Forwarded-For: 203.0.113.7' http://{addr}/   (127.0.0.1 is a trusted proxy here)\n\
             \x20 curl http://{addr}/metrics   (Prometheus's text format; not limited)\n\
             \x20 cargo run -- load http://{addr}/ --rate 20 --seconds 5   (a load, and a verdict)\n\
             Stop with Ctrl-C.",
            variant.file
        );
        tokio::spawn(sweeping(limiter, clock));
        let serve = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>());
        tokio::select! {
            // Whoever read our output may be gone too: say it if we can.
            _ = parent_gone() => {
                let _ = writeln!(std::io::stdout(), "stopped: the command that started the server ended");
            }
            r = serve => if let Err(e) = r { eprintln!("the server stopped: {e}") },
            _ = tokio::signal::ctrl_c() => {
                let _ = writeln!(std::io::stdout(), "stopped");
            }
        }
    });
}
