//! Lesson 13's checks on a real `redis-server` and a real Redis Cluster:
//! answers against the model, one script per request with every key in
//! KEYS, keys that expire, the races of [`super::race`] between two app
//! servers whose commands reach Redis in every order, and on the cluster
//! keys that share a slot through a hash tag, or a clear error.

use std::sync::Arc;
use std::time::Duration;

use super::draw::answer;
use super::drive::{Answer, CostVariant, Limiter};
use super::gen::{Req, Script};
use super::race::Race;
use super::{CostError, Limit, RedisSettings, SetupError, Target, Timestamp};
use crate::infra::cluster::RedisCluster;
use crate::infra::proxy::Proxy;
use crate::infra::server::{next_id, RedisServer, Unreachable};
use crate::watchdog::time_limit;

/// How long the checks' keys outlive their buckets' refill (the checks'
/// time is not Redis's).
pub const GRACE: Duration = Duration::from_secs(60);

/// Settings for `target` under a prefix no other check uses.
pub fn settings(target: Target) -> RedisSettings {
    RedisSettings {
        target,
        prefix: format!("l13:{}:{}:", std::process::id(), next_id()),
        grace: GRACE,
        timeout: Duration::from_secs(2),
    }
}

/// The shared server's settings.
pub fn on_server() -> RedisSettings {
    settings(Target::Single(RedisServer::shared().url()))
}

fn build(v: CostVariant, limits: &[Limit], s: RedisSettings) -> Result<Box<dyn Limiter>, String> {
    (v.redis)(limits, s).map_err(|e| format!("RedisLimits::new returned Err({e:?}): {e}"))
}

/// The Redis keys of a request's keys.
fn redis_keys(s: &RedisSettings, keys: &[&str]) -> Vec<String> {
    keys.iter().enumerate().map(|(i, k)| s.key(i, k)).collect()
}

/// A script on the shared server: every answer the model's.
pub fn agrees(v: CostVariant, script: &Script) -> Result<(), String> {
    let l = build(v, &script.limits, on_server())?;
    super::verdict::follow(&*l, script).map(|_| ())
}

/// The requests of the one-script check: a check, a peek, a denial, each
/// error, and three limits.
fn a_few() -> Script {
    let at = |ms: u64| ms * 1_000_000;
    let r = |keys: &[&str], cost, ms, peek| Req {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        cost,
        at: at(ms),
        peek,
    };
    let k = ["alice", "acme", "all"];
    Script {
        single: false,
        on_redis: false,
        limits: vec![
            Limit::new("user", 3, Duration::from_millis(100)),
            Limit::new("org", 5, Duration::from_millis(50)),
            Limit::new("global", 9, Duration::from_millis(10)),
        ],
        requests: vec![
            r(&k, 2, 0, false),
            r(&k, 2, 0, true),
            r(&k, 2, 0, false),
            r(&k, 1, 20, false),
            r(&k, 0, 20, false),
            r(&k[..2], 1, 20, false),
            r(&k, 4, 20, false),
            r(&k, 3, 500, true),
            r(&k, 3, 500, false),
        ],
    }
}

/// Each request is one script (EVALSHA or EVAL) whose KEYS are its Redis
/// keys, and no other command touches data; a request refused with an
/// error sends nothing.
pub fn one_script(v: CostVariant) -> Result<(), String> {
    let server = RedisServer::shared();
    let proxy = Proxy::start(server.addr(), 1);
    let s = settings(Target::Single(proxy.url(0)));
    let script = a_few();
    let l = build(v, &script.limits, s.clone())?;
    // Once first, so that the script is loaded.
    let warm = ["warm", "warm", "warm"];
    l.peek(&warm, 1, Timestamp::ZERO)
        .map_err(|e| format!("peek({warm:?}, 1) at 0ns returned Err({e:?})"))?;
    let mut model = script.model();
    for r in &script.requests {
        proxy.clear_log();
        let got = if r.peek {
            l.peek(&r.keys(), r.cost, r.now())
        } else {
            l.check(&r.keys(), r.cost, r.now())
        };
        let want = model.answer(&r.keys(), r.cost, r.at, r.peek);
        let what = r.describe(false);
        if got != want {
            return Err(format!(
                "{what} answered {}; the contract: {}",
                answer(&got),
                answer(&want)
            ));
        }
        let sent: Vec<_> = proxy
            .log()
            .into_iter()
            .map(|(_, c)| c)
            .filter(|c| !c.free())
            .collect();
        let said = || {
            sent.iter()
                .map(|c| format!("  {}", c.text()))
                .collect::<Vec<_>>()
                .join("\n")
        };
        if want.is_err() {
            if !sent.is_empty() {
                return Err(format!(
                    "{what} is refused before any limit is asked ({}), yet it sent Redis:\n{}",
                    answer(&want),
                    said()
                ));
            }
            continue;
        }
        let mut expected = redis_keys(&s, &r.keys());
        expected.sort();
        let one = match sent.as_slice() {
            [one] => one,
            _ => {
                return Err(format!(
                    "{what} sent Redis {} commands that touch data, where one script must decide \
                     it (another app server's commands may come between two of them):\n{}",
                    sent.len(),
                    said()
                ))
            }
        };
        match one.script_keys() {
            Some(mut keys) => {
                keys.sort();
                if keys != expected {
                    return Err(format!(
                        "{what} ran `{}`, whose KEYS are {keys:?}; they must be every bucket it \
                         reads or writes, {expected:?} (a key passed in ARGV is one a cluster \
                         cannot route, and Redis cannot check)",
                        one.text()
                    ));
                }
            }
            None => {
                return Err(format!(
                    "{what} sent `{}`, where one script (EVALSHA) must decide it",
                    one.text()
                ))
            }
        }
    }
    Ok(())
}

/// Each key a check writes lives on in Redis until its bucket would be
/// full again (in whole milliseconds, rounded up) plus the grace, counted
/// from the write: no shorter, or a bucket would come back full too soon,
/// and no longer. A denial writes nothing, so the time to live runs on.
pub fn expires(v: CostVariant) -> Result<(), String> {
    let mut s = on_server();
    s.grace = Duration::from_secs(2);
    // Buckets that take far longer to fill than the grace, each its own,
    // and times to full that are not whole milliseconds (a time to live
    // rounded down is a bucket forgotten before it is full).
    let limits = [
        Limit::new("user", 3, Duration::from_nanos(20_000_000_300)),
        Limit::new("org", 5, Duration::from_nanos(7_000_450_000)),
        Limit::new("global", 9, Duration::from_nanos(1_500_700_000)),
    ];
    let keys = ["alice", "acme", "all"];
    let l = build(v, &limits, s.clone())?;
    let mut model = Script {
        single: false,
        on_redis: false,
        limits: limits.to_vec(),
        requests: Vec::new(),
    }
    .model();
    let mut admin = RedisServer::shared().admin();
    // Redis's own clock, in ms: a key written between two readings expires
    // its PX after a millisecond between them.
    let clock = |admin: &mut redis::Connection| -> Result<u128, String> {
        let (secs, micros): (u128, u128) = redis::cmd("TIME")
            .query(admin)
            .map_err(|e| format!("TIME: {e}"))?;
        Ok(secs * 1_000 + micros / 1_000)
    };
    // Each key's expiry instant as the contract sets it: a range of
    // Redis's milliseconds, and the PX.
    let mut set: Vec<Option<(u128, u128, u128, u128)>> = vec![None; limits.len()];
    for (cost, ms) in [(1, 0), (2, 2_500), (3, 2_501), (1, 9_000), (2, 9_000)] {
        let now = Timestamp::from_millis(ms);
        let before = clock(&mut admin)?;
        let got = l.check(&keys, cost, now);
        let after = clock(&mut admin)?;
        let want = model.answer(&keys, cost, now.as_nanos(), false);
        if got != want {
            return Err(format!(
                "check({keys:?}, {cost}) at {ms}ms answered {}; the contract: {}",
                answer(&got),
                answer(&want)
            ));
        }
        if want.as_ref().is_ok_and(|d| d.is_allowed()) {
            for (i, limit) in limits.iter().enumerate() {
                let full = u128::from(limit.capacity) * limit.refill_every.as_nanos();
                let to_full = full - model.level(i, keys[i], now.as_nanos());
                let px = to_full.div_ceil(1_000_000) + s.grace.as_millis();
                set[i] = Some((before + px, after + px, px, to_full));
            }
        }
        for (i, k) in keys.iter().enumerate() {
            let key = s.key(i, k);
            let at: i64 = redis::cmd("PEXPIRETIME")
                .arg(&key)
                .query(&mut admin)
                .map_err(|e| format!("PEXPIRETIME: {e}"))?;
            let Some((earliest, latest, px, to_full)) = set[i] else {
                continue;
            };
            if at < 0 || (at as u128) < earliest || at as u128 > latest {
                return Err(format!(
                    "after check({keys:?}, {cost}) at {ms}ms, the key {key:?} {}; its bucket is \
                     full again {} after its last charge, and the grace is {} ms: it must \
                     expire {px} ms after that write (PX in the script, in milliseconds, \
                     rounded up), so at {earliest}..={latest} on Redis's clock{}",
                    match at {
                        -1 => "has no time to live (it would stay for ever)".to_string(),
                        -2 => "is gone (it expired already)".to_string(),
                        t => format!("expires at {t} ms on Redis's clock"),
                    },
                    super::when(to_full),
                    s.grace.as_millis(),
                    if at >= 0 && (at as u128) < earliest {
                        format!(", not {} ms sooner", earliest - at as u128)
                    } else {
                        String::new()
                    }
                ));
            }
        }
    }
    Ok(())
}

/// `RedisLimits::new(limits, …)`'s answer, refused or not: refusals are
/// asked of a Redis that never answers, so that a limiter that connects
/// before it checks its limits answers `SetupError::Redis` instead.
pub fn setup(v: CostVariant, limits: &[Limit], refused: bool) -> Result<(), SetupError> {
    if !refused {
        return (v.redis)(limits, on_server()).map(|_| ());
    }
    let gone = Unreachable::new();
    let mut s = settings(Target::Single(gone.url()));
    s.timeout = Duration::from_millis(200);
    (v.redis)(limits, s).map(|_| ())
}

/// Redis that cannot be reached is an error, never a panic or a hang:
/// `new` on a port that never answers is `SetupError::Redis` (or, for a
/// limiter that connects on first use, its first check is
/// `CostError::Redis`), and a check whose connection was cut is
/// `CostError::Redis`, or the contract's answer if it connected again.
pub fn unreachable(v: CostVariant) -> Result<(), String> {
    let limits = a_few().limits;
    let keys = ["alice", "acme", "all"];
    let gone = Unreachable::new();
    let mut s = settings(Target::Single(gone.url()));
    s.timeout = Duration::from_millis(300);
    match (v.redis)(&limits, s) {
        Err(SetupError::Redis(_)) => {}
        Err(e) => {
            return Err(format!(
                "RedisLimits::new, for a Redis whose port never answers, returned Err({e:?}); \
                 the contract: Err(SetupError::Redis(…))"
            ))
        }
        Ok(l) => match l.check(&keys, 1, Timestamp::ZERO) {
            Err(CostError::Redis(_)) => {}
            other => {
                return Err(format!(
                    "RedisLimits::new, for a Redis whose port never answers, returned Ok, and \
                     its first check answered {}; the contract: Err(SetupError::Redis(…)) from \
                     new, or Err(CostError::Redis(…)) from the check",
                    answer(&other)
                ))
            }
        },
    }
    let proxy = Proxy::start(RedisServer::shared().addr(), 1);
    let l = build(v, &limits, settings(Target::Single(proxy.url(0))))?;
    let mut model = Script {
        single: false,
        on_redis: false,
        limits: limits.clone(),
        requests: Vec::new(),
    }
    .model();
    for cut in [false, true] {
        if cut {
            proxy.close_all();
        }
        let got = l.check(&keys, 1, Timestamp::ZERO);
        let want = model.answer(&keys, 1, 0, false);
        let fine = got == want || (cut && matches!(got, Err(CostError::Redis(_))));
        if !fine {
            return Err(format!(
                "check({keys:?}, 1) at 0ns{} answered {}; the contract: {}{}",
                if cut {
                    ", once Redis had cut its connection,"
                } else {
                    ""
                },
                answer(&got),
                answer(&want),
                if cut {
                    ", or Err(CostError::Redis(…))"
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

/// A Redis key, its value as DUMP gives it, and its time to live in ms.
type Held = (String, Option<Vec<u8>>, i64);

/// A peek writes nothing: on keys never charged it creates none, and on
/// charged keys it changes neither their values nor their time to live.
pub fn peek_writes_nothing(v: CostVariant) -> Result<(), String> {
    let s = on_server();
    let script = a_few();
    let l = build(v, &script.limits, s.clone())?;
    let mut admin = RedisServer::shared().admin();
    let held = |admin: &mut redis::Connection| -> Result<Vec<Held>, String> {
        let mut keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", s.prefix))
            .query(admin)
            .map_err(|e| format!("KEYS: {e}"))?;
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let value: Option<Vec<u8>> = redis::cmd("DUMP")
                    .arg(&k)
                    .query(admin)
                    .map_err(|e| format!("DUMP: {e}"))?;
                let ttl: i64 = redis::cmd("PTTL")
                    .arg(&k)
                    .query(admin)
                    .map_err(|e| format!("PTTL: {e}"))?;
                Ok((k, value, ttl))
            })
            .collect()
    };
    let keys = ["alice", "acme", "all"];
    let peeks = |l: &dyn Limiter, at: &[(u64, u64)]| {
        for &(cost, ms) in at {
            let _ = l.peek(&keys, cost, Timestamp::from_millis(ms));
        }
    };
    peeks(&*l, &[(1, 0), (2, 0), (3, 0)]);
    let made = held(&mut admin)?;
    if !made.is_empty() {
        return Err(format!(
            "peeks on keys never charged wrote {:?}: a peek writes nothing",
            made.iter().map(|k| &k.0).collect::<Vec<_>>()
        ));
    }
    l.check(&keys, 1, Timestamp::ZERO)
        .map_err(|e| format!("check({keys:?}, 1) at 0ns returned Err({e:?})"))?;
    // A time to live no script would set: a peek that sets one shows.
    let far = 1_000_000_000i64;
    for (k, _, _) in held(&mut admin)? {
        let _: i64 = redis::cmd("PEXPIRE")
            .arg(&k)
            .arg(far)
            .query(&mut admin)
            .map_err(|e| format!("PEXPIRE: {e}"))?;
    }
    let before = held(&mut admin)?;
    peeks(&*l, &[(1, 0), (3, 0), (1, 30), (3, 400)]);
    let after = held(&mut admin)?;
    let names = |h: &[Held]| h.iter().map(|k| k.0.clone()).collect::<Vec<_>>();
    if names(&before) != names(&after) {
        return Err(format!(
            "after a check, peeks changed the keys in Redis from {:?} to {:?}: a peek writes \
             nothing",
            names(&before),
            names(&after)
        ));
    }
    for ((k, was, _), (_, is, ttl)) in before.iter().zip(&after) {
        if was != is || *ttl < far - 60_000 {
            return Err(format!(
                "after a check, peeks changed {k:?}: {}its time to live, set to {far} ms by the \
                 checks, to {ttl} ms; a peek writes nothing, not even a new time to live",
                if was != is {
                    "its value (DUMP answers other bytes), and "
                } else {
                    ""
                }
            ));
        }
    }
    Ok(())
}

/// A race of [`Race`] between two app servers, each an instance of the
/// limiter with a connection of its own, whose commands reach Redis in
/// every order (up to 100 orders: a request of one script each has two).
pub fn race(v: CostVariant, race: Race) -> Result<(), String> {
    const MOST_ORDERS: usize = 100;
    let server = RedisServer::shared();
    let proxy = Proxy::start(server.addr(), 2);
    let setup = race.setup();
    let instances = |prefix: &str| -> Result<Vec<Arc<dyn Limiter>>, String> {
        (0..2)
            .map(|i| {
                let mut s = settings(Target::Single(proxy.url(i)));
                s.prefix = prefix.to_string();
                build(v, &setup.limits, s).map(Arc::from)
            })
            .collect()
    };
    // Once, unscheduled, so that every order finds the script loaded.
    for l in instances(&on_server().prefix)? {
        let _ = l.peek(&race.keys(&setup.raced[0]), 1, Timestamp::ZERO);
    }
    proxy.close_all();
    let mut replay: Vec<usize> = Vec::new();
    for _ in 0..MOST_ORDERS {
        let servers = instances(&on_server().prefix)?;
        let before = setup
            .before
            .map(|r| servers[0].check(&race.keys(&r), r.cost, Timestamp::ZERO));
        let mut trace: Vec<(usize, usize)> = Vec::new();
        let mut choose = |ready: &[usize]| {
            if ready.len() == 1 {
                return 0;
            }
            let c = replay
                .get(trace.len())
                .copied()
                .unwrap_or(0)
                .min(ready.len() - 1);
            trace.push((c, ready.len()));
            c
        };
        let clients = setup
            .raced
            .iter()
            .zip(&servers)
            .map(|(r, l)| {
                let (l, keys, r) = (l.clone(), race.keys(r), *r);
                Box::new(move || {
                    if r.peek {
                        l.peek(&keys, r.cost, Timestamp::ZERO)
                    } else {
                        l.check(&keys, r.cost, Timestamp::ZERO)
                    }
                }) as Box<dyn FnOnce() -> Answer + Send>
            })
            .collect();
        let (results, steps) = proxy
            .run(clients, &mut choose, None, time_limit())
            .map_err(|(e, _)| e)?;
        let mut got = Vec::new();
        for (i, r) in results.into_iter().enumerate() {
            got.push(r.map_err(|e| format!("app server {}: {e}", i + 1))?);
        }
        let [a, b]: [Answer; 2] = got.try_into().map_err(|_| "two answers".to_string())?;
        let order: Vec<String> = steps
            .iter()
            .map(|s| format!("  app server {}: {}", s.client + 1, s.command.text()))
            .collect();
        race.judge(&setup, before, [a, b], |r| {
            servers[0].peek(&race.keys(r), r.cost, Timestamp::ZERO)
        })
        .map_err(|e| {
            format!(
                "{e}\n(each request on an app server of its own; their commands reached Redis \
                 in this order:\n{})",
                order.join("\n")
            )
        })?;
        drop(servers);
        proxy.close_all();
        loop {
            match trace.pop() {
                None => return Ok(()),
                Some((c, n)) if c + 1 < n => {
                    replay = trace.iter().map(|(c, _)| *c).collect();
                    replay.push(c + 1);
                    break;
                }
                Some(_) => {}
            }
        }
    }
    // Shown with `--nocapture`: the bound was reached before every order.
    crate::trial::println(format_args!(
        "race {race:?} on Redis: stopped after {MOST_ORDERS} orders of the app servers' commands"
    ));
    Ok(())
}

/// Two limits on the cluster whose keys share a hash tag: the answers are
/// the model's (each request one script, which Redis runs only on keys of
/// one slot).
pub fn one_tag(v: CostVariant) -> Result<(), String> {
    let cluster = RedisCluster::shared();
    let s = settings(Target::Cluster(cluster.urls()));
    let limits = [
        Limit::new("user", 2, Duration::from_millis(100)),
        Limit::new("org", 3, Duration::from_millis(100)),
    ];
    let k = ["{acme}alice", "{acme}"];
    let r = |cost, ms: u64, peek| Req {
        keys: k.iter().map(|k| k.to_string()).collect(),
        cost,
        at: ms * 1_000_000,
        peek,
    };
    let script = Script {
        single: false,
        on_redis: false,
        limits: limits.to_vec(),
        requests: vec![
            r(2, 0, false),
            r(1, 0, true),
            r(1, 0, false),
            r(2, 150, false),
            r(1, 150, false),
        ],
    };
    let l = build(v, &limits, s)?;
    super::verdict::follow(&*l, &script)
        .map(|_| ())
        .map_err(|e| format!("on a Redis Cluster, keys {k:?} (one hash tag): {e}"))
}

/// Keys that cannot share a slot are refused with `CrossSlot`, naming the
/// first key and the first whose slot differs from it, and nothing is
/// written.
pub fn cross_slot(v: CostVariant) -> Result<(), String> {
    let cluster = RedisCluster::shared();
    let s = settings(Target::Cluster(cluster.urls()));
    let limits = [
        Limit::new("user", 2, Duration::from_millis(100)),
        Limit::new("org", 3, Duration::from_millis(100)),
        Limit::new("global", 9, Duration::from_millis(100)),
    ];
    let l = build(v, &limits, s.clone())?;
    // The first two share a tag; the third's key is in another slot.
    let user = "{acme}alice";
    let org = "{acme}";
    let global = ["all", "everyone", "global", "any", "world"]
        .into_iter()
        .find(|g| super::slot(&s.key(2, g)) != super::slot(&s.key(0, user)))
        .expect("one of five keys is in another slot");
    let keys = [user, org, global];
    let want: Answer = Err(CostError::CrossSlot {
        first: s.key(0, user),
        other: s.key(2, global),
    });
    for peek in [true, false] {
        let got = if peek {
            l.peek(&keys, 1, Timestamp::ZERO)
        } else {
            l.check(&keys, 1, Timestamp::ZERO)
        };
        if got != want {
            return Err(format!(
                "on a Redis Cluster, {}({keys:?}, 1) at 0ns answered {}; the Redis keys {:?} \
                 are in slots {:?}, so one script cannot run on them: the contract answers {} \
                 (the first key, and the first whose slot differs from it), before Redis is \
                 asked",
                if peek { "peek" } else { "check" },
                answer(&got),
                redis_keys(&s, &keys),
                redis_keys(&s, &keys)
                    .iter()
                    .map(|k| super::slot(k))
                    .collect::<Vec<_>>(),
                answer(&want)
            ));
        }
    }
    // Keys spelled alike are still each limit's own: their Redis keys,
    // untagged, are in slots of their own.
    let same = ["x", "y", "z", "w", "v"]
        .into_iter()
        .find(|k| {
            let first = super::slot(&s.key(0, k));
            (1..3).any(|i| super::slot(&s.key(i, k)) != first)
        })
        .expect("one of five keys is in two slots");
    let alike = [same, same, same];
    let differs = (1..3)
        .find(|&i| super::slot(&s.key(i, same)) != super::slot(&s.key(0, same)))
        .unwrap_or(1);
    let cases: [(&[&str], u64, Answer); 4] = [
        (
            &alike,
            1,
            Err(CostError::CrossSlot {
                first: s.key(0, same),
                other: s.key(differs, same),
            }),
        ),
        (&keys, 0, Err(CostError::ZeroCost)),
        (
            &keys[..2],
            1,
            Err(CostError::WrongKeys {
                expected: 3,
                got: 2,
            }),
        ),
        (
            &keys,
            3,
            Err(CostError::AboveCapacity {
                limit: 0,
                cost: 3,
                capacity: 2,
            }),
        ),
    ];
    for (keys, cost, want) in cases {
        let got = l.check(keys, cost, Timestamp::ZERO);
        if got != want {
            return Err(format!(
                "on a Redis Cluster, check({keys:?}, {cost}) at 0ns answered {}; the contract \
                 answers {} (the errors of every request first, then the slots of the Redis \
                 keys {:?}, {:?})",
                answer(&got),
                answer(&want),
                redis_keys(&s, keys),
                redis_keys(&s, keys)
                    .iter()
                    .map(|k| super::slot(k))
                    .collect::<Vec<_>>(),
            ));
        }
    }
    let client = redis::cluster::ClusterClient::new(cluster.urls())
        .map_err(|e| format!("the checks' cluster client: {e}"))?;
    let mut con = client
        .get_connection()
        .map_err(|e| format!("the checks' cluster connection: {e}"))?;
    for key in redis_keys(&s, &keys) {
        let n: i64 = redis::cmd("EXISTS")
            .arg(&key)
            .query(&mut con)
            .map_err(|e| format!("EXISTS {key}: {e}"))?;
        if n != 0 {
            return Err(format!(
                "a request refused with CrossSlot wrote {key:?}: a refused request charges \
                 nothing"
            ));
        }
    }
    Ok(())
}
