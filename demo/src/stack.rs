//! `cargo run -- serve --servers N [--cluster]`: lesson 10's service. The
//! learner's `AsyncRateLimitLayer` over the learner's `AsyncRedisLimiter`
//! in an axum API, as N app server processes (this binary run again, each
//! on a loopback port of its own), every one on the Redis (or the Redis
//! Cluster) this process starts: one limit for the whole service.
//!
//! The limiter is the demo's policy as a GCRA on the server's clock (lesson
//! 08's milestone 4: app servers whose clocks disagree share one limit),
//! its failure policy `Local`. Each app server serves `/metrics`: what the
//! learner's limiter records, the decisions it made by outcome and the ones
//! its fallback made by why Redis did not answer.
//!
//! Everything stops with this process, however it stops: the app servers
//! and the Redis nodes are tied to it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use kata::async_redis::{Bounds, Overflow, Settings};
use kata::http::Clock;
use kata::infra::cluster::{key_slot, RedisCluster};
use kata::infra::server::RedisServer;
use kata::redis::{Clock as RuleClock, OnFailure, Rule};
use kata::Timestamp;

use crate::served::{Layer, Limiter, FILE};

/// How long an app server may take to say it listens.
const STARTS_WITHIN: Duration = Duration::from_secs(30);

/// The Redis the app servers share.
enum Store {
    Server(RedisServer),
    Cluster(RedisCluster),
}

impl Store {
    /// What an app server is told: one URL, or the nodes' URLs.
    fn address(&self) -> String {
        match self {
            Store::Server(s) => s.url(),
            Store::Cluster(c) => c.urls().join(","),
        }
    }
}

/// The parent: Redis, then the app servers; prints where they are and how
/// to try them, and stops everything when stopped.
pub fn serve(servers: usize, cluster: bool, _port: u16) -> Result<(), String> {
    println!(
        "starting {} ...",
        if cluster {
            "a Redis Cluster (three masters, a replica each)"
        } else {
            "a redis-server"
        }
    );
    let store = if cluster {
        Store::Cluster(RedisCluster::start()?)
    } else {
        Store::Server(RedisServer::start()?)
    };
    let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
    let mut children: Vec<Child> = Vec::new();
    let mut urls = Vec::new();
    for number in 1..=servers {
        let mut command = Command::new(&exe);
        command
            .args(["--app-server", &number.to_string(), &store.address()])
            .args(if cluster { &["--cluster"][..] } else { &[][..] })
            .stdout(Stdio::piped());
        let mut child = kata::watchdog::spawn_tied(command)
            .map_err(|e| format!("cannot start app server {number}: {e}"))?;
        let out = child.stdout.take().expect("stdout is piped");
        children.push(child);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines().map_while(Result::ok);
            let _ = tx.send(lines.next());
            // Its later lines, as they come.
            for line in lines {
                println!("app server {number}: {line}");
            }
        });
        let url = match rx.recv_timeout(STARTS_WITHIN) {
            Ok(Some(line)) => line
                .strip_prefix("listening on ")
                .map(str::to_string)
                .ok_or_else(|| format!("app server {number} said {line:?}"))?,
            _ => {
                stop(&mut children);
                return Err(format!(
                    "app server {number} did not start within {} s",
                    STARTS_WITHIN.as_secs()
                ));
            }
        };
        urls.push(url);
    }
    let mut said = format!(
        "Serving {FILE} as {servers} app server processes, one limit on {}, policy \"demo\": \
         5 requests per 10 s per client.\n",
        if cluster {
            "a Redis Cluster"
        } else {
            "one Redis"
        }
    );
    for (i, url) in urls.iter().enumerate() {
        said.push_str(&format!("  app server {}: {url}\n", i + 1));
    }
    said.push_str(&format!(
        "Try, in another terminal:\n\
         \x20 curl -i {first}   then the same on another app server: one limit\n\
         \x20 curl {first}metrics   (each app server's decisions, and its fallback's by reason)\n\
         \x20 cargo run -- load --targets {all} --rate 20 --seconds 5\n",
        first = urls[0],
        all = urls.join(",")
    ));
    if let Store::Cluster(c) = &store {
        // The client of `load` and curl is 127.0.0.1: its keys' slot.
        let slot = key_slot(b"{k:ip:127.0.0.1}");
        if let Ok(master) = c.master_of(slot) {
            if let Some(pid) = c.nodes()[master].server.pid() {
                said.push_str(&format!(
                    "To watch a failover under load, kill the master that holds 127.0.0.1's \
                     keys (slot {slot}) while `load` runs:\n  kill -9 {pid}\n"
                ));
            }
        }
    }
    said.push_str("Stop with Ctrl-C.");
    println!("{said}");
    let _ = std::io::stdout().flush();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    let ended: Result<String, String> = runtime.block_on(async {
        let mut every = tokio::time::interval(Duration::from_millis(200));
        #[cfg(unix)]
        let mut terminated =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|e| format!("cannot watch for SIGTERM: {e}"))?;
        loop {
            #[cfg(unix)]
            let terminate = terminated.recv();
            #[cfg(not(unix))]
            let terminate = std::future::pending::<Option<()>>();
            tokio::select! {
                _ = crate::parent_gone() => return Ok("the command that started the service ended".to_string()),
                _ = tokio::signal::ctrl_c() => return Ok("stopped".to_string()),
                _ = terminate => return Ok("stopped (SIGTERM)".to_string()),
                _ = every.tick() => {
                    for (i, child) in children.iter_mut().enumerate() {
                        if let Ok(Some(status)) = child.try_wait() {
                            return Ok(format!("app server {} ended ({status})", i + 1));
                        }
                    }
                }
            }
        }
    });
    stop(&mut children);
    drop(store);
    let ended = ended?;
    println!("{ended}: every app server and Redis node stopped");
    Ok(())
}

fn stop(children: &mut [Child]) {
    for child in children {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// Seconds since 1970: one clock for every process of the machine (the
/// limiter decides on Redis's `TIME`; this clock is the fallback's).
#[derive(Clone, Copy)]
struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Timestamp {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Timestamp::from_nanos(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
    }
}

/// One app server: the learner's stack on a free loopback port; prints
/// `listening on URL` first.
pub fn app_server(number: usize, redis: &str, cluster: bool) -> Result<(), String> {
    let (policy, keys) = (crate::policy(), crate::keys());
    let mut settings = if cluster {
        let urls: Vec<String> = redis.split(',').map(str::to_string).collect();
        Settings::cluster(&urls)
    } else {
        Settings::new(redis)
    }
    .map_err(|e| e.to_string())?;
    settings.prefix = "demo:".into();
    // Room for a loaded machine: a timeout is a fallback decision.
    settings.timeout = Duration::from_millis(500);
    settings.on_failure = OnFailure::Local;
    // The learner's limiter records its metrics under this policy; its
    // local store holds at most this many clients while Redis is away.
    settings.local = Bounds::new("demo", 10_000, Overflow::Deny);
    let rule = Rule::Gcra {
        capacity: policy.quota,
        refill_every: policy.window / policy.quota as u32,
        clock: RuleClock::Server,
    };
    let handle = crate::recorder()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a runtime: {e}"))?;
    runtime.block_on(async move {
        let limiter = Limiter::new(rule, settings)
            .map_err(|e| format!("{FILE}: new refused the demo's rule: {e:?}"))?;
        let layer = Layer::new(Arc::new(limiter), policy, keys, WallClock)
            .map_err(|e| format!("{FILE}: new refused the demo's policy: {e}"))?;
        let hello = format!("hello from app server {number}\n");
        let router = crate::with_metrics(
            axum::Router::new()
                .fallback(move || {
                    let hello = hello.clone();
                    async move { hello }
                })
                .layer(layer),
            handle,
        );
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        println!("listening on http://{addr}/");
        let _ = std::io::stdout().flush();
        let serve = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        );
        tokio::select! {
            _ = crate::parent_gone() => {}
            r = serve => if let Err(e) = r { eprintln!("app server {number} stopped: {e}") },
        }
        Ok(())
    })
}
