//! The client in front of a real server: lesson 07's reference layer in an
//! axum server on a loopback port, the client's requests over hyper's
//! client, and the same manual clock on both sides (the driver moves it
//! only when nothing is in flight).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client as Hyper};
use hyper_util::rt::TokioExecutor;

use super::drive::ClientVariant;
use super::gen::{get, POLICY};
use super::model::check;
use super::script::Script;
use super::sim::{drive, request_id, Answer, Event, Log};
use super::{ClientError, ClientPolicy, ManualClock, Timestamp};
use crate::layer::drive::{HttpVariant, TestLimiter};
use crate::layer::{Clock as _, KeyRule, Policy};
use crate::models::Algorithm;

static SERVER: OnceLock<HttpVariant> = OnceLock::new();

/// The lesson 07 reference the end-to-end checks serve (the lesson's
/// generated code gives it, from the catalog's `meets`).
pub fn meet(server: HttpVariant) {
    let _ = SERVER.set(server);
}

pub fn server() -> Option<HttpVariant> {
    SERVER.get().copied()
}

/// How many clients the herd has, and the most of their retries any tenth
/// of `base` may hold.
pub const HERD: usize = 40;
pub const HERD_MOST_IN_A_TENTH: usize = HERD / 3;

/// How long the herd's outage lasts, and the `Retry-After` it answers.
pub const OUTAGE: Duration = Duration::from_secs(3);

/// The end-to-end checks.
#[derive(Clone, Copy, Debug)]
pub enum Check {
    /// [`HERD`] clients, each its own layer and seed, meet an outage: their
    /// retries spread over the jitter.
    Herd,
    /// One client's 30 requests in 60 ms against a quota of 5 a second:
    /// paced by the quota it learns, it never meets a 429.
    Pace,
}

/// Runs a check: the server, the clients, the driver, then the check's own
/// measure and the log checked against the contract.
pub fn run(which: Check, v: ClientVariant, server: Option<HttpVariant>) -> Result<(), String> {
    let server = server.ok_or("this test binary has no lesson 07 reference to serve")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("no runtime: {e}"))?;
    let outcome = runtime.block_on(tokio::task::unconstrained(scenario(which, v, server)));
    runtime.shutdown_background();
    outcome
}

fn script(which: Check) -> Script {
    match which {
        Check::Herd => Script {
            policy: ClientPolicy {
                base: Duration::from_secs(1),
                cap: Duration::from_secs(4),
                ..POLICY
            },
            clients: HERD,
            calls: (0..HERD)
                .map(|i| {
                    let mut c = get(i as u64);
                    c.client = i;
                    c
                })
                .collect(),
            phases: vec![],
            limit: Some((1000, 1)),
            latency: Duration::ZERO,
        },
        Check::Pace => Script {
            clients: 1,
            calls: (0..30).map(|i| get(2 * i)).collect(),
            ..super::gen::script(vec![], vec![], Some((5, 1)))
        },
    }
}

async fn scenario(which: Check, v: ClientVariant, server: HttpVariant) -> Result<(), String> {
    let s = script(which);
    let clock = ManualClock::new(Timestamp::ZERO);
    let (quota, window) = s.limit.unwrap_or((1, 1));
    let policy = Policy::new("api", quota, Duration::from_secs(window));
    let server_clock = clock.server_clock();
    let outage = matches!(which, Check::Herd);
    let inner = tower::service_fn(move |_: Request<Body>| {
        let down = outage && server_clock.now() < Timestamp::ZERO + OUTAGE;
        async move {
            let mut r = Response::new(Body::from(if down { "down" } else { "hello" }));
            if down {
                *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                r.headers_mut()
                    .insert("retry-after", OUTAGE.as_secs().into());
            }
            Ok::<_, std::convert::Infallible>(r)
        }
    });
    let router = (server.router)(
        axum::Router::new().fallback_service(inner),
        TestLimiter::new(Algorithm::TokenBucket, &policy),
        policy.clone(),
        KeyRule::by_address(),
        clock.server_clock(),
    )
    .map_err(|e| format!("lesson 07's reference refused {policy:?}: {e:?}"))?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("no loopback port: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await;
    });
    let in_flight = Arc::new(AtomicUsize::new(0));
    let wire = Wire {
        addr,
        hyper: Hyper::builder(TokioExecutor::new()).build_http(),
        in_flight: in_flight.clone(),
        clock: clock.clone(),
        attempts: Arc::default(),
    };
    let mut clients = vec![];
    for i in 0..s.clients {
        let policy = ClientPolicy {
            seed: s.policy.seed.wrapping_add(i as u64),
            ..s.policy
        };
        clients.push(
            (v.build)(policy, clock.clone(), super::sim::Client::new(wire.clone()))
                .map_err(|e| format!("RetryLayer::new refused {policy:?}: {e:?}"))?,
        );
    }
    let log = drive(clients, s.calls.clone(), clock, in_flight).await;
    // The check's own measure first: what it is about (a herd that comes
    // back together, a 429 met) is what a failure says; then every event
    // against the contract.
    measure(which, &s, &log)?;
    check(&s, &log).map_err(|b| b.explain(&s, &log))
}

fn measure(which: Check, s: &Script, log: &Log) -> Result<(), String> {
    let returned: Vec<&Answer> = log
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Return { outcome, .. } => Some(outcome),
            _ => None,
        })
        .collect();
    let not_200 = returned
        .iter()
        .filter(|a| !matches!(a, Answer::Status(200, _)))
        .count();
    match which {
        Check::Herd => {
            let mut retries: Vec<u64> = log
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::Send { attempt: 2, at, .. } => Some(at.as_nanos()),
                    _ => None,
                })
                .collect();
            retries.sort_unstable();
            let tenth = u64::try_from(s.policy.base.as_nanos() / 10).unwrap_or(u64::MAX);
            let busiest = (0..retries.len())
                .map(|i| {
                    retries[i..]
                        .iter()
                        .take_while(|t| **t < retries[i] + tenth)
                        .count()
                })
                .max()
                .unwrap_or(0);
            if busiest > HERD_MOST_IN_A_TENTH {
                return Err(format!(
                    "{HERD} clients met a {} s outage: {busiest} of their retries came within {} \
                     ms, more than the {HERD_MOST_IN_A_TENTH} the contract allows in a tenth of \
                     base: the herd came back together",
                    OUTAGE.as_secs(),
                    tenth / 1_000_000
                ));
            }
            if not_200 > 0 {
                return Err(format!(
                    "{not_200} of the herd's requests did not end in a 200"
                ));
            }
        }
        Check::Pace => {
            let limited = log
                .events
                .iter()
                .filter(|e| {
                    matches!(
                        e,
                        Event::Answer {
                            answer: Answer::Status(429, _),
                            ..
                        }
                    )
                })
                .count();
            if limited > 0 || not_200 > 0 {
                return Err(format!(
                    "30 requests against a quota of 5 a second met {limited} 429s and {not_200} \
                     ended in something else than a 200: the client should pace itself to the \
                     quota the server announces"
                ));
            }
        }
    }
    Ok(())
}

/// One attempt in flight, counted until its future ends or is dropped.
struct Flying(Arc<AtomicUsize>);

impl Flying {
    fn new(count: Arc<AtomicUsize>) -> Flying {
        count.fetch_add(1, Ordering::SeqCst);
        Flying(count)
    }
}

impl Drop for Flying {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The inner service over a real socket: hyper's client, to the server's
/// port whatever host the request names; counts what is in flight and
/// records each attempt and its answer.
#[derive(Clone)]
struct Wire {
    addr: SocketAddr,
    hyper: Hyper<HttpConnector, Full<Bytes>>,
    in_flight: Arc<AtomicUsize>,
    clock: ManualClock,
    attempts: Arc<Mutex<BTreeMap<usize, u32>>>,
}

impl tower::Service<Request<Bytes>> for Wire {
    type Response = Response<Bytes>;
    type Error = ClientError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Bytes>, ClientError>> + Send>,
    >;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), ClientError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<Bytes>) -> Self::Future {
        let request = request_id(&req).unwrap_or(usize::MAX);
        let attempt = {
            let mut a = self.attempts.lock().unwrap_or_else(|p| p.into_inner());
            let n = a.entry(request).or_default();
            *n += 1;
            *n
        };
        super::sim::note(Event::Send {
            request,
            attempt,
            at: self.clock.now(),
            changed: None,
        });
        let flying = Flying::new(self.in_flight.clone());
        let (mut parts, body) = req.into_parts();
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_string();
        parts.uri = format!("http://{}{path}", self.addr)
            .parse()
            .expect("a URI");
        let req = Request::from_parts(parts, Full::new(body));
        let (hyper, clock) = (self.hyper.clone(), self.clock.clone());
        Box::pin(async move {
            let _flying = flying;
            let result = async {
                let response = hyper
                    .request(req)
                    .await
                    .map_err(|e| ClientError(e.to_string()))?;
                let (parts, body) = response.into_parts();
                let body = body
                    .collect()
                    .await
                    .map_err(|e| ClientError(e.to_string()))?;
                Ok(Response::from_parts(parts, body.to_bytes()))
            }
            .await;
            super::sim::note(Event::Answer {
                request,
                attempt,
                at: clock.now(),
                answer: Answer::of(&result),
            });
            result
        })
    }
}
