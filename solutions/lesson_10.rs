//! Lesson 10, the reference: lesson 08's limiter over the redis crate's
//! async API, on one `redis-server` or on a Redis Cluster.
//!
//! The rules, scripts and keys are lesson 08's, unchanged: each decision is
//! one Lua script over keys that share the client's hash tag, so on a
//! cluster they share a slot and the script runs whole on one node. What
//! changes is how the script reaches Redis:
//!
//! - one connection for every call, a `MultiplexedConnection` (or, on a
//!   cluster, the cluster client's connection): concurrent calls send their
//!   commands at once and the replies are matched as they come, so no call
//!   waits for another's round trip;
//! - the connection is cloned out of a `std::sync::Mutex` and awaited
//!   without it: no lock is held across an `.await`;
//! - each call is bounded by `tokio::time::timeout`, connecting included;
//!   past it, or on any error (error replies included), the failure policy
//!   answers, and a connection that broke is dropped so that the next call
//!   connects again.
//!
//! The layer is lesson 07's contract over an async limiter: its service's
//! `call` returns a future that awaits the limiter's answer, then calls the
//! inner service (the one `poll_ready` made ready, moved into the future;
//! a clone takes its place) and adds the headers, or answers 429 itself.

use std::future::Future;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::sync::{Arc, AtomicBool, Mutex, Ordering};
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, Response, StatusCode};

use kata::async_redis::{metric, LocalLimiter, Reason, Redis, Settings};
use kata::http::{
    KeyRule, LayerError, Policy, PolicyError, MAX_API_KEY_LEN, PROBLEM_TITLE, PROBLEM_TYPE,
    UNKNOWN_CLIENT,
};
use kata::redis::{Clock, OnFailure, RedisError, Rule};
use kata::{AsyncRateLimiter, ConfigError, Decision, RateLimiter, Timestamp};
use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Script, ScriptInvocation, Value};
use tower::{Layer, Service};

/// Seconds-and-nanoseconds arithmetic, prepended to every script.
const PAIRS: &str = r#"
local B = 1000000000
local function add(as, an, bs, bn)
  local n = an + bn
  if n >= B then return as + bs + 1, n - B end
  return as + bs, n
end
local function sub(as, an, bs, bn)
  local n = an - bn
  if n < 0 then return as - bs - 1, n + B end
  return as - bs, n
end
local function le(as, an, bs, bn) return as < bs or (as == bs and an <= bn) end
local function pad(s, n) return string.format('%011d%09d', s, n) end
"#;

/// KEYS[1]: the client's window (fields h, l: the window's number in two
/// parts; n: requests allowed in it). ARGV: the number of the window that
/// holds now (two parts), the limit, the time to live in ms.
const FIXED_WINDOW: &str = r#"
local h, l = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = 0
local s = redis.call('HMGET', KEYS[1], 'h', 'l', 'n')
if s[1] then
  local sh, sl = tonumber(s[1]), tonumber(s[2])
  -- The same window, or a later one: a late request counts there.
  if le(h, l, sh, sl) then h, l, n = sh, sl, tonumber(s[3]) end
end
if n >= tonumber(ARGV[3]) then return {0, n, h, l} end
redis.call('HSET', KEYS[1], 'h', h, 'l', l, 'n', n + 1)
if h == tonumber(ARGV[1]) and l == tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
return {1, n + 1, h, l}
"#;

/// KEYS[1]: the log, a sorted set whose members sort as text: the instant,
/// 20 digits, then a number of its own (two requests at one instant are two
/// members). KEYS[2]: the latest instant seen and the next number. ARGV:
/// now and the window (pairs), the limit, the time to live in ms.
const SLIDING_LOG: &str = r#"
local ns, nn = tonumber(ARGV[1]), tonumber(ARGV[2])
local m = redis.call('HMGET', KEYS[2], 's', 'n')
if m[1] and le(ns, nn, tonumber(m[1]), tonumber(m[2])) then
  ns, nn = tonumber(m[1]), tonumber(m[2])
end
redis.call('HSET', KEYS[2], 's', ns, 'n', nn)
local cs, cn = sub(ns, nn, tonumber(ARGV[3]), tonumber(ARGV[4]))
if cs >= 0 then
  -- Entries at or before now - W have left the window.
  redis.call('ZREMRANGEBYLEX', KEYS[1], '-', '(' .. pad(add(cs, cn, 0, 1)))
end
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[5]) then
  return {0, count, redis.call('ZRANGE', KEYS[1], 0, 0)[1], pad(ns, nn)}
end
local id = redis.call('HINCRBY', KEYS[2], 'id', 1)
redis.call('ZADD', KEYS[1], 0, pad(ns, nn) .. ':' .. id)
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return {1, count + 1, '', pad(ns, nn)}
"#;

/// KEYS[1]: the client's theoretical arrival time (fields s, n). ARGV: now
/// (a pair, or 'server' for the server's TIME), T and τ (pairs), the grace
/// in ms. Returns the decision, the TAT it was made on (or moved to) and
/// the now it was made at.
const GCRA: &str = r#"
local ns, nn
if ARGV[1] == 'server' then
  local t = redis.call('TIME')
  ns, nn = tonumber(t[1]), tonumber(t[2]) * 1000
else
  ns, nn = tonumber(ARGV[1]), tonumber(ARGV[2])
end
local ts, tn = ns, nn
local v = redis.call('HMGET', KEYS[1], 's', 'n')
if v[1] and le(ns, nn, tonumber(v[1]), tonumber(v[2])) then
  ts, tn = tonumber(v[1]), tonumber(v[2])
end
local ls, ln = add(ns, nn, tonumber(ARGV[5]), tonumber(ARGV[6]))
if not le(ts, tn, ls, ln) then return {0, ts, tn, ns, nn} end
local xs, xn = add(ts, tn, tonumber(ARGV[3]), tonumber(ARGV[4]))
redis.call('HSET', KEYS[1], 's', xs, 'n', xn)
local ds, dn = sub(xs, xn, ns, nn)
redis.call('PEXPIRE', KEYS[1], ds * 1000 + math.ceil(dn / 1000000) + tonumber(ARGV[7]))
return {1, xs, xn, ns, nn}
"#;

const NANOS: u128 = 1_000_000_000;

/// A u128 nanosecond count as (seconds, nanoseconds), both exact in Lua.
fn pair(nanos: u128) -> (u64, u64) {
    ((nanos / NANOS) as u64, (nanos % NANOS) as u64)
}

fn from_pair(s: u64, n: u64) -> u128 {
    u128::from(s) * NANOS + u128::from(n)
}

/// A duration as whole milliseconds, rounded up.
fn millis_up(nanos: u128) -> u128 {
    nanos.div_ceil(1_000_000)
}

fn wait(nanos: u128) -> Duration {
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX).max(1))
}

/// Lua compares counts with the limit as doubles: below 2^53 requests a
/// limit at or past 2^53 is never reached, so it is passed as 2^53.
fn lua_limit(limit: u64) -> u64 {
    limit.min(1 << 53)
}

/// The one connection every call shares: to one server, or to a cluster
/// (whose client keeps a connection per node and follows `MOVED`/`ASK`).
/// Both are handles, cheap to clone, onto one multiplexed connection.
#[derive(Clone)]
enum Connection {
    Server(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl Connection {
    async fn open(settings: &Settings) -> Result<Connection, RedisError> {
        let timeout = settings.timeout;
        match &settings.redis {
            Redis::Server(url) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout));
                let client = kata::redis::client(url)?;
                let con = client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await?;
                Ok(Connection::Server(con))
            }
            Redis::Cluster(urls) => {
                let client =
                    redis::cluster::ClusterClient::builder(urls.iter().map(String::as_str))
                        .connection_timeout(timeout)
                        .response_timeout(timeout)
                        .build()?;
                Ok(Connection::Cluster(client.get_async_connection().await?))
            }
        }
    }

    async fn invoke(
        &mut self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<Vec<Value>, RedisError> {
        match self {
            Connection::Server(con) => invocation.invoke_async(con).await,
            Connection::Cluster(con) => invocation.invoke_async(con).await,
        }
    }
}

/// What one decision sends: the script's keys and arguments.
struct Call {
    keys: Vec<String>,
    args: Vec<String>,
}

pub struct AsyncRedisLimiter {
    rule: Rule,
    settings: Settings,
    script: Script,
    /// The shared connection once one is open. The lock is held only to
    /// clone it out or put it in, never across an `.await`.
    connection: Mutex<Option<Connection>>,
    /// `OnFailure::Local`'s store: lesson 09's, at most
    /// `settings.local.max_keys` keys, built once.
    local: LocalLimiter,
}

impl AsyncRedisLimiter {
    /// Checks the rule and the settings. Connects to nothing: the first
    /// call does, so a limiter built while Redis is down works once it is up.
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        rule.validate()?;
        let body = match rule {
            Rule::FixedWindow { .. } => FIXED_WINDOW,
            Rule::SlidingLog { .. } => SLIDING_LOG,
            Rule::Gcra { .. } => GCRA,
        };
        Ok(AsyncRedisLimiter {
            rule,
            script: Script::new(&format!("{PAIRS}{body}")),
            local: LocalLimiter::new(&rule, settings.local.clone())?,
            settings,
            connection: Mutex::new(None),
        })
    }

    /// The shared connection, opened by the first call that needs it.
    async fn connection(&self) -> Result<Connection, RedisError> {
        let open = self
            .connection
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(con) = open {
            return Ok(con);
        }
        let con = Connection::open(&self.settings).await?;
        *self.connection.lock().unwrap_or_else(|e| e.into_inner()) = Some(con.clone());
        Ok(con)
    }

    /// Runs the script on the shared connection; a connection that broke
    /// is dropped, so that the next call opens a new one.
    async fn run(&self, call: &Call) -> Result<Vec<Value>, RedisError> {
        let mut con = self.connection().await?;
        let mut invocation = self.script.prepare_invoke();
        for k in &call.keys {
            invocation.key(k);
        }
        for a in &call.args {
            invocation.arg(a);
        }
        let answer = con.invoke(&invocation).await;
        if let Err(e) = &answer {
            if e.is_unrecoverable_error() || e.is_io_error() {
                *self.connection.lock().unwrap_or_else(|e| e.into_inner()) = None;
            }
        }
        answer
    }

    /// Redis's answer, or the error that kept it from answering within the
    /// timeout.
    pub async fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let now = u128::from(now.as_nanos());
        let call = self.call(key, now);
        let answer = tokio::time::timeout(self.settings.timeout, self.run(&call)).await;
        match answer {
            Ok(v) => self.decision(&v?, now),
            Err(_) => {
                // A reply still on its way belongs to this call alone: the
                // multiplexed connection stays usable.
                Err(RedisError::from(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("Redis did not answer within {:?}", self.settings.timeout),
                )))
            }
        }
    }

    /// Lesson 08's keys and arguments for one request.
    fn call(&self, key: &str, now: u128) -> Call {
        let grace = millis_up(self.settings.ttl_grace.as_nanos());
        match self.rule {
            Rule::FixedWindow { limit, window } => {
                let w = window.as_nanos();
                let (h, l) = pair(now / w);
                let end = (now / w + 1) * w;
                let ttl = millis_up(end - now) + grace;
                Call {
                    keys: vec![self.settings.key(key, "fw")],
                    args: vec![
                        h.to_string(),
                        l.to_string(),
                        lua_limit(limit).to_string(),
                        ttl.to_string(),
                    ],
                }
            }
            Rule::SlidingLog { limit, window } => {
                let w = window.as_nanos();
                let ((s, n), (ws, wn)) = (pair(now), pair(w));
                let ttl = millis_up(w) + grace;
                Call {
                    keys: vec![
                        self.settings.key(key, "log"),
                        self.settings.key(key, "log-meta"),
                    ],
                    args: [s, n, ws, wn, lua_limit(limit), ttl as u64]
                        .map(|x| x.to_string())
                        .to_vec(),
                }
            }
            Rule::Gcra {
                capacity,
                refill_every,
                clock,
            } => {
                let t = refill_every.as_nanos();
                let tau = u128::from(capacity - 1) * t;
                let (now_s, now_n) = pair(now);
                let ((ts, tn), (taus, taun)) = (pair(t), pair(tau));
                let mut args =
                    [now_s, now_n, ts, tn, taus, taun, grace as u64].map(|x| x.to_string());
                if clock == Clock::Server {
                    args[0] = "server".into();
                }
                Call {
                    keys: vec![self.settings.key(key, "tat")],
                    args: args.to_vec(),
                }
            }
        }
    }

    /// Lesson 08's decision from the script's answer.
    fn decision(&self, v: &[Value], now: u128) -> Result<Decision, RedisError> {
        match self.rule {
            Rule::FixedWindow { limit, window } => {
                let w = window.as_nanos();
                let n: u64 = int(v, 1)?;
                if int::<u64>(v, 0)? == 1 {
                    return Ok(Decision::Allowed {
                        remaining: limit - n,
                    });
                }
                let used = from_pair(int(v, 2)?, int(v, 3)?);
                Ok(Decision::Denied {
                    retry_after: wait((used + 1) * w - now),
                })
            }
            Rule::SlidingLog { limit, window } => {
                let w = window.as_nanos();
                let count: u64 = int(v, 1)?;
                if int::<u64>(v, 0)? == 1 {
                    return Ok(Decision::Allowed {
                        remaining: limit - count,
                    });
                }
                let oldest = instant(&text(v, 2)?)?;
                let at = instant(&text(v, 3)?)?;
                Ok(Decision::Denied {
                    retry_after: wait(oldest + w - at),
                })
            }
            Rule::Gcra {
                capacity,
                refill_every,
                ..
            } => {
                let t = refill_every.as_nanos();
                let tau = u128::from(capacity - 1) * t;
                let tat = from_pair(int(v, 1)?, int(v, 2)?);
                // The instant the script decided at (the server's, on its clock).
                let now = from_pair(int(v, 3)?, int(v, 4)?);
                if int::<u64>(v, 0)? == 1 {
                    // Further requests fit while their TAT stays within τ of now.
                    let remaining = match (now + tau).checked_sub(tat) {
                        Some(room) => room / t + 1,
                        None => 0,
                    };
                    return Ok(Decision::Allowed {
                        remaining: remaining as u64,
                    });
                }
                Ok(Decision::Denied {
                    retry_after: wait(tat - tau - now),
                })
            }
        }
    }
}

/// The `i`th item of a script's answer, as a number.
fn int<T: redis::FromRedisValue>(v: &[redis::Value], i: usize) -> Result<T, RedisError> {
    let item = v.get(i).ok_or_else(|| short(i))?;
    Ok(redis::from_redis_value_ref(item)?)
}

fn text(v: &[redis::Value], i: usize) -> Result<String, RedisError> {
    int(v, i)
}

fn short(i: usize) -> RedisError {
    RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "the script answered fewer items than expected",
        format!("no item {i}"),
    ))
}

/// The instant a log member (or a padded now) starts with.
fn instant(member: &str) -> Result<u128, RedisError> {
    member
        .get(..20)
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| {
            RedisError::from((
                redis::ErrorKind::UnexpectedReturnType,
                "a log member does not start with 20 digits",
                member.to_string(),
            ))
        })
}

impl AsyncRedisLimiter {
    /// The failure policy's answer, counted by why Redis did not answer.
    fn fallback(&self, key: &str, now: Timestamp, reason: Reason) -> Decision {
        metrics::counter!(
            metric::FALLBACKS,
            metric::POLICY => self.settings.local.policy.clone(),
            metric::REASON => reason.label(),
        )
        .increment(1);
        match self.settings.on_failure {
            OnFailure::Open => Decision::Allowed { remaining: 0 },
            OnFailure::Closed { retry_after } => Decision::Denied { retry_after },
            OnFailure::Local => self.local.check(key, now),
        }
    }
}

impl AsyncRateLimiter for AsyncRedisLimiter {
    /// Redis's answer, or, when Redis fails, the failure policy's; either
    /// way counted by its outcome.
    async fn check(&self, key: &str, now: Timestamp) -> Decision {
        let decision = match self.try_check(key, now).await {
            Ok(decision) => decision,
            Err(e) => self.fallback(key, now, Reason::of(&e)),
        };
        let outcome = if decision.is_allowed() {
            metric::ALLOWED
        } else {
            metric::DENIED
        };
        metrics::counter!(
            metric::DECISIONS,
            metric::POLICY => self.settings.local.policy.clone(),
            metric::OUTCOME => outcome,
        )
        .increment(1);
        decision
    }
}

const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
const RETRY_AFTER: HeaderName = HeaderName::from_static("retry-after");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// Lesson 07's layer over an async limiter: cheap to clone, every clone and
/// every service it makes share one limiter.
pub struct AsyncRateLimitLayer<L, C> {
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

impl<L, C> Clone for AsyncRateLimitLayer<L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimitLayer {
            shared: self.shared.clone(),
        }
    }
}

impl<L: AsyncRateLimiter, C: kata::http::Clock> AsyncRateLimitLayer<L, C> {
    /// Lesson 07's checks of the policy, in its order.
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
        Ok(AsyncRateLimitLayer {
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

impl<S, L, C> Layer<S> for AsyncRateLimitLayer<L, C> {
    type Service = AsyncRateLimit<S, L, C>;

    fn layer(&self, inner: S) -> Self::Service {
        AsyncRateLimit {
            inner,
            shared: self.shared.clone(),
        }
    }
}

/// The service the layer wraps around another.
pub struct AsyncRateLimit<S, L, C> {
    inner: S,
    shared: Arc<Shared<L, C>>,
}

impl<S: Clone, L, C> Clone for AsyncRateLimit<S, L, C> {
    fn clone(&self) -> Self {
        AsyncRateLimit {
            inner: self.inner.clone(),
            shared: self.shared.clone(),
        }
    }
}

/// What `call` returns: the limiter's answer, then the inner service's
/// response or the 429.
type Answer<E> = Pin<Box<dyn Future<Output = Result<Response<Body>, E>> + Send>>;

impl<S, L, C> Service<Request<Body>> for AsyncRateLimit<S, L, C>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send,
    L: AsyncRateLimiter + 'static,
    C: kata::http::Clock + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Answer<S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // Ready when the inner service is: an allowed request calls it.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        // The inner service `poll_ready` made ready goes into the future,
        // which calls it later; a clone, not yet ready, takes its place.
        let fresh = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, fresh);
        let shared = self.shared.clone();
        let key = shared.client_key(&req);
        let now = shared.clock.now();
        Box::pin(async move {
            match shared.limiter.check(&key, now).await {
                Decision::Allowed { remaining } => {
                    let mut response = inner.call(req).await?;
                    let ratelimit = header_value(format!("{};r={remaining}", shared.name));
                    let headers = response.headers_mut();
                    headers.insert(RATELIMIT_POLICY, shared.policy_header.clone());
                    headers.insert(RATELIMIT, ratelimit);
                    Ok(response)
                }
                Decision::Denied { retry_after } => Ok(shared.too_many_requests(retry_after)),
            }
        })
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

/// `ip:203.0.113.7`; an IPv6 client by its /64; an IPv4-mapped IPv6
/// address as the IPv4 address it is.
fn address_key(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => format!("ip:{v4}"),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => format!("ip:{v4}"),
            None => {
                let prefix = Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> 64));
                format!("ip:{prefix}/64")
            }
        },
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
