//! Lesson 10, another design: the same contract as `solutions/lesson_10.rs`,
//! kept differently.
//!
//! - The scripts and the decisions are lesson 08's other design (the
//!   window known by its end, the log without a "latest" field, answers as
//!   strings), made async: one generic `decide` over any async connection,
//!   called with the server's or the cluster's.
//! - The connection is built once and replaced only when it fails with
//!   anything but an error reply: a `RwLock` holds it, read to clone it
//!   out, written only to replace it, never held across an `.await`.
//! - The layer is lesson 07's other design (a future written by hand, the
//!   key walk from the right, the problem body by hand), whose future polls
//!   the limiter's answer first.
//! - A cluster's client is built with two retries (a `MOVED` or `ASK` is
//!   followed by a retry; with none, a redirect would be an error), all of
//!   them within the call's timeout.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::sync::{Arc, AtomicBool, Ordering, RwLock};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderValue, Request, Response, StatusCode};
use kata::http::{
    KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};

use kata::async_redis::{metric, LocalLimiter, Reason, Redis, Settings};
use kata::redis::{Clock, OnFailure, RedisError, Rule};
use kata::{AsyncRateLimiter, ConfigError, Decision, RateLimiter, Timestamp};
use metrics::Counter;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Script};
use tower::{Layer, Service};

/// Pair arithmetic: every instant is (whole seconds, nanoseconds past them).
const PAIRS: &str = r"
local B = 1000000000
local function add(as, an, bs, bn)
  local n = an + bn
  if n >= B then return as + bs + 1, n - B end
  return as + bs, n
end
-- a - b, for a >= b
local function sub(as, an, bs, bn)
  local n = an - bn
  if n < 0 then return as - bs - 1, n + B end
  return as - bs, n
end
local function lt(as, an, bs, bn) return as < bs or (as == bs and an < bn) end
local function le(as, an, bs, bn) return as < bs or (as == bs and an <= bn) end
-- a duration as whole milliseconds, rounded up (n < 10^9, so exact)
local function ms(s, n) return s * 1000 + math.ceil(n / 1000000) end
";

/// KEYS[1] the window's hash. ARGV: the window's end (s, n), now (s, n),
/// limit, grace in ms. The window is known by its end.
const FIXED_WINDOW: &str = r"
local es, en = tonumber(ARGV[1]), tonumber(ARGV[2])
local ns, nn = tonumber(ARGV[3]), tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local grace = tonumber(ARGV[6])
local st = redis.call('HMGET', KEYS[1], 'es', 'en', 'c')
local count = 0
if st[1] then
  local ss, sn = tonumber(st[1]), tonumber(st[2])
  if le(es, en, ss, sn) then
    -- the same window, or a late request: it counts in the stored one
    es, en = ss, sn
    count = tonumber(st[3])
  end
end
if count >= limit then
  return {0, count, tostring(es), tostring(en)}
end
count = count + 1
redis.call('HSET', KEYS[1], 'es', tostring(es), 'en', tostring(en), 'c', count)
local ds, dn = sub(es, en, ns, nn)
redis.call('PEXPIRE', KEYS[1], ms(ds, dn) + grace)
return {1, count, tostring(es), tostring(en)}
";

/// KEYS[1] the log (a sorted set, all scores 0), KEYS[2] the sequence.
/// ARGV: now (s, n), W (s, n), limit, grace in ms.
const SLIDING_LOG: &str = r"
local ns, nn = tonumber(ARGV[1]), tonumber(ARGV[2])
local ws, wn = tonumber(ARGV[3]), tonumber(ARGV[4])
local limit = tonumber(ARGV[5])
local grace = tonumber(ARGV[6])
local function fmt(s, n) return string.format('%011d%09d', s, n) end
local function parse(m)
  return tonumber(string.sub(m, 1, 11)), tonumber(string.sub(m, 12, 20))
end
-- a late request is decided at the newest entry's instant
local ts, tn = ns, nn
local newest = redis.call('ZRANGE', KEYS[1], -1, -1)
if newest[1] then
  local s, n = parse(newest[1])
  if lt(ts, tn, s, n) then ts, tn = s, n end
end
-- drop the entries at or before t - W
local cs, cn = add(ts, tn, 0, 1)
if le(ws, wn, cs, cn) then
  local rs, rn = sub(cs, cn, ws, wn)
  redis.call('ZREMRANGEBYLEX', KEYS[1], '-', '(' .. fmt(rs, rn))
end
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)
  local os, on = parse(oldest[1])
  return {0, count, tostring(os), tostring(on)}
end
local seq = redis.call('HINCRBY', KEYS[2], 'seq', 1)
redis.call('ZADD', KEYS[1], 0, fmt(ts, tn) .. ':' .. seq)
-- the newest entry leaves the window at t + W
local es, en = add(ts, tn, ws, wn)
local ds, dn = sub(es, en, ns, nn)
local ttl = ms(ds, dn) + grace
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, count + 1, '0', '0'}
";

/// KEYS[1] the theoretical arrival time. ARGV: now (s, n) or 'server',
/// T (s, n), tau (s, n), grace in ms.
const GCRA: &str = r"
local ns, nn
if ARGV[1] == 'server' then
  local t = redis.call('TIME')
  ns, nn = tonumber(t[1]), tonumber(t[2]) * 1000
else
  ns, nn = tonumber(ARGV[1]), tonumber(ARGV[2])
end
local ts, tn = tonumber(ARGV[3]), tonumber(ARGV[4])
local us, un = tonumber(ARGV[5]), tonumber(ARGV[6])
local grace = tonumber(ARGV[7])
local as, an = ns, nn
local st = redis.call('HMGET', KEYS[1], 's', 'n')
if st[1] then
  local s, n = tonumber(st[1]), tonumber(st[2])
  if lt(as, an, s, n) then as, an = s, n end
end
local ls, ln = add(ns, nn, us, un)
if lt(ls, ln, as, an) then
  return {0, tostring(as), tostring(an), tostring(ns), tostring(nn)}
end
local xs, xn = add(as, an, ts, tn)
redis.call('HSET', KEYS[1], 's', tostring(xs), 'n', tostring(xn))
local ds, dn = sub(xs, xn, ns, nn)
redis.call('PEXPIRE', KEYS[1], ms(ds, dn) + grace)
return {1, tostring(xs), tostring(xn), tostring(ns), tostring(nn)}
";

const B: u128 = 1_000_000_000;
/// No count reaches 2^53, and a Lua number is exact up to there.
const MAX_LIMIT: u64 = 1 << 53;

/// An instant or duration (at most ~2^65 ns) as (seconds, nanos), both as text.
fn pair(x: u128) -> (String, String) {
    ((x / B).to_string(), (x % B).to_string())
}

fn unpair(s: &str, n: &str) -> Result<u128, RedisError> {
    let bad = || RedisError::from((redis::ErrorKind::Parse, "bad pair from the script"));
    let s: u128 = s.parse().map_err(|_| bad())?;
    let n: u128 = n.parse().map_err(|_| bad())?;
    Ok(s * B + n)
}

fn nanos(d: u128) -> Duration {
    let d = d.clamp(1, u64::MAX as u128) as u64;
    Duration::from_nanos(d)
}

#[derive(Clone)]
enum Shared {
    One(MultiplexedConnection),
    Many(ClusterConnection),
}

pub struct AsyncRedisLimiter {
    rule: Rule,
    settings: Settings,
    script: Script,
    shared: RwLock<Option<Shared>>,
    local: LocalLimiter,
    /// Registered once, in `new`: allowed, denied.
    decided: [Counter; 2],
    /// One per reason, in the order of `Reason::ALL`.
    fell_back: [Counter; 5],
}

impl AsyncRedisLimiter {
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        rule.validate()?;
        let body = match rule {
            Rule::FixedWindow { .. } => FIXED_WINDOW,
            Rule::SlidingLog { .. } => SLIDING_LOG,
            Rule::Gcra { .. } => GCRA,
        };
        let script = Script::new(&format!("{PAIRS}{body}"));
        let local = LocalLimiter::new(&rule, settings.local.clone())?;
        let policy = settings.local.policy.clone();
        let decided = [metric::ALLOWED, metric::DENIED].map(|outcome| {
            metrics::counter!(metric::DECISIONS, metric::POLICY => policy.clone(), metric::OUTCOME => outcome)
        });
        let fell_back = Reason::ALL.map(|reason| {
            metrics::counter!(metric::FALLBACKS, metric::POLICY => policy.clone(), metric::REASON => reason.label())
        });
        Ok(AsyncRedisLimiter {
            rule,
            settings,
            script,
            shared: RwLock::new(None),
            local,
            decided,
            fell_back,
        })
    }

    async fn open(&self) -> Result<Shared, RedisError> {
        let t = self.settings.timeout;
        Ok(match &self.settings.redis {
            Redis::Server(url) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(t))
                    .set_response_timeout(Some(t));
                Shared::One(
                    kata::redis::client(url)?
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?,
                )
            }
            Redis::Cluster(urls) => Shared::Many(
                redis::cluster::ClusterClient::builder(urls.clone())
                    .retries(2)
                    .connection_timeout(t)
                    .response_timeout(t)
                    .build()?
                    .get_async_connection()
                    .await?,
            ),
        })
    }

    async fn attempt(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let held = self
            .shared
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let shared = match held {
            Some(s) => s,
            None => {
                let s = self.open().await?;
                *self.shared.write().unwrap_or_else(|e| e.into_inner()) = Some(s.clone());
                s
            }
        };
        let r = match shared {
            Shared::One(mut c) => self.decide(&mut c, key, now).await,
            Shared::Many(mut c) => self.decide(&mut c, key, now).await,
        };
        // An error reply came from a healthy connection; anything else may
        // have broken it.
        if let Err(e) = &r {
            if e.code().is_none() {
                *self.shared.write().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
        r
    }

    /// Redis's answer, or why there is none, within `settings.timeout`.
    pub async fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        match tokio::time::timeout(self.settings.timeout, self.attempt(key, now)).await {
            Ok(r) => r,
            Err(_) => Err(RedisError::from(std::io::Error::from(
                std::io::ErrorKind::TimedOut,
            ))),
        }
    }

    async fn decide<C: ConnectionLike>(
        &self,
        con: &mut C,
        key: &str,
        now: Timestamp,
    ) -> Result<Decision, RedisError> {
        let now = now.as_nanos() as u128;
        let grace = self.settings.ttl_grace.as_nanos().div_ceil(1_000_000) as u64;
        let (ns, nn) = pair(now);
        let mut call = self.script.prepare_invoke();
        match self.rule {
            Rule::FixedWindow { limit, window } => {
                let w = window.as_nanos();
                let end = (now / w + 1) * w;
                let (es, en) = pair(end);
                call.key(self.settings.key(key, "fw"))
                    .arg(es)
                    .arg(en)
                    .arg(ns)
                    .arg(nn)
                    .arg(limit.min(MAX_LIMIT))
                    .arg(grace);
                let (ok, count, es, en): (u8, u64, String, String) = call.invoke_async(con).await?;
                if ok == 1 {
                    Ok(Decision::Allowed {
                        remaining: limit - count,
                    })
                } else {
                    let end = unpair(&es, &en)?;
                    Ok(Decision::Denied {
                        retry_after: nanos(end.saturating_sub(now)),
                    })
                }
            }
            Rule::SlidingLog { limit, window } => {
                let (ws, wn) = pair(window.as_nanos());
                call.key(self.settings.key(key, "log"))
                    .key(self.settings.key(key, "seq"))
                    .arg(ns)
                    .arg(nn)
                    .arg(ws)
                    .arg(wn)
                    .arg(limit.min(MAX_LIMIT))
                    .arg(grace);
                let (ok, count, os, on): (u8, u64, String, String) = call.invoke_async(con).await?;
                if ok == 1 {
                    Ok(Decision::Allowed {
                        remaining: limit - count,
                    })
                } else {
                    let leaves = unpair(&os, &on)? + window.as_nanos();
                    Ok(Decision::Denied {
                        retry_after: nanos(leaves.saturating_sub(now)),
                    })
                }
            }
            Rule::Gcra {
                capacity,
                refill_every,
                clock,
            } => {
                let t = refill_every.as_nanos();
                let tau = (capacity as u128 - 1) * t;
                call.key(self.settings.key(key, "gcra"));
                match clock {
                    Clock::Passed => call.arg(ns).arg(nn),
                    Clock::Server => call.arg("server").arg(0),
                };
                let (ts, tn) = pair(t);
                let (us, un) = pair(tau);
                call.arg(ts).arg(tn).arg(us).arg(un).arg(grace);
                let (ok, xs, xn, ns, nn): (u8, String, String, String, String) =
                    call.invoke_async(con).await?;
                let tat = unpair(&xs, &xn)?;
                let now = unpair(&ns, &nn)?;
                if ok == 1 {
                    let remaining = if tat <= now + tau {
                        (now + tau - tat) / t + 1
                    } else {
                        0
                    };
                    Ok(Decision::Allowed {
                        remaining: remaining.min(u64::MAX as u128) as u64,
                    })
                } else {
                    Ok(Decision::Denied {
                        retry_after: nanos(tat - tau - now),
                    })
                }
            }
        }
    }
}

impl AsyncRateLimiter for AsyncRedisLimiter {
    async fn check(&self, key: &str, now: Timestamp) -> Decision {
        let d = match self.try_check(key, now).await {
            Ok(d) => d,
            Err(e) => {
                let reason = Reason::of(&e);
                let at = Reason::ALL.iter().position(|r| *r == reason);
                self.fell_back[at.expect("every reason is in ALL")].increment(1);
                match self.settings.on_failure {
                    OnFailure::Open => Decision::Allowed { remaining: 0 },
                    OnFailure::Closed { retry_after } => Decision::Denied { retry_after },
                    OnFailure::Local => self.local.check(key, now),
                }
            }
        };
        self.decided[usize::from(!d.is_allowed())].increment(1);
        d
    }
}

pub struct AsyncRateLimitLayer<L, C> {
    limiter: Arc<L>,
    config: Arc<Config>,
    reported: Arc<AtomicBool>,
    clock: C,
}

pub struct Config {
    keys: KeyRule,
    policy: Policy,
    quoted: String,
}

impl<L, C: Clone> Clone for AsyncRateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimitLayer {
            limiter: Arc::clone(&self.limiter),
            config: Arc::clone(&self.config),
            reported: Arc::clone(&self.reported),
            clock: self.clock.clone(),
        }
    }
}

impl<L: AsyncRateLimiter, C: kata::http::Clock> AsyncRateLimitLayer<L, C> {
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
        Ok(AsyncRateLimitLayer {
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

impl<S, L, C: Clone> Layer<S> for AsyncRateLimitLayer<L, C> {
    type Service = AsyncRateLimited<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        AsyncRateLimited {
            inner,
            layer: self.clone(),
        }
    }
}

pub struct AsyncRateLimited<S, L, C> {
    inner: S,
    layer: AsyncRateLimitLayer<L, C>,
}

impl<S: Clone, L, C: Clone> Clone for AsyncRateLimited<S, L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimited {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

/// The service's future, by hand: the limiter's answer to come, with the
/// inner service and the request waiting; then the inner service's
/// response to come, with the headers to add; or the 429, ready.
pub enum Answer<S: Service<Request<Body>>> {
    Deciding {
        decision: Pin<Box<dyn Future<Output = Decision> + Send>>,
        waiting: Option<Box<(S, Request<Body>)>>,
        config: Arc<Config>,
    },
    Inner {
        future: Pin<Box<S::Future>>,
        headers: Option<[HeaderValue; 2]>,
    },
    Refused(Option<Response<Body>>),
}

impl<S> Future for Answer<S>
where
    S: Service<Request<Body>, Response = Response<Body>>,
{
    type Output = Result<Response<Body>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every variant is Unpin: what is not is pinned in its box.
        let this = self.get_mut();
        loop {
            match this {
                Answer::Deciding {
                    decision,
                    waiting,
                    config,
                } => {
                    let Poll::Ready(decision) = decision.as_mut().poll(cx) else {
                        return Poll::Pending;
                    };
                    let (mut inner, req) = *waiting.take().expect("polled after it was ready");
                    *this = match decision {
                        Decision::Allowed { remaining } => Answer::Inner {
                            future: Box::pin(inner.call(req)),
                            headers: Some([
                                policy_header(config),
                                text(format!("{};r={remaining}", config.quoted)),
                            ]),
                        },
                        Decision::Denied { retry_after } => {
                            Answer::Refused(Some(refused(config, retry_after)))
                        }
                    };
                }
                Answer::Inner { future, headers } => {
                    return match future.as_mut().poll(cx) {
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                        Poll::Ready(Ok(mut response)) => {
                            let [policy, ratelimit] =
                                headers.take().expect("polled after it was ready");
                            response.headers_mut().insert("ratelimit-policy", policy);
                            response.headers_mut().insert("ratelimit", ratelimit);
                            Poll::Ready(Ok(response))
                        }
                    };
                }
                Answer::Refused(response) => {
                    return Poll::Ready(Ok(response.take().expect("polled after it was ready")));
                }
            }
        }
    }
}

impl<S, L, C> Service<Request<Body>> for AsyncRateLimited<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone,
    L: AsyncRateLimiter + 'static,
    C: kata::http::Clock,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        let key = self.key(&req);
        let now = self.layer.clock.now();
        let limiter = Arc::clone(&self.layer.limiter);
        let fresh = self.inner.clone();
        Answer::Deciding {
            decision: Box::pin(async move { limiter.check(&key, now).await }),
            waiting: Some(Box::new((std::mem::replace(&mut self.inner, fresh), req))),
            config: Arc::clone(&self.layer.config),
        }
    }
}

fn policy_header(config: &Config) -> HeaderValue {
    text(format!(
        "{};q={};w={}",
        config.quoted,
        config.policy.quota,
        config.policy.window.as_secs()
    ))
}

/// The 429, its body written by hand.
fn refused(config: &Config, retry_after: std::time::Duration) -> Response<Body> {
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
    h.insert("ratelimit-policy", policy_header(config));
    response
}

impl<S, L, C> AsyncRateLimited<S, L, C> {
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
