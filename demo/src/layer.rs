//! `cargo run -- serve`: lesson 07's layer (the learner's or the
//! reference's) in an axum API on a loopback port, over the harness's model
//! of lesson 09's bounded limiter (`crate::limiter`), on a real clock, with
//! `/metrics` beside it.

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use kata::http::{Clock, MonotonicClock};

use crate::limiter::Metered;
use crate::served;

pub fn serve(port: u16) -> Result<(), String> {
    let clock = MonotonicClock::new();
    let (policy, keys) = (crate::policy(), crate::keys());
    let handle = crate::recorder()?;
    let limiter = Arc::new(Metered::new(served::ALGORITHM, &policy, 10_000));
    let layer = served::layer(limiter.clone(), policy, keys, clock)
        .map_err(|e| format!("{}: new refused the demo's policy: {e}", served::FILE))?;
    let router = crate::with_metrics(
        axum::Router::new()
            .fallback(|| async { "hello from the demo API\n" })
            .layer(layer),
        handle,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1:{port}: {e} (choose another with --port)"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        println!(
            "Serving {} on http://{addr}/ with policy \"demo\": 5 requests per 10 s per client.\n\
             Try, in another terminal:\n\
             \x20 curl -i http://{addr}/\n\
             \x20 curl -i -H 'x-api-key: my-key' http://{addr}/\n\
             \x20 curl -i -H 'X-Forwarded-For: 203.0.113.7' http://{addr}/   (127.0.0.1 is a trusted proxy here)\n\
             \x20 curl http://{addr}/metrics   (Prometheus's text format; not limited)\n\
             \x20 cargo run -- load http://{addr}/ --rate 20 --seconds 5   (a load, and a verdict)\n\
             Stop with Ctrl-C.",
            served::FILE
        );
        let _ = std::io::stdout().flush();
        tokio::spawn(sweeping(limiter, clock));
        let serve = axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>());
        tokio::select! {
            // Whoever read our output may be gone too: say it if we can.
            _ = crate::parent_gone() => {
                let _ = writeln!(std::io::stdout(), "stopped: the command that started the server ended");
            }
            r = serve => if let Err(e) = r { eprintln!("the server stopped: {e}") },
            _ = tokio::signal::ctrl_c() => {
                let _ = writeln!(std::io::stdout(), "stopped");
            }
        }
        Ok(())
    })
}

/// Sweeps the demo's limiter once a second, on the server's clock.
async fn sweeping(limiter: Arc<Metered>, clock: MonotonicClock) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        every.tick().await;
        limiter.sweep(clock.now());
    }
}
