//! Keys and their times to live: each under its client's hash tag, each
//! passed in `KEYS[]`, each expiring when its state no longer matters.

use std::sync::Arc;

use super::clock::{server_ms, ttl_is_none};
use super::RedisLesson;
use crate::decision::{describe, Decision};
use crate::infra::proxy::Proxy;
use crate::infra::server::RedisServer;
use crate::redis_limiter::drive::{settings_on, BuildRedis, RuleKind, GRACE};
use crate::render::call;
use crate::run::run_cases;
use crate::time::Timestamp;
use crate::timeline::{Config, Timeline};

impl RedisLesson {
    /// On generated timelines, after every request: every key is the
    /// prefix and a client key as the hash tag, every key the scripts wrote
    /// was passed in `KEYS[]`, a script's keys share one hash tag, and every
    /// key has a time to live: that of its state (the end of the window, the
    /// newest entry leaving the log, the bucket full again) in whole
    /// milliseconds rounded up, plus the grace.
    pub fn keys_live_under_their_hash_tag_and_expire(&self, kind: RuleKind) {
        let server = Arc::new(RedisServer::start().unwrap_or_else(|e| panic!("{e}")));
        let proxy = Arc::new(Proxy::start(server.addr(), 1));
        let shapes = [crate::gen::Shape::InOrder, crate::gen::Shape::OutOfOrder];
        for shape in shapes {
            let algorithm = kind.algorithm();
            let strategy = crate::gen::timelines(algorithm, shape);
            let build = self.tested().build;
            let (server, proxy) = (server.clone(), proxy.clone());
            let result = run_cases(
                self.subjects.subject,
                24,
                1024,
                &strategy,
                crate::run::nth_request,
                move |t: &Timeline| keys_and_ttls(build, kind, &server, &proxy, t),
            );
            if let Err(failed) = result {
                self.fail(
                    &format!(
                        "the check of keys and times to live ({}, {shape:?} timelines)",
                        kind.name()
                    ),
                    format!("timeline: {:?}\n\n{}", failed.value, failed.reason),
                );
            }
        }
    }
}

/// The grace this check gives: a minute and 0.4 ms, counted as 60_001 ms.
const FRACTIONAL_GRACE: std::time::Duration =
    GRACE.saturating_add(std::time::Duration::from_micros(400));

/// What a rule's state of one key is, for the time to live it may have.
#[derive(Default)]
struct Lives(std::collections::HashMap<String, u128>);

impl Lives {
    /// After an allowed request of `key` at `now`: until when, in ns, the
    /// key's state matters.
    fn allowed(&mut self, kind: RuleKind, config: &Config, key: &str, now: u64) -> u128 {
        let (now, p) = (u128::from(now), config.period.as_nanos());
        let before = self.0.get(key).copied().unwrap_or(0);
        // A late request counts where the key already is: its state never
        // ends earlier for it.
        let until = match kind {
            RuleKind::FixedWindow => ((now / p + 1) * p).max(before),
            RuleKind::SlidingLog => (now + p).max(before),
            RuleKind::Gcra | RuleKind::TokenBucket => before.max(now) + p,
        };
        self.0.insert(key.to_string(), until);
        until
    }
}

/// The client key a Redis key of `prefix` belongs to (`{prefix}{k:<client>}:…`),
/// among `clients`: the longest that fits, since a client key may itself
/// hold `}:`.
fn tag_of<'a>(prefix: &str, key: &'a str, clients: &[&str]) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix)?.strip_prefix("{k:")?;
    clients
        .iter()
        .filter(|c| rest.starts_with(**c) && rest[c.len()..].starts_with("}:"))
        .max_by_key(|c| c.len())
        .map(|c| &rest[..c.len()])
}

/// What a failure after the `i`th request (0-based) of a timeline leads
/// with: `after request #1, …` for the first, as every message counts.
fn after_request(i: usize, key: &str, now: Timestamp, d: &Decision) -> String {
    format!(
        "after request #{}, {} -> {}",
        i + 1,
        call(key, now),
        describe(d)
    )
}

/// A key's hash tag by Redis's own rule: what stands between the first `{`
/// and the first `}` after it, if that is not empty (else the whole name
/// is hashed).
fn redis_tag(key: &str) -> &str {
    key.find('{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.find('}').map(|close| &rest[..close])
        })
        .filter(|tag| !tag.is_empty())
        .unwrap_or(key)
}

fn keys_and_ttls(
    build: BuildRedis,
    kind: RuleKind,
    server: &RedisServer,
    proxy: &Proxy,
    t: &Timeline,
) -> Result<(), String> {
    let mut admin = server.admin();
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut admin)
        .map_err(|e| e.to_string())?;
    proxy.close_all();
    proxy.clear_log();
    let mut settings = settings_on(server);
    settings.client = crate::redis_limiter::client(&proxy.url(0)).expect("a valid URL");
    // A grace with a fraction of a millisecond: it is rounded up on its own
    // (⌈life⌉ + ⌈grace⌉ ms), so that no key lives less than its grace.
    settings.ttl_grace = FRACTIONAL_GRACE;
    let prefix = settings.prefix.clone();
    let rule = kind.rule(t.config.limit, t.config.period);
    let limiter =
        build(rule, settings).map_err(|e| format!("new({rule:?}) returned Err({e:?})"))?;
    let mut lives = Lives::default();
    let mut seen: Vec<&str> = Vec::new();
    // The latest instant each client key was called at, and the expiry
    // (ms since 1970, on the server's clock) each Redis key had.
    let mut latest: std::collections::HashMap<&str, u64> = Default::default();
    // The earliest a client key's state may expire (ms since 1970), as its
    // latest request that moved the state's end set it.
    let mut floors: std::collections::HashMap<&str, i64> = Default::default();
    let grace = FRACTIONAL_GRACE.as_nanos().div_ceil(1_000_000);
    for (i, r) in t.requests.iter().enumerate() {
        crate::watchdog::progress(i);
        let now = r.now.as_nanos();
        if !seen.contains(&r.key.as_str()) {
            seen.push(&r.key);
        }
        let late = latest.get(r.key.as_str()).is_some_and(|l| *l > now);
        let latest_now = latest.entry(&r.key).or_insert(now);
        *latest_now = (*latest_now).max(now);
        // The expiry of each key of this client before the call.
        let mut expiry_before = Vec::new();
        for key in redis::cmd("KEYS")
            .arg(format!("{prefix}{{k:*"))
            .query::<Vec<String>>(&mut admin)
            .map_err(|e| e.to_string())?
        {
            if tag_of(&prefix, &key, &seen) == Some(r.key.as_str()) {
                let e: i64 = redis::cmd("PEXPIRETIME")
                    .arg(&key)
                    .query(&mut admin)
                    .map_err(|e| e.to_string())?;
                expiry_before.push((key, e));
            }
        }
        let before_ms = server_ms(&mut admin)?;
        let logged = proxy.log().len();
        let d = limiter
            .try_check(&r.key, r.now)
            .map_err(|e| format!("{} returned Err from try_check: {e}", call(&r.key, r.now)))?;
        let after_ms = server_ms(&mut admin)?;
        let until_before = lives.0.get(&r.key).copied();
        let until = d
            .is_allowed()
            .then(|| lives.allowed(kind, &t.config, &r.key, now));
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("*")
            .query(&mut admin)
            .map_err(|e| e.to_string())?;
        let at = after_request(i, &r.key, r.now, &d);
        let log = proxy.log();
        // The keys this call's commands named: those it may have written.
        let this_call = &log[logged.min(log.len())..];
        let named = |key: &str| {
            this_call.iter().any(|(_, c)| match c.script_keys() {
                Some(ks) => ks.iter().any(|k| k == key),
                None => c.args.iter().skip(1).any(|a| a == key.as_bytes()),
            })
        };
        if let Some((_, c)) = this_call.iter().find(|(_, c)| c.name() == "EVAL") {
            return Err(format!(
                "{at}: the call sent its script's text with EVAL ({}). Send EVALSHA, the script's \
                 SHA-1: redis::Script does, and sends the text once (SCRIPT LOAD) only when the server \
                 answers NOSCRIPT.",
                c.text()
            ));
        }
        if !d.is_allowed() {
            // A denied request writes nothing that lives longer.
            for (key, before) in &expiry_before {
                let after: i64 = redis::cmd("PEXPIRETIME")
                    .arg(key)
                    .query(&mut admin)
                    .map_err(|e| e.to_string())?;
                if after != *before && after != -2 {
                    return Err(format!(
                        "{at}: the request was denied, yet key {key:?} now expires {} ms {} than before \
                         it. A denied request changes nothing: it must not set a key's expiry either (the \
                         state's end has not moved).",
                        (after - before).abs(),
                        if after > *before { "later" } else { "sooner" }
                    ));
                }
            }
        }
        for key in &keys {
            let Some(tag) = tag_of(&prefix, key, &seen) else {
                return Err(format!(
                    "{at}: Redis holds key {key:?}, which is not the prefix {prefix:?} followed by a client \
                     key as `{{k:client key}}:`. Name every key `prefix{{k:client key}}:part` (Settings::key \
                     does), so that a client's keys share one hash tag and one cluster slot."
                ));
            };
            let declared = log.iter().any(|(_, c)| match c.script_keys() {
                Some(ks) => ks.iter().any(|k| k == key),
                None => c.args.iter().skip(1).any(|a| a == key.as_bytes()),
            });
            if !declared {
                return Err(format!(
                    "{at}: Redis holds key {key:?}, which no script was given in KEYS[] and no command \
                     named: a script built its name. On a Redis Cluster such a script fails (or writes to \
                     another node's slot); pass every key the script touches in KEYS[]."
                ));
            }
            let expiry: i64 = redis::cmd("PEXPIRETIME")
                .arg(key)
                .query(&mut admin)
                .map_err(|e| e.to_string())?;
            if ttl_is_none(expiry) {
                return Err(format!(
                    "{at}: key {key:?} has no time to live: nothing will ever delete it. Every key a script \
                     writes gets PEXPIRE (or SET … PX) in the same script."
                ));
            }
            let Some(until) = until.filter(|_| tag == r.key && named(key)) else {
                continue;
            };
            let ms_up = |nanos: u128| (nanos.div_ceil(1_000_000) + grace) as i64;
            if late {
                // A late request leaves its key's end where it was, or, if
                // it moved the end (a GCRA), sets it from the key's latest
                // instant; setting it from its own earlier instant is allowed.
                let latest_now = u128::from(latest[r.key.as_str()]);
                let lo = if until_before.is_some_and(|b| until > b) {
                    before_ms + ms_up(until - latest_now)
                } else {
                    floors.get(r.key.as_str()).copied().unwrap_or(i64::MIN)
                };
                let hi = after_ms + ms_up(until - u128::from(now));
                if expiry < lo || expiry > hi {
                    return Err(format!(
                        "{at}: this request is late (its key was already called at {latest_now}ns), and \
                         after it key {key:?} expires {} ms {} than it may. A late request counts in the \
                         state as it is: the state still ends at {until}ns, and its time to live was set by \
                         the latest request from that request's instant.",
                        if expiry < lo { lo - expiry } else { expiry - hi },
                        if expiry < lo { "sooner" } else { "later" }
                    ));
                }
                floors.insert(
                    &r.key,
                    lo.max(floors.get(r.key.as_str()).copied().unwrap_or(i64::MIN)),
                );
            } else {
                // Set during the call: between the server's clock before it
                // and after it, plus the time to live.
                let life = until - u128::from(now);
                let want = (life.div_ceil(1_000_000) + grace) as i64;
                let (lo, hi) = (before_ms + want, after_ms + want);
                if expiry < lo || expiry > hi {
                    let off = if expiry < lo {
                        expiry - lo
                    } else {
                        expiry - hi
                    };
                    return Err(format!(
                        "{at}: key {key:?} expires {} ms {} than it should: its state matters for {life} ns \
                         more (until {until}), which is {} ms rounded up, plus the grace of {grace} ms, \
                         counted from the instant Redis ran the call. (Too long keeps dead state; too short \
                         forgets a live one. PEXPIRE takes milliseconds, EXPIRE seconds; round up.)",
                        off.abs(),
                        if off < 0 { "sooner" } else { "later" },
                        life.div_ceil(1_000_000)
                    ));
                }
                floors.insert(&r.key, lo);
            }
        }
        for (_, c) in &log {
            if let Some(ks) = c.script_keys() {
                let tags: Vec<&str> = ks.iter().map(|k| redis_tag(k)).collect();
                if tags.windows(2).any(|w| w[0] != w[1]) {
                    return Err(format!(
                        "{at}: one script was given keys of different hash tags ({ks:?}): on a Redis \
                         Cluster they may live on different nodes, and the script fails with CROSSSLOT."
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests are counted from 1, as every other message of the kata
    /// counts them: the first is request #1.
    #[test]
    fn requests_are_counted_from_one() {
        let d = Decision::Allowed { remaining: 2 };
        let first = after_request(0, "a", Timestamp::from_nanos(5), &d);
        assert_eq!(
            first,
            "after request #1, check(\"a\", 5ns) -> allowed, 2 remaining"
        );
    }

    #[test]
    fn a_hash_tag_is_the_longest_client_key_that_closes() {
        assert_eq!(tag_of("p:", "p:{k:a}:fw", &["a"]), Some("a"));
        assert_eq!(tag_of("p:", "p:{k:a}:b}:fw", &["a", "a}:b"]), Some("a}:b"));
        assert_eq!(tag_of("p:", "p:{k:}:fw", &[""]), Some(""));
        assert_eq!(tag_of("p:", "p:a:fw", &["a"]), None);
        assert_eq!(tag_of("p:", "q:{k:a}:fw", &["a"]), None);
        // Redis's rule: the first braces, unless empty.
        assert_eq!(redis_tag("p:{k:a}b}:fw"), "k:a");
        assert_eq!(redis_tag("p:{}:log"), "p:{}:log");
        assert_eq!(redis_tag("p:{k:}:log"), "k:");
    }
}
