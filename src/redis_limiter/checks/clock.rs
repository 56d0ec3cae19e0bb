//! The server's clock: one clock for every app server, read in
//! microseconds.

use std::time::Duration;

use super::RedisLesson;
use crate::decision::{describe, Decision};
use crate::infra::server::RedisServer;
use crate::redis_limiter::drive::{settings_on, GRACE, SERVERS};
use crate::redis_limiter::{Clock, Rule};
use crate::render::call;
use crate::text::count;
use crate::time::Timestamp;

impl RedisLesson {
    /// With the server's clock, app servers whose own clocks are hours
    /// apart still share one limit: what each passes in is not used.
    pub fn server_clock_is_one_clock_for_every_app_server(&self) {
        let server = RedisServer::shared();
        let settings = settings_on(server);
        let capacity = 4;
        let refill = Duration::from_secs(3600);
        let rule = Rule::Gcra {
            capacity,
            refill_every: refill,
            clock: Clock::Server,
        };
        let instances: Vec<_> = (0..SERVERS)
            .map(|_| {
                (self.tested().build)(rule, settings.clone())
                    .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"))
            })
            .collect();
        // Each app server's own clock: hours apart, one far behind.
        let clocks = [
            Timestamp::from_secs(1_000_000),
            Timestamp::from_secs(1_000_000 + 5 * 3600),
            Timestamp::from_secs(7),
        ];
        let mut script = String::new();
        let mut admin = server.admin();
        let now_ms =
            |admin: &mut redis::Connection| server_ms(admin).unwrap_or_else(|e| panic!("{e}"));
        let first_ms = now_ms(&mut admin);
        for i in 0..3 * capacity as usize {
            let s = i % SERVERS;
            let d = instances[s].try_check("k", clocks[s]).unwrap_or_else(|e| {
                self.fail(
                    "the server's clock",
                    format!("{} returned Err: {e}", call("k", clocks[s])),
                )
            });
            script.push_str(&format!(
                "  app server {}: {} -> {}\n",
                s + 1,
                call("k", clocks[s]),
                describe(&d)
            ));
            let ok = if (i as u64) < capacity {
                d == Decision::Allowed {
                    remaining: capacity - 1 - i as u64,
                }
            } else {
                matches!(d, Decision::Denied { retry_after } if retry_after <= refill * (i as u32 / capacity as u32 + 1) && retry_after > refill - Duration::from_secs(60))
            };
            if !ok {
                self.fail(
                    "the server's clock",
                    format!(
                        "A GCRA of capacity {capacity}, one token an hour, with Clock::Server, on three app \
                         servers whose clocks are hours apart, all within a few milliseconds of real time:\n\
                         {script}The first {} allowed with {} left, every later one is \
                         denied until about an hour from now: the script must read the time with \
                         redis.call('TIME') and ignore the `now` passed in.",
                        if capacity == 1 { "request is".to_string() } else { format!("{capacity} requests are") },
                        (0..capacity).rev().map(|r| r.to_string()).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
            // The key lives until the TAT on the server's clock: the first
            // request's instant and one hour per token taken, and the grace.
            let taken = (i as u64 + 1).min(capacity) as i64;
            let want = taken * refill.as_millis() as i64 + GRACE.as_millis() as i64;
            let (lo, hi) = (first_ms + want - 1, now_ms(&mut admin) + want + 1);
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{}*", settings.prefix))
                .query(&mut admin)
                .expect("KEYS answers");
            for key in keys {
                let expiry: i64 = redis::cmd("PEXPIRETIME")
                    .arg(&key)
                    .query(&mut admin)
                    .expect("PEXPIRETIME answers");
                if ttl_is_none(expiry) {
                    self.fail(
                        "the server's clock",
                        format!("{script}After these, key {key:?} has no time to live: nothing will ever delete it."),
                    );
                }
                if expiry < lo || expiry > hi {
                    self.fail(
                        "the server's clock",
                        format!(
                            "{script}After these, key {key:?} expires {} ms {} than it should: with \
                             Clock::Server its state matters until the theoretical arrival time on the \
                             server's clock ({} of an hour taken since the first request), plus \
                             the grace.",
                            if expiry < lo { lo - expiry } else { expiry - hi },
                            if expiry < lo { "sooner" } else { "later" },
                            count(taken, "token")
                        ),
                    );
                }
            }
        }
        self.server_clock_counts_microseconds();
    }

    /// The server's clock to the microsecond: between two requests the
    /// server's `TIME` moved on by at least the round trips the harness made
    /// in between, and the second request's wait is shorter by exactly what
    /// the script read. A script that drops the microseconds, or reads them as
    /// nanoseconds, waits too long.
    fn server_clock_counts_microseconds(&self) {
        let server = RedisServer::shared();
        let refill = Duration::from_secs(10);
        let rule = Rule::Gcra {
            capacity: 1,
            refill_every: refill,
            clock: Clock::Server,
        };
        let limiter = (self.tested().build)(rule, settings_on(server))
            .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
        let mut admin = server.admin();
        let micros = |admin: &mut redis::Connection| -> u128 {
            let (s, us): (u128, u128) = redis::cmd("TIME").query(admin).expect("TIME answers");
            s * 1_000_000 + us
        };
        let at = Timestamp::from_secs(5);
        let t0 = micros(&mut admin);
        let first = limiter.try_check("k", at);
        let t1 = micros(&mut admin);
        let _: String = redis::cmd("PING").query(&mut admin).expect("PING answers");
        let t2 = micros(&mut admin);
        let second = limiter.try_check("k", at);
        let t3 = micros(&mut admin);
        let story = format!(
            "A GCRA of capacity 1, a token every 10 s, with Clock::Server: {} -> {first:?}, then, {} µs \
             later at least (the server's TIME read between the two) and {} µs at most, {} -> {second:?}.",
            call("k", at),
            t2 - t1,
            t3 - t0,
            call("k", at)
        );
        let Ok(Decision::Denied { retry_after }) = second else {
            self.fail("the server's clock", story)
        };
        let waited = refill.as_nanos().saturating_sub(retry_after.as_nanos());
        if !(first.is_ok() && waited >= (t2 - t1) * 1_000 && waited <= (t3 - t0) * 1_000) {
            self.fail(
                "the server's clock",
                format!(
                    "{story}\nThe second wait should be 10 s less the time between the two scripts on the \
                     server's clock, between {} and {} ns less; it is {waited} ns less. TIME answers seconds \
                     and microseconds: now is seconds × 10^9 + microseconds × 1000.",
                    (t2 - t1) * 1_000,
                    (t3 - t0) * 1_000
                ),
            );
        }
    }
}

/// PEXPIRETIME's answer for a key that never expires.
pub(super) fn ttl_is_none(expiry: i64) -> bool {
    expiry == -1
}

/// The server's clock in whole milliseconds since 1970 (`TIME`).
pub(super) fn server_ms(admin: &mut redis::Connection) -> Result<i64, String> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(admin).map_err(|e| e.to_string())?;
    Ok(s * 1000 + us / 1000)
}
