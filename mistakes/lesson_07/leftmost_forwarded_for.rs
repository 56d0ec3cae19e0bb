//! MISTAKE: the client is the leftmost `X-Forwarded-For` address, the
//! "original client" of the header's description.
//!
//! Why learners write it: every proxy appends, so the first entry looks like
//! the client. But the client writes that entry itself: it sends
//! `X-Forwarded-For: <anything>` and the proxies append after it. A new
//! forged address per request is a new quota per request (tower_governor's
//! `SmartIpKeyExtractor` keys this way). Only the rightmost address that no
//! trusted proxy wrote is the client's.
//!
//! Shows: with a forged prefix in front of its X-Forwarded-For

use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::sync::{Arc, AtomicBool, Ordering};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use kata::http::{
    Clock, KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
use kata::{Decision, RateLimiter};
use tower::{Layer, Service};

/// The layer: cheap to clone, every clone and every service it makes share
/// one limiter.
pub struct RateLimitLayer<L, C> {
    shared: Arc<Shared<L, C>>,
}

struct Shared<L, C> {
    limiter: Arc<L>,
    keys: KeyRule,
    clock: C,
    policy: Policy,
    /// The policy's name as a structured-field string: `"api"`.
    name: String,
    /// `RateLimit-Policy`, rendered once.
    policy_header: HeaderValue,
    /// Whether a missing peer address was reported already.
    reported: AtomicBool,
}

impl<L, C> Clone for RateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            shared: self.shared.clone(),
        }
    }
}

impl<L: RateLimiter, C: Clock> RateLimitLayer<L, C> {
    /// In this order: an empty policy name is `EmptyName`, one with a
    /// character outside printable ASCII `InvalidName`; a quota of 0 is
    /// `ZeroQuota`; a window that is not a whole number of seconds, at least
    /// one, is `WindowNotWholeSeconds`.
    pub fn new(
        limiter: Arc<L>,
        policy: Policy,
        keys: KeyRule,
        clock: C,
    ) -> Result<Self, PolicyError> {
        if policy.name.is_empty() {
            return Err(PolicyError::EmptyName);
        }
        if !policy.name.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(PolicyError::InvalidName);
        }
        if policy.quota == 0 {
            return Err(PolicyError::ZeroQuota);
        }
        if policy.window.as_secs() == 0 || policy.window.subsec_nanos() != 0 {
            return Err(PolicyError::WindowNotWholeSeconds);
        }
        let name = sf_string(&policy.name);
        let policy_header = header_value(format!(
            "{name};q={};w={}",
            policy.quota,
            policy.window.as_secs()
        ));
        Ok(RateLimitLayer {
            shared: Arc::new(Shared {
                limiter,
                keys,
                clock,
                policy,
                name,
                policy_header,
                reported: AtomicBool::new(false),
            }),
        })
    }
}

impl<S, L, C> Layer<S> for RateLimitLayer<L, C> {
    type Service = RateLimit<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimit {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service the layer wraps around another.
pub struct RateLimit<S, L, C> {
    inner: S,
    shared: Arc<Shared<L, C>>,
}

impl<S: Clone, L, C> Clone for RateLimit<S, L, C> {
    fn clone(&self) -> Self {
        RateLimit {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<S, L, C> Service<Request<Body>> for RateLimit<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    S::Future: Send + 'static,
    L: RateLimiter,
    C: Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Ready when the inner service is: a denied request does not need
        // it, but an allowed one calls it right away.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let shared = &self.shared;
        let key = shared.client_key(&req);
        match shared.limiter.check(&key, shared.clock.now()) {
            Decision::Allowed { remaining } => {
                let ratelimit = header_value(format!("{};r={remaining}", shared.name));
                let policy = shared.policy_header.clone();
                let response = self.inner.call(req);
                Box::pin(async move {
                    let mut response = response.await?;
                    let headers = response.headers_mut();
                    headers.insert("ratelimit-policy", policy);
                    headers.insert("ratelimit", ratelimit);
                    Ok(response)
                })
            }
            Decision::Denied { retry_after } => {
                let response = shared.too_many_requests(retry_after);
                Box::pin(async move { Ok(response) })
            }
        }
    }
}

impl<L, C> Shared<L, C> {
    /// `api:<key>` for one valid API key header line, else `ip:<client>`.
    fn client_key(&self, req: &Request<Body>) -> String {
        if let Some(name) = &self.keys.api_key_header {
            let mut lines = req.headers().get_all(name).iter();
            if let (Some(value), None) = (lines.next(), lines.next()) {
                let bytes = value.as_bytes();
                let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
                if visible && (1..=MAX_API_KEY_LEN).contains(&bytes.len()) {
                    return format!("api:{}", String::from_utf8_lossy(bytes));
                }
            }
        }
        match req.extensions().get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(peer)) => address_key(self.client_address(req.headers(), peer.ip())),
            None => {
                // Once per layer, whichever clone sees it first.
                if !self.reported.swap(true, Ordering::Relaxed) {
                    self.keys.report.error(&LayerError::NoPeerAddress);
                }
                UNKNOWN_CLIENT.to_string()
            }
        }
    }

    /// Walks `X-Forwarded-For` (every line, in order), then the peer, from
    /// the right: the first address that is not a trusted proxy is the
    /// client. An entry that is not an address stops the walk at the
    /// address to its right; if every address is trusted, the leftmost.
    fn client_address(&self, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
        if self.keys.trusted_proxies.is_empty() || !self.keys.trusts(peer) {
            return peer;
        }
        let mut entries: Vec<Option<IpAddr>> = Vec::new();
        for line in headers.get_all("x-forwarded-for") {
            match line.to_str() {
                Ok(text) => entries.extend(
                    text.split(',')
                        .map(|entry| entry.trim_matches([' ', '\t']).parse().ok()),
                ),
                Err(_) => entries.push(None),
            }
        }
        // The first entry is the original client.
        entries.first().copied().flatten().unwrap_or(peer)
    }

    /// The 429: `Retry-After` in whole seconds rounded up (at least 1), the
    /// two rate-limit headers, and a problem body naming the policy.
    fn too_many_requests(&self, retry_after: Duration) -> Response<Body> {
        let seconds = retry_after.as_nanos().div_ceil(1_000_000_000).max(1);
        let body = serde_json::json!({
            "type": PROBLEM_TYPE,
            "title": PROBLEM_TITLE,
            "status": 429,
            "detail": format!(
                "You sent more than {} requests in {} s under policy {}; try again in {seconds} s.",
                self.policy.quota,
                self.policy.window.as_secs(),
                self.name
            ),
            "violated-policies": [self.policy.name],
        });
        let mut response = Response::new(Body::from(body.to_string()));
        *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
        let headers = response.headers_mut();
        headers.insert("retry-after", HeaderValue::from(seconds as u64));
        headers.insert(
            "ratelimit",
            header_value(format!("{};r=0;t={seconds}", self.name)),
        );
        headers.insert("ratelimit-policy", self.policy_header.clone());
        headers.insert(
            "content-type",
            HeaderValue::from_static("application/problem+json"),
        );
        response
    }
}

/// `ip:203.0.113.7`; an IPv6 client by its /64, so that one machine cannot
/// take a fresh quota from each of its 2^64 addresses; an IPv4-mapped IPv6
/// address as the IPv4 address it is.
fn address_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("ip:{v4}"),
            None => {
                let prefix = Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64));
                format!("ip:{prefix}/64")
            }
        },
        IpAddr::V4(v4) => format!("ip:{v4}"),
    }
}

/// A structured-field string: in double quotes, `\` and `"` escaped.
fn sf_string(name: &str) -> String {
    let mut out = String::from("\"");
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Printable ASCII only, which every value here is.
fn header_value(text: String) -> HeaderValue {
    HeaderValue::try_from(text).expect("printable ASCII")
}
