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

use std::sync::Mutex;
use std::time::Duration;

use kata::async_redis::{Redis, Settings};
use kata::redis::{Clock, LocalLimiter, OnFailure, RedisError, Rule};
use kata::{AsyncRateLimiter, ConfigError, Decision, RateLimiter, Timestamp};
use redis::aio::MultiplexedConnection;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Script, ScriptInvocation, Value};

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
            local: LocalLimiter::new(&rule)?,
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

impl AsyncRateLimiter for AsyncRedisLimiter {
    /// Redis's answer, or, when Redis fails, the failure policy's.
    async fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.try_check(key, now).await {
            Ok(decision) => decision,
            Err(_) => match self.settings.on_failure {
                OnFailure::Open => Decision::Allowed { remaining: 0 },
                OnFailure::Closed { retry_after } => Decision::Denied { retry_after },
                OnFailure::Local => self.local.check(key, now),
            },
        }
    }
}
