//! A correct lesson 07 layer unlike the reference: no boxed future (an enum
//! future polls the inner one or hands out the 429), the key walk reads
//! `X-Forwarded-For` from the right without collecting it, the problem body
//! is written by hand, and the layer's parts are shared through separate
//! `Arc`s. The suite must accept it.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

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

pub struct RateLimitLayer<L, C> {
    limiter: Arc<L>,
    config: Arc<Config>,
    reported: Arc<AtomicBool>,
    clock: C,
}

struct Config {
    keys: KeyRule,
    policy: Policy,
    quoted: String,
}

impl<L, C: Clone> Clone for RateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        RateLimitLayer {
            limiter: Arc::clone(&self.limiter),
            config: Arc::clone(&self.config),
            reported: Arc::clone(&self.reported),
            clock: self.clock.clone(),
        }
    }
}

impl<L: RateLimiter, C: Clock> RateLimitLayer<L, C> {
    pub fn new(
        limiter: Arc<L>,
        policy: Policy,
        keys: KeyRule,
        clock: C,
    ) -> Result<Self, PolicyError> {
        let fault = if policy.name.is_empty() {
            Some(PolicyError::EmptyName)
        } else if policy.name.chars().any(|c| !(' '..='~').contains(&c)) {
            Some(PolicyError::InvalidName)
        } else if policy.quota == 0 {
            Some(PolicyError::ZeroQuota)
        } else if policy.window < std::time::Duration::from_secs(1)
            || !policy.window.as_nanos().is_multiple_of(1_000_000_000)
        {
            Some(PolicyError::WindowNotWholeSeconds)
        } else {
            None
        };
        if let Some(e) = fault {
            return Err(e);
        }
        let quoted = format!(
            "\"{}\"",
            policy.name.replace('\\', "\\\\").replace('"', "\\\"")
        );
        Ok(RateLimitLayer {
            limiter,
            config: Arc::new(Config {
                keys,
                policy,
                quoted,
            }),
            reported: Arc::new(AtomicBool::new(false)),
            clock,
        })
    }
}

impl<S, L, C: Clone> Layer<S> for RateLimitLayer<L, C> {
    type Service = RateLimited<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            layer: self.clone(),
        }
    }
}

pub struct RateLimited<S, L, C> {
    inner: S,
    layer: RateLimitLayer<L, C>,
}

impl<S: Clone, L, C: Clone> Clone for RateLimited<S, L, C> {
    fn clone(&self) -> Self {
        RateLimited {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

/// Either the inner service's response, still to come, with the headers to
/// add, or the 429, ready.
pub enum Answer<F> {
    Inner {
        future: Pin<Box<F>>,
        headers: Option<[HeaderValue; 2]>,
    },
    Refused(Option<Response<Body>>),
}

impl<F, E> Future for Answer<F>
where
    F: Future<Output = Result<Response<Body>, E>>,
{
    type Output = Result<Response<Body>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Both variants are Unpin: the inner future is pinned in its box.
        let this = self.get_mut();
        match this {
            Answer::Inner { future, headers } => match future.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Ready(Ok(mut response)) => {
                    let [policy, ratelimit] = headers.take().expect("polled after it was ready");
                    response.headers_mut().insert("ratelimit-policy", policy);
                    response.headers_mut().insert("ratelimit", ratelimit);
                    Poll::Ready(Ok(response))
                }
            },
            Answer::Refused(response) => {
                Poll::Ready(Ok(response.take().expect("polled after it was ready")))
            }
        }
    }
}

impl<S, L, C> Service<Request<Body>> for RateLimited<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>>,
    L: RateLimiter,
    C: Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let key = self.key(&req);
        let now = self.layer.clock.now();
        let config = &self.layer.config;
        let policy_header = text(format!(
            "{};q={};w={}",
            config.quoted,
            config.policy.quota,
            config.policy.window.as_secs()
        ));
        match self.layer.limiter.check(&key, now) {
            Decision::Allowed { remaining } => Answer::Inner {
                future: Box::pin(self.inner.call(req)),
                headers: Some([
                    policy_header,
                    text(format!("{};r={remaining}", config.quoted)),
                ]),
            },
            Decision::Denied { retry_after } => {
                let whole = retry_after.as_secs();
                let seconds = if retry_after.subsec_nanos() > 0 || whole == 0 {
                    whole + 1
                } else {
                    whole
                };
                let body = format!(
                    "{{\"type\":{},\"title\":{},\"status\":429,\"detail\":\"Too many requests: try again in {seconds} s.\",\"violated-policies\":[{}]}}",
                    json(PROBLEM_TYPE),
                    json(PROBLEM_TITLE),
                    json(&config.policy.name)
                );
                let mut response = Response::new(Body::from(body));
                *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
                let h = response.headers_mut();
                h.insert("content-type", text("application/problem+json".into()));
                h.insert("retry-after", text(seconds.to_string()));
                h.insert(
                    "ratelimit",
                    text(format!("{};r=0;t={seconds}", config.quoted)),
                );
                h.insert("ratelimit-policy", policy_header);
                Answer::Refused(Some(response))
            }
        }
    }
}

impl<S, L, C> RateLimited<S, L, C> {
    fn key(&self, req: &Request<Body>) -> String {
        let keys = &self.layer.config.keys;
        if let Some(header) = &keys.api_key_header {
            let lines: Vec<&HeaderValue> = req.headers().get_all(header).iter().collect();
            if let [only] = lines.as_slice() {
                let v = only.as_bytes();
                if !v.is_empty() && v.len() <= MAX_API_KEY_LEN && v.iter().all(u8::is_ascii_graphic)
                {
                    return format!("api:{}", std::str::from_utf8(v).expect("graphic ASCII"));
                }
            }
        }
        let Some(ConnectInfo(peer)) = req.extensions().get::<ConnectInfo<SocketAddr>>() else {
            if !self.layer.reported.swap(true, Ordering::AcqRel) {
                keys.report.error(&LayerError::NoPeerAddress);
            }
            return UNKNOWN_CLIENT.into();
        };
        let client = walk(keys, req.headers(), peer.ip());
        match client {
            IpAddr::V4(v4) => format!("ip:{v4}"),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => format!("ip:{v4}"),
                None => {
                    let s = v6.segments();
                    let net = std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0);
                    format!("ip:{net}/64")
                }
            },
        }
    }
}

/// From the right: the peer, then each line's entries, the last line first.
fn walk(keys: &KeyRule, headers: &HeaderMap, peer: IpAddr) -> IpAddr {
    if keys.trusted_proxies.is_empty() {
        return peer;
    }
    let mut right = peer;
    if !keys.trusts(right) {
        return right;
    }
    let lines: Vec<&HeaderValue> = headers.get_all("x-forwarded-for").iter().collect();
    for line in lines.into_iter().rev() {
        let Ok(text) = line.to_str() else {
            return right;
        };
        for entry in text.rsplit(',') {
            match entry
                .trim_matches(|c| c == ' ' || c == '\t')
                .parse::<IpAddr>()
            {
                Err(_) => return right,
                Ok(ip) if !keys.trusts(ip) => return ip,
                Ok(ip) => right = ip,
            }
        }
    }
    right
}

/// A JSON string of printable ASCII.
fn json(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn text(s: String) -> HeaderValue {
    HeaderValue::from_str(&s).expect("printable ASCII")
}
