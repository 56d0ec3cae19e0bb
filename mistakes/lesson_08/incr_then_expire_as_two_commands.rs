//! MISTAKE: the fixed window counts with INCR on a key per window, then sets
//! the key's expiry with PEXPIRE, a second command.
//!
//! Why learners write it: INCR-then-EXPIRE is the rate limiter of every Redis
//! tutorial, and INCR alone is atomic. But an app server that dies (or whose
//! connection drops) between the two commands leaves a counter with no time to
//! live: nothing ever deletes it, and once it reaches the limit its client is
//! denied for good.
//!
//! Shows: as when an app server dies mid-decision
//! Shows: is left without a time to live: nothing will ever delete it

use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::Mutex;
use kata::redis::{Clock, LocalLimiter, OnFailure, RedisError, Rule, Settings};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
use redis::{Connection, Script};

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

pub struct RedisLimiter {
    rule: Rule,
    settings: Settings,
    script: Script,
    /// Connections not in use: a call takes one (or opens one) and gives it
    /// back only if it answered, so concurrent calls never share one and a
    /// connection that timed out (its reply may still come) is dropped.
    idle: Mutex<Vec<Connection>>,
    local: LocalLimiter,
}

impl RedisLimiter {
    /// Checks the rule as lessons 01–06 do. Connects to nothing: the first
    /// call does, so a limiter built while Redis is down works once it is up.
    pub fn new(rule: Rule, settings: Settings) -> Result<Self, ConfigError> {
        rule.validate()?;
        let body = match rule {
            Rule::FixedWindow { .. } => "",
            Rule::SlidingLog { .. } => SLIDING_LOG,
            Rule::Gcra { .. } => GCRA,
        };
        Ok(RedisLimiter {
            rule,
            script: Script::new(&format!("{PAIRS}{body}")),
            local: LocalLimiter::new(&rule)?,
            settings,
            idle: Mutex::new(Vec::new()),
        })
    }

    fn connect(&self) -> Result<Connection, RedisError> {
        let timeout = self.settings.timeout;
        let con = self.settings.client.get_connection_with_timeout(timeout)?;
        con.set_read_timeout(Some(timeout))?;
        con.set_write_timeout(Some(timeout))?;
        Ok(con)
    }

    /// Runs commands on a connection of its own.
    fn with_connection<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, RedisError> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut con = match pooled {
            Some(con) => con,
            None => self.connect()?,
        };
        let answer = f(&mut con)?;
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(con);
        Ok(answer)
    }

    /// Runs the script with its keys and arguments on a connection of its own.
    fn run(&self, keys: &[String], args: &[String]) -> Result<Vec<redis::Value>, RedisError> {
        let pooled = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut con = match pooled {
            Some(con) => con,
            None => self.connect()?,
        };
        let mut invocation = self.script.prepare_invoke();
        for k in keys {
            invocation.key(k);
        }
        for a in args {
            invocation.arg(a);
        }
        let answer = invocation.invoke(&mut con)?;
        self.idle
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(con);
        Ok(answer)
    }

    /// Redis's answer, or the error that kept it from answering.
    pub fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        let now = u128::from(now.as_nanos());
        let grace = millis_up(self.settings.ttl_grace.as_nanos());
        match self.rule {
            Rule::FixedWindow { limit, window } => {
                let w = window.as_nanos();
                let number = now / w;
                let end = (number + 1) * w;
                let ttl = millis_up(end - now) + grace;
                // One counter per window: a new window starts a new key at 0.
                let k = self.settings.key(key, &format!("fw:{number}"));
                let n: u64 = self.with_connection(|con| redis::cmd("INCR").arg(&k).query(con))?;
                let _: i64 = self.with_connection(|con| {
                    redis::cmd("PEXPIRE").arg(&k).arg(ttl as u64).query(con)
                })?;
                if n <= limit {
                    return Ok(Decision::Allowed {
                        remaining: limit - n,
                    });
                }
                Ok(Decision::Denied {
                    retry_after: wait(end - now),
                })
            }
            Rule::SlidingLog { limit, window } => {
                let w = window.as_nanos();
                let ((s, n), (ws, wn)) = (pair(now), pair(w));
                let ttl = millis_up(w) + grace;
                let keys = [
                    self.settings.key(key, "log"),
                    self.settings.key(key, "log-meta"),
                ];
                let args = [s, n, ws, wn, lua_limit(limit), ttl as u64].map(|x| x.to_string());
                let v = self.run(&keys, &args)?;
                let count: u64 = int(&v, 1)?;
                if int::<u64>(&v, 0)? == 1 {
                    return Ok(Decision::Allowed {
                        remaining: limit - count,
                    });
                }
                let oldest = instant(&text(&v, 2)?)?;
                let at = instant(&text(&v, 3)?)?;
                Ok(Decision::Denied {
                    retry_after: wait(oldest + w - at),
                })
            }
            Rule::Gcra {
                capacity,
                refill_every,
                clock,
            } => {
                let t = refill_every.as_nanos();
                let tau = u128::from(capacity - 1) * t;
                let (mut now_s, mut now_n) = pair(now);
                let ((ts, tn), (taus, taun)) = (pair(t), pair(tau));
                let keys = [self.settings.key(key, "tat")];
                let mut args =
                    [now_s, now_n, ts, tn, taus, taun, grace as u64].map(|x| x.to_string());
                if clock == Clock::Server {
                    args[0] = "server".into();
                }
                let v = self.run(&keys, &args)?;
                let tat = from_pair(int(&v, 1)?, int(&v, 2)?);
                (now_s, now_n) = (int(&v, 3)?, int(&v, 4)?);
                let now = from_pair(now_s, now_n);
                if int::<u64>(&v, 0)? == 1 {
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

impl RateLimiter for RedisLimiter {
    /// Redis's answer, or, when Redis fails, the failure policy's.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.try_check(key, now) {
            Ok(decision) => decision,
            Err(_) => match self.settings.on_failure {
                OnFailure::Open => Decision::Allowed { remaining: 0 },
                OnFailure::Closed { retry_after } => Decision::Denied { retry_after },
                OnFailure::Local => self.local.check(key, now),
            },
        }
    }
}
