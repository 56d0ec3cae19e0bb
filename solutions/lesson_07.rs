//! Lesson 07, reference solution: the limiter in front of an HTTP service.
//!
//! The layer holds everything its services share behind one `Arc`: the
//! limiter, the key rule, the clock, the headers rendered once from the
//! policy, and whether a missing peer address has been reported. A service
//! keys the request, asks the limiter once, and either calls the inner
//! service and adds the rate-limit headers to its response, or answers 429
//! itself without calling it.
//!
//! It costs little per request: the key is written into a buffer on the
//! stack (the limiter only borrows it), the response future is a plain enum
//! rather than a boxed one, header names are constants, and the header
//! values are rendered once and shared: `RateLimit-Policy`, and `RateLimit`
//! for every `remaining` of a quota up to 4,096, so that an allowed request
//! clones a value (a reference count) instead of allocating one. A larger
//! `remaining` is built in one allocation of the right size.

use std::fmt::Write as _;
use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use super::sync::{Arc, AtomicBool, Ordering};
use axum::body::{Body, Bytes};
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};
use kata::http::{
    Clock, KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
use kata::{Decision, RateLimiter};
use tower::{Layer, Service};

const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RETRY_AFTER: HeaderName = HeaderName::from_static("retry-after");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// The most `RateLimit` values a layer renders ahead.
const CACHED: u64 = 4_096;

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
    /// `"api";r=`: what every `RateLimit` of an allowed request starts with.
    ratelimit_prefix: Vec<u8>,
    /// `RateLimit` of an allowed request, rendered once for each `remaining`
    /// below `min(quota, CACHED)`, at its index.
    ratelimit_values: Box<[HeaderValue]>,
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
        let ratelimit_prefix = format!("{name};r=").into_bytes();
        let ratelimit_values = (0..policy.quota.min(CACHED))
            .map(|remaining| header_value(format!("{name};r={remaining}")))
            .collect();
        Ok(RateLimitLayer {
            shared: Arc::new(Shared {
                limiter,
                keys,
                clock,
                policy,
                name,
                policy_header,
                ratelimit_prefix,
                ratelimit_values,
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

pin_project_lite::pin_project! {
    /// What `call` returns: the inner service's response to come, to which
    /// the two headers are added once it is ready; or the 429, ready now.
    #[project = AnswerProjection]
    pub enum Answer<F> {
        Allowed {
            #[pin]
            response: F,
            headers: Option<(HeaderValue, HeaderValue)>,
        },
        Denied {
            response: Option<Response<Body>>,
        },
    }
}

impl<F, E> Future for Answer<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            AnswerProjection::Allowed { response, headers } => {
                let mut response = ready!(response.poll(cx))?;
                let (policy, ratelimit) = headers.take().expect("polled after it was ready");
                let headers = response.headers_mut();
                headers.insert(RATELIMIT_POLICY, policy);
                headers.insert(RATELIMIT, ratelimit);
                Poll::Ready(Ok(response))
            }
            AnswerProjection::Denied { response } => {
                Poll::Ready(Ok(response.take().expect("polled after it was ready")))
            }
        }
    }
}

impl<S, L, C> Service<Request<Body>> for RateLimit<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    L: RateLimiter,
    C: Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Ready when the inner service is: a denied request does not need
        // it, but an allowed one calls it right away.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let shared = &self.shared;
        let mut key = Text::new();
        shared.client_key(&req, &mut key);
        match shared.limiter.check(key.as_str(), shared.clock.now()) {
            Decision::Allowed { remaining } => Answer::Allowed {
                response: self.inner.call(req),
                headers: Some((shared.policy_header.clone(), shared.ratelimit(remaining))),
            },
            Decision::Denied { retry_after } => Answer::Denied {
                response: Some(shared.too_many_requests(retry_after)),
            },
        }
    }
}

impl<L, C> Shared<L, C> {
    /// `RateLimit` of an allowed request: from the table, or built in one
    /// allocation of the right size when `remaining` is past it.
    fn ratelimit(&self, remaining: u64) -> HeaderValue {
        let cached = usize::try_from(remaining)
            .ok()
            .and_then(|i| self.ratelimit_values.get(i));
        if let Some(value) = cached {
            return value.clone();
        }
        // Exactly the right size, so that `Bytes` takes the buffer as it is,
        // with no second allocation for its reference count.
        let digits = remaining.checked_ilog10().map_or(1, |log| log as usize + 1);
        let mut value = Vec::with_capacity(self.ratelimit_prefix.len() + digits);
        value.extend_from_slice(&self.ratelimit_prefix);
        decimal(remaining, |digits| value.extend_from_slice(digits));
        HeaderValue::from_maybe_shared(Bytes::from(value)).expect("printable ASCII")
    }

    /// Writes `api:<key>` for one valid API key header line, else
    /// `ip:<client>`.
    fn client_key(&self, req: &Request<Body>, key: &mut Text) {
        if let Some(name) = &self.keys.api_key_header {
            let mut lines = req.headers().get_all(name).iter();
            if let (Some(value), None) = (lines.next(), lines.next()) {
                let bytes = value.as_bytes();
                let visible = bytes.iter().all(|b| (0x21..=0x7e).contains(b));
                if visible && (1..=MAX_API_KEY_LEN).contains(&bytes.len()) {
                    let _ = write!(key, "api:{}", String::from_utf8_lossy(bytes));
                    return;
                }
            }
        }
        match req.extensions().get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(peer)) => {
                address_key(self.client_address(req.headers(), peer.ip()), key)
            }
            None => {
                // Once per layer, whichever clone sees it first.
                if !self.reported.swap(true, Ordering::Relaxed) {
                    self.keys.report.error(&LayerError::NoPeerAddress);
                }
                let _ = key.write_str(UNKNOWN_CLIENT);
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
        for line in headers.get_all(X_FORWARDED_FOR) {
            match line.to_str() {
                Ok(text) => entries.extend(
                    text.split(',')
                        .map(|entry| entry.trim_matches([' ', '\t']).parse().ok()),
                ),
                Err(_) => entries.push(None),
            }
        }
        let mut client = peer;
        for entry in entries.iter().rev() {
            match entry {
                None => return client,
                Some(ip) => {
                    client = *ip;
                    if !self.keys.trusts(*ip) {
                        return client;
                    }
                }
            }
        }
        client
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
        headers.insert(RETRY_AFTER, HeaderValue::from(seconds as u64));
        headers.insert(
            RATELIMIT,
            header_value(format!("{};r=0;t={seconds}", self.name)),
        );
        headers.insert(RATELIMIT_POLICY, self.policy_header.clone());
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
fn address_key(ip: IpAddr, key: &mut Text) {
    let v4 = match ip {
        IpAddr::V4(v4) => v4,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4,
            None => {
                let prefix = Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64));
                let _ = write!(key, "ip:{prefix}/64");
                return;
            }
        },
    };
    // What `write!(key, "ip:{v4}")` writes, digit by digit: the most common
    // key, on every request, without the formatting machinery.
    let _ = key.write_str("ip:");
    for (i, octet) in v4.octets().into_iter().enumerate() {
        if i > 0 {
            key.push(b'.');
        }
        decimal(u64::from(octet), |digits| key.push_bytes(digits));
    }
}

/// `n`'s decimal digits, handed to `put`: what `{n}` formats, without the
/// formatting machinery, on the path every request takes.
fn decimal(mut n: u64, put: impl FnOnce(&[u8])) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    put(&digits[start..]);
}

/// A key written on the stack (at most `api:` and 128 bytes), without a
/// heap allocation.
struct Text {
    bytes: [u8; 4 + MAX_API_KEY_LEN],
    len: usize,
}

impl Text {
    fn new() -> Self {
        Text {
            bytes: [0; 4 + MAX_API_KEY_LEN],
            len: 0,
        }
    }

    /// ASCII bytes (there is always room for an address).
    fn push_bytes(&mut self, bytes: &[u8]) {
        self.bytes[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn push(&mut self, byte: u8) {
        self.push_bytes(&[byte]);
    }

    fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).expect("only whole strings are written")
    }
}

impl std::fmt::Write for Text {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let room = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
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
