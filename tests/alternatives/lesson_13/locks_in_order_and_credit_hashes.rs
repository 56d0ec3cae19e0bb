//! Lesson 13, an alternative: the token bucket keeps a TAT per key under
//! a lock instead of its credit; `Limits` keeps one lock per limit and
//! takes every one of them, always in the limits' order (so that two
//! requests never wait on each other in a circle), before it asks any;
//! and on Redis each bucket is a hash of its credit and the instant it was
//! counted, lesson 05's arithmetic as it is written. See
//! lessons/lesson_13.md and lessons/CONTRACT.md.

use std::collections::HashMap;
use std::time::Duration;

use super::sync::{AtomicU64, Mutex, Ordering, RwLock};
use kata::cost::{slot, CostError, Limit, RedisSettings, SetupError, Target};
use kata::{ConfigError, Decision, Timestamp};
use redis::Script;

/// Lesson 05's checks: T and the time a bucket takes to fill (C·T), in ns.
fn validate(capacity: u64, refill_every: Duration) -> Result<(u64, u64), ConfigError> {
    if capacity == 0 {
        return Err(ConfigError::ZeroLimit);
    }
    if refill_every.is_zero() {
        return Err(ConfigError::ZeroPeriod);
    }
    let t = u64::try_from(refill_every.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
    let full = capacity.checked_mul(t).ok_or(ConfigError::TooLarge)?;
    Ok((t, full))
}

/// One limit, as the arithmetic needs it.
#[derive(Clone, Copy)]
struct Rule {
    capacity: u64,
    /// T: one token's worth of time.
    t: u64,
    /// C·T: the time an empty bucket takes to fill.
    full: u64,
}

impl Rule {
    fn new(capacity: u64, refill_every: Duration) -> Result<Rule, ConfigError> {
        let (t, full) = validate(capacity, refill_every)?;
        Ok(Rule { capacity, t, full })
    }

    /// GCRA for a cost of `n` (at most the capacity) on a key whose TAT is
    /// `tat`: the new TAT and the tokens left, or the wait.
    fn step(&self, tat: u64, n: u64, now: u64) -> Result<(u64, u64), u64> {
        // The TAT never runs more than C·T ahead of the latest now, and
        // the checks keep now + C·T within u64: this cannot overflow.
        let next = u128::from(tat.max(now)) + u128::from(n * self.t);
        let ahead = next - u128::from(now);
        let full = u128::from(self.full);
        if ahead > full {
            return Err((ahead - full) as u64);
        }
        Ok((next as u64, ((full - ahead) / u128::from(self.t)) as u64))
    }
}

/// The errors every request is checked for first, limit by limit.
fn refuse(rules: &[Rule], keys: usize, n: u64) -> Result<(), CostError> {
    if n == 0 {
        return Err(CostError::ZeroCost);
    }
    if keys != rules.len() {
        return Err(CostError::WrongKeys {
            expected: rules.len(),
            got: keys,
        });
    }
    match rules.iter().position(|r| n > r.capacity) {
        Some(limit) => Err(CostError::AboveCapacity {
            limit,
            cost: n,
            capacity: rules[limit].capacity,
        }),
        None => Ok(()),
    }
}

fn wait(ns: u64) -> Decision {
    Decision::Denied {
        retry_after: Duration::from_nanos(ns),
    }
}

/// Lesson 05's token bucket, kept as a TAT per key under one lock.
pub struct TokenBucket {
    rule: Rule,
    buckets: Mutex<HashMap<String, u64>>,
}

impl TokenBucket {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        Ok(TokenBucket {
            rule: Rule::new(capacity, refill_every)?,
            buckets: Mutex::new(HashMap::new()),
        })
    }

    pub fn check_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(key, n, now.as_nanos(), true)
    }

    pub fn peek_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(key, n, now.as_nanos(), false)
    }

    fn ask(&self, key: &str, n: u64, now: u64, charge: bool) -> Result<Decision, CostError> {
        refuse(&[self.rule], 1, n)?;
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let tat = buckets.get(key).copied().unwrap_or(0);
        match self.rule.step(tat, n, now) {
            Err(ns) => Ok(wait(ns)),
            Ok((next, remaining)) => {
                if charge {
                    buckets.insert(key.to_string(), next);
                }
                Ok(Decision::Allowed { remaining })
            }
        }
    }
}

/// Lesson 06's GCRA, lock-free on the per-key path: one TAT per key in an
/// `AtomicU64`, moved by n·T with a compare-and-swap.
pub struct Gcra {
    rule: Rule,
    keys: RwLock<HashMap<Box<str>, AtomicU64>>,
}

impl Gcra {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        Ok(Gcra {
            rule: Rule::new(capacity, refill_every)?,
            keys: RwLock::new(HashMap::new()),
        })
    }

    pub fn check_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        refuse(&[self.rule], 1, n)?;
        let now = now.as_nanos();
        {
            let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
            if let Some(tat) = keys.get(key) {
                return Ok(self.charge(tat, n, now));
            }
        }
        let mut keys = self.keys.write().unwrap_or_else(|e| e.into_inner());
        let tat = keys.entry(key.into()).or_insert_with(|| AtomicU64::new(0));
        Ok(self.charge(tat, n, now))
    }

    pub fn peek_n(&self, key: &str, n: u64, now: Timestamp) -> Result<Decision, CostError> {
        refuse(&[self.rule], 1, n)?;
        let keys = self.keys.read().unwrap_or_else(|e| e.into_inner());
        // A key never charged is a full bucket: a TAT of 0, not inserted.
        let tat = keys.get(key).map_or(0, |t| t.load(Ordering::Acquire));
        Ok(match self.rule.step(tat, n, now.as_nanos()) {
            Ok((_, remaining)) => Decision::Allowed { remaining },
            Err(ns) => wait(ns),
        })
    }

    fn charge(&self, tat: &AtomicU64, n: u64, now: u64) -> Decision {
        let mut seen = tat.load(Ordering::Acquire);
        loop {
            let (next, remaining) = match self.rule.step(seen, n, now) {
                Ok(admitted) => admitted,
                // A denial writes nothing.
                Err(ns) => return wait(ns),
            };
            match tat.compare_exchange_weak(seen, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return Decision::Allowed { remaining },
                // Another thread moved the TAT first: decide again on its value.
                Err(actual) => seen = actual,
            }
        }
    }
}

/// Checks every limit, then the limits' own errors, as `Limits::new` does.
fn rules(limits: &[Limit]) -> Result<Vec<Rule>, SetupError> {
    if limits.is_empty() {
        return Err(SetupError::NoLimits);
    }
    limits
        .iter()
        .enumerate()
        .map(|(index, l)| {
            Rule::new(l.capacity, l.refill_every)
                .map_err(|error| SetupError::Limit { index, error })
        })
        .collect()
}

/// The answer of every limit to one request, from their TATs: the TATs
/// after it when every limit admits it, or the longest wait.
fn decide(rules: &[Rule], tats: &[u64], n: u64, now: u64) -> Result<(Vec<u64>, u64), u64> {
    let mut next = Vec::with_capacity(rules.len());
    let (mut remaining, mut longest) = (u64::MAX, 0);
    for (rule, &tat) in rules.iter().zip(tats) {
        match rule.step(tat, n, now) {
            Ok((tat, left)) => {
                next.push(tat);
                remaining = remaining.min(left);
            }
            // Every limit is asked: the wait is the longest of them.
            Err(ns) => longest = longest.max(ns),
        }
    }
    if longest > 0 {
        Err(longest)
    } else {
        Ok((next, remaining))
    }
}

/// Several limits: a request is admitted only if each of its limits admits
/// it, and then each is charged. Every limit's lock, taken in the limits'
/// order and held to the end, makes the whole decision one step no other
/// thread can see half of.
pub struct Limits {
    rules: Vec<Rule>,
    /// One map of TATs per limit, each behind its own lock.
    tats: Vec<Mutex<HashMap<String, u64>>>,
}

impl Limits {
    pub fn new(limits: &[Limit]) -> Result<Self, SetupError> {
        let rules = rules(limits)?;
        Ok(Limits {
            tats: rules.iter().map(|_| Mutex::new(HashMap::new())).collect(),
            rules,
        })
    }

    pub fn check(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(keys, n, now.as_nanos(), true)
    }

    pub fn peek(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(keys, n, now.as_nanos(), false)
    }

    fn ask(&self, keys: &[&str], n: u64, now: u64, charge: bool) -> Result<Decision, CostError> {
        refuse(&self.rules, keys.len(), n)?;
        // Every lock, in the limits' order, held until the end.
        let mut locked: Vec<_> = self
            .tats
            .iter()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
            .collect();
        let held: Vec<u64> = locked
            .iter()
            .zip(keys)
            .map(|(map, k)| map.get(*k).copied().unwrap_or(0))
            .collect();
        match decide(&self.rules, &held, n, now) {
            Err(ns) => Ok(wait(ns)),
            Ok((next, remaining)) => {
                if charge {
                    for ((map, k), tat) in locked.iter_mut().zip(keys).zip(next) {
                        map.insert(k.to_string(), tat);
                    }
                }
                Ok(Decision::Allowed { remaining })
            }
        }
    }
}

/// One script decides a request for every limit at once: it reads each
/// bucket's credit and instant (a hash at KEYS[i]), works out every
/// limit's answer, and writes the buckets only if every limit admits it
/// (and only for a check). ARGV: now,
/// the cost, 1 to charge, the grace in ms, then T and C·T of each limit.
/// Numbers stay below 2^53, where Lua's are exact.
const SCRIPT: &str = r#"
local now, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local charge, grace = ARGV[3] == '1', tonumber(ARGV[4])
local longest, remaining, left = 0, nil, {}
for i, key in ipairs(KEYS) do
  local t, full = tonumber(ARGV[3 + 2 * i]), tonumber(ARGV[4 + 2 * i])
  local h = redis.call('HMGET', key, 'credit', 'at')
  local level = full
  if h[1] then
    level = math.min(full, tonumber(h[1]) + math.max(0, now - tonumber(h[2])))
  end
  local need = n * t
  if level < need then
    if need - level > longest then longest = need - level end
  else
    left[i] = level - need
    local r = math.floor(left[i] / t)
    if remaining == nil or r < remaining then remaining = r end
  end
end
if longest > 0 then return {0, longest} end
if charge then
  for i, key in ipairs(KEYS) do
    local full = tonumber(ARGV[4 + 2 * i])
    redis.call('HSET', key, 'credit', string.format('%.0f', left[i]), 'at', string.format('%.0f', now))
    redis.call('PEXPIRE', key, math.ceil((full - left[i]) / 1000000) + grace)
  end
end
return {1, remaining}
"#;

enum Connection {
    Single(redis::Connection),
    // Boxed: a cluster connection is several times a single one's size.
    Cluster(Box<redis::cluster::ClusterConnection>),
}

/// `Limits`, with every bucket's credit in Redis: each request is one
/// script over its keys, which share one slot on a cluster through a hash
/// tag.
pub struct RedisLimits {
    rules: Vec<Rule>,
    settings: RedisSettings,
    script: Script,
    connection: Mutex<Connection>,
}

impl RedisLimits {
    pub fn new(limits: &[Limit], settings: RedisSettings) -> Result<Self, SetupError> {
        let rules = rules(limits)?;
        let failed = |e: redis::RedisError| SetupError::Redis(e.to_string());
        let timeout = Some(settings.timeout);
        let connection = match &settings.target {
            Target::Single(url) => {
                let c = redis::Client::open(url.as_str())
                    .and_then(|c| c.get_connection_with_timeout(settings.timeout))
                    .map_err(failed)?;
                c.set_read_timeout(timeout).map_err(failed)?;
                c.set_write_timeout(timeout).map_err(failed)?;
                Connection::Single(c)
            }
            Target::Cluster(urls) => Connection::Cluster(Box::new(
                redis::cluster::ClusterClientBuilder::new(urls.clone())
                    .connection_timeout(settings.timeout)
                    .response_timeout(settings.timeout)
                    .build()
                    .and_then(|c| c.get_connection())
                    .map_err(failed)?,
            )),
        };
        Ok(RedisLimits {
            rules,
            settings,
            script: Script::new(SCRIPT),
            connection: Mutex::new(connection),
        })
    }

    pub fn check(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(keys, n, now, true)
    }

    pub fn peek(&self, keys: &[&str], n: u64, now: Timestamp) -> Result<Decision, CostError> {
        self.ask(keys, n, now, false)
    }

    fn ask(
        &self,
        keys: &[&str],
        n: u64,
        now: Timestamp,
        charge: bool,
    ) -> Result<Decision, CostError> {
        refuse(&self.rules, keys.len(), n)?;
        let keys: Vec<String> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| self.settings.key(i, k))
            .collect();
        if matches!(self.settings.target, Target::Cluster(_)) {
            // One script runs on one node: its keys must share a slot.
            let first = slot(&keys[0]);
            if let Some(other) = keys.iter().find(|k| slot(k) != first) {
                return Err(CostError::CrossSlot {
                    first: keys[0].clone(),
                    other: other.clone(),
                });
            }
        }
        let mut call = self.script.prepare_invoke();
        for k in &keys {
            call.key(k);
        }
        call.arg(now.as_nanos())
            .arg(n)
            .arg(u8::from(charge))
            .arg(self.settings.grace.as_millis() as u64);
        for r in &self.rules {
            call.arg(r.t).arg(r.full);
        }
        let mut connection = self.connection.lock().unwrap_or_else(|e| e.into_inner());
        let answer: (u8, u64) = match &mut *connection {
            Connection::Single(c) => call.invoke(c),
            Connection::Cluster(c) => call.invoke(&mut **c),
        }
        .map_err(|e| CostError::Redis(e.to_string()))?;
        Ok(match answer {
            (1, remaining) => Decision::Allowed { remaining },
            (_, ns) => wait(ns),
        })
    }
}
