//! The layer in a real axum server on a loopback port: the end-to-end check.
//! (The workshop's demo server, `cargo run -- serve`, is the demo crate's.)

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use super::drive::{Echo, HttpVariant, TestLimiter};
use super::{KeyRule, LayerError, ManualClock, Policy, Report, UNKNOWN_CLIENT};
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
        .on_thread_start(crate::trial::Output::inherited())
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
        ManualClock::new(Timestamp::ZERO),
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
            "the route behind the layer ran {} for {admitted} admitted {}",
            crate::text::times(inner),
            crate::text::plural(admitted, "request")
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
