//! `cargo run -- serve`: the workshop's demo. The layer of the kata's
//! serving lesson (the learner's file, or the reference's), compiled in by
//! this crate's build script, in an axum API on a loopback port: over the
//! harness's model of lesson 09's bounded limiter (10,000 keys, reporting
//! through `metrics`), on a real clock, with `/metrics` beside it in
//! Prometheus's text format. Prints the URL and curl lines, and serves until
//! stopped, or until the command that started it ends.
//!
//! `serve [--port N]` (0 picks a free port).
//!
//! Built for lesson 10 (`KATA_DEMO_LESSON`), it serves the learner's whole
//! stack instead, as app server processes on one Redis or one Redis
//! Cluster (`stack`): `serve --servers N [--cluster]`.

#[cfg(not(served_stack))]
mod layer;
#[cfg(not(served_stack))]
mod limiter;
#[cfg(served_stack)]
mod stack;
mod served {
    include!(concat!(env!("OUT_DIR"), "/served.rs"));
}

use std::process::ExitCode;

use metrics_exporter_prometheus::PrometheusHandle;
#[cfg(unix)]
use std::time::Duration;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut port = 3000u16;
    let mut servers = None;
    let mut cluster = false;
    let mut app_server = None;
    while let Some(arg) = args.next() {
        let parsed = match arg.as_str() {
            "--port" => args.next().and_then(|p| p.parse().ok()).map(|p| port = p),
            "--servers" => args
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=8).contains(n))
                .map(|n| servers = Some(n)),
            "--cluster" => {
                cluster = true;
                Some(())
            }
            // An app server process the parent started: its number, then
            // where Redis is (one URL, or the cluster's, comma-separated).
            "--app-server" => args
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .zip(args.next())
                .map(|a| app_server = Some(a)),
            _ => None,
        };
        if parsed.is_none() {
            eprintln!("usage: serve [--port N] [--servers N (1 to 8) [--cluster]]");
            return ExitCode::from(2);
        }
    }
    let done = match (servers, app_server) {
        (None, None) if cluster => Err("--cluster goes with --servers N".to_string()),
        #[cfg(not(served_stack))]
        (None, None) => layer::serve(port),
        #[cfg(not(served_stack))]
        _ => Err(
            "this build serves lesson 07's layer; `cargo run -- serve --servers N` \
                  builds lesson 10's stack"
                .to_string(),
        ),
        #[cfg(served_stack)]
        (None, None) => Err("this build serves lesson 10's stack: give --servers N".to_string()),
        #[cfg(served_stack)]
        (Some(n), None) => stack::serve(n, cluster, port),
        #[cfg(served_stack)]
        (_, Some((number, redis))) => stack::app_server(number, &redis, cluster),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// The demo's policy: 5 requests per 10 s per client.
pub(crate) fn policy() -> kata::http::Policy {
    kata::http::Policy::new("demo", 5, std::time::Duration::from_secs(10))
}

/// Clients by address or `x-api-key`, loopback a trusted proxy.
pub(crate) fn keys() -> kata::http::KeyRule {
    kata::http::KeyRule::by_address()
        .with_api_key("x-api-key")
        .and_then(|k| k.trusting(&["127.0.0.1", "::1"]))
        .expect("a valid key rule")
}

/// Installs the Prometheus recorder, before anything records.
pub(crate) fn recorder() -> Result<PrometheusHandle, String> {
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)
        .map_err(|e| format!("cannot install the metrics recorder: {e}"))?;
    Ok(handle)
}

/// What the recorder holds, at `/metrics` (not limited: the route is added
/// after the layer).
pub(crate) fn with_metrics(router: axum::Router, handle: PrometheusHandle) -> axum::Router {
    router.route(
        "/metrics",
        axum::routing::get(move || {
            let handle = handle.clone();
            async move { handle.render() }
        }),
    )
}

/// Resolves when the process that started this one ends (on Unix: the
/// parent changes), so that a demo server never outlives its command.
pub(crate) async fn parent_gone() {
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
