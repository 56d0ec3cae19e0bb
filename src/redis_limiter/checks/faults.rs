//! The failure policy with the server paused, killed and restarted, or
//! unreachable, and decisions cut off between their commands.

use std::time::{Duration, Instant};

use super::RedisLesson;
use crate::decision::{describe, Decision};
use crate::infra::proxy::Proxy;
use crate::infra::server::RedisServer;
use crate::redis_limiter::drive::{local, policy_answer, settings_on, RuleKind, RULES};
use crate::redis_limiter::OnFailure;
use crate::render::call;
use crate::time::Timestamp;
use crate::watchdog::time_limit;

/// Every key whose name starts with `prefix`.
fn keys_under(server: &RedisServer, prefix: &str) -> Vec<String> {
    redis::cmd("KEYS")
        .arg(format!("{prefix}*"))
        .query(&mut server.admin())
        .expect("KEYS answers")
}

/// Runs an administrator's command on `server`.
pub(crate) fn admin(server: &RedisServer, args: &[&str]) {
    let mut command = redis::cmd(args[0]);
    for a in &args[1..] {
        command.arg(*a);
    }
    let _: () = command
        .query(&mut server.admin())
        .unwrap_or_else(|e| panic!("{args:?} on the test's server: {e}"));
}

/// The timeout the failure checks configure, and the margin a call may
/// take past it.
const FAULT_TIMEOUT: Duration = Duration::from_millis(250);
const FAULT_MARGIN: Duration = Duration::from_millis(200);

impl RedisLesson {
    /// Paused (SIGSTOP), then resumed: the policy's answer within the
    /// timeout, then Redis's answers again from the same instance.
    pub fn follows_its_failure_policy_when_the_server_is_paused(&self) {
        self.fault(
            "the server paused",
            |server, _| server.pause(),
            |server, _| {
                server.resume();
                Ok(())
            },
        );
    }

    /// Killed, then started again empty on the same port (its scripts
    /// gone): the policy's answer within the timeout, then Redis's answers.
    pub fn follows_its_failure_policy_when_the_server_is_killed_and_restarted(&self) {
        self.fault(
            "the server killed",
            |server, _| server.kill(),
            |server, _| server.restart(),
        );
    }

    /// Out of memory (`maxmemory` with `noeviction`): Redis answers every
    /// write with an `OOM` error reply. An error reply is a failure like a
    /// lost connection: the policy's answer, never an admission.
    pub fn follows_its_failure_policy_when_the_server_is_out_of_memory(&self) {
        self.fault(
            "the server out of memory (OOM error replies)",
            |server, _| {
                admin(server, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
                admin(server, &["CONFIG", "SET", "maxmemory", "1"]);
            },
            |server, _| {
                admin(server, &["CONFIG", "SET", "maxmemory", "0"]);
                Ok(())
            },
        );
    }

    /// Made a replica (of a master that cannot be reached): Redis answers
    /// every write with a `READONLY` error reply, as after a failover that
    /// left an app server on the old master.
    pub fn follows_its_failure_policy_when_the_server_is_read_only(&self) {
        self.fault(
            "the server made a read-only replica (READONLY error replies)",
            |server, _| {
                // A master no one listens for: the replica never syncs, so it
                // keeps its data and answers reads, and refuses writes.
                let port = crate::infra::server::free_port().expect("a free port");
                admin(server, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
            },
            |server, _| {
                admin(server, &["REPLICAOF", "NO", "ONE"]);
                Ok(())
            },
        );
    }

    /// Every key of the limiter's prefix overwritten with a value of
    /// another type (as when another program writes there): the script
    /// fails with a `WRONGTYPE` error reply.
    pub fn follows_its_failure_policy_when_the_script_fails(&self) {
        self.fault(
            "the script failing (WRONGTYPE error replies: its keys hold sets)",
            |server, prefix| {
                let mut connection = server.admin();
                for key in keys_under(server, prefix) {
                    let _: () = redis::pipe()
                        .atomic()
                        .del(&key)
                        .sadd(&key, "not the limiter's")
                        .query(&mut connection)
                        .expect("DEL and SADD answer");
                }
            },
            |server, prefix| {
                let mut connection = server.admin();
                for key in keys_under(server, prefix) {
                    let _: () = redis::cmd("DEL")
                        .arg(&key)
                        .query(&mut connection)
                        .expect("DEL answers");
                }
                Ok(())
            },
        );
    }

    /// `stop` makes Redis fail (given the server and the limiter's key
    /// prefix), `start` makes it answer again. Keys `k` and `j` each have
    /// state in Redis before it fails.
    fn fault(
        &self,
        what: &str,
        stop: fn(&RedisServer, &str),
        start: fn(&RedisServer, &str) -> Result<(), String>,
    ) {
        let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
        let policies = [
            OnFailure::Open,
            OnFailure::Closed {
                retry_after: Duration::from_secs(7),
            },
            OnFailure::Local,
        ];
        // Every policy with the fixed window; the closed one with the others.
        let cases = policies
            .iter()
            .map(|p| (RuleKind::FixedWindow, *p))
            .chain([RuleKind::SlidingLog, RuleKind::Gcra].map(|k| (k, policies[1])));
        {
            for (kind, on_failure) in cases {
                let rule = kind.rule(3, Duration::from_secs(3600));
                let mut settings = settings_on(&server);
                let prefix = settings.prefix.clone();
                settings.timeout = FAULT_TIMEOUT;
                settings.on_failure = on_failure;
                let setup = format!(
                    "a {} of 3 per hour, timeout {:?}, on_failure {on_failure:?}",
                    kind.name(),
                    FAULT_TIMEOUT
                );
                let limiter = (self.tested().build)(rule, settings)
                    .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
                let fallback = local(&rule);
                let at = Timestamp::from_secs(10);
                let mut script = Vec::new();
                // Calls made at once, one thread each: each must return
                // within the bound, and together give the answers wanted
                // (in any order).
                let step = |script: &mut Vec<String>,
                            keys: &[&str],
                            want: Vec<Decision>,
                            why: &str| {
                    let started = Instant::now();
                    let (tx, rx) = std::sync::mpsc::channel();
                    for (i, key) in keys.iter().enumerate() {
                        let (l, k, tx) = (limiter.clone(), key.to_string(), tx.clone());
                        crate::trial::spawn(move || {
                            let answer =
                                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                    l.check(&k, at)
                                }));
                            let _ = tx.send((i, answer));
                        });
                    }
                    let calls = keys
                        .iter()
                        .map(|k| call(k, at))
                        .collect::<Vec<_>>()
                        .join(" and, at once, ");
                    // One timeout is what a call waits: connecting to a
                    // stopped server is the kernel's work, at once.
                    let most = FAULT_TIMEOUT + FAULT_MARGIN;
                    let mut got = vec![None; keys.len()];
                    for _ in keys {
                        let left = most.saturating_sub(started.elapsed());
                        match rx.recv_timeout(left) {
                            Ok((i, Ok(d))) => got[i] = Some(d),
                            Ok((_, Err(_))) => self.fail(
                                &format!("the failure policy with {what}"),
                                format!(
                                    "{setup}:\n{}  {calls}: a call panicked{}",
                                    script.join(""),
                                    crate::watchdog::take_panic()
                                        .map(|p| format!(": {p}"))
                                        .unwrap_or_default()
                                ),
                            ),
                            Err(_) => self.fail(
                                &format!("the failure policy with {what}"),
                                format!(
                                    "{setup}:\n{}  {calls}: a call did not return within {:?} (the \
                                     timeout and {:?}). A round trip to Redis must never wait longer than the \
                                     timeout, a call makes one attempt, and concurrent calls do not wait for \
                                     each other: connect with `settings.client.get_connection_with_timeout`, \
                                     set the connection's read and write timeouts, give each concurrent call \
                                     a connection of its own, and do not retry.",
                                    script.join(""),
                                    most,
                                    FAULT_MARGIN
                                ),
                            ),
                        }
                    }
                    let got: Vec<Decision> = got
                        .into_iter()
                        .map(|d| d.expect("every call answered"))
                        .collect();
                    let took = started.elapsed();
                    script.push(format!(
                        "  {} -> {}   ({why}, {} ms)\n",
                        calls,
                        got.iter().map(describe).collect::<Vec<_>>().join(", "),
                        took.as_millis()
                    ));
                    let sorted = |ds: &[Decision]| {
                        let mut v: Vec<String> = ds.iter().map(|d| format!("{d:?}")).collect();
                        v.sort();
                        v
                    };
                    if sorted(&got) != sorted(&want) {
                        self.fail(
                            &format!("the failure policy with {what}"),
                            format!(
                                "{setup}:\n{}the last answers should be {} ({why}).",
                                script.join(""),
                                want.iter().map(describe).collect::<Vec<_>>().join(", ")
                            ),
                        );
                    }
                };
                step(
                    &mut script,
                    &["k", "j"],
                    vec![Decision::Allowed { remaining: 2 }; 2],
                    "Redis's answers: k's and j's first requests",
                );
                stop(&server, &prefix);
                script.push(format!("  -- {what}\n"));
                let want = vec![policy_answer(on_failure, &fallback, "k", at)];
                step(
                    &mut script,
                    &["k"],
                    want,
                    "the policy's answer, Redis stopped",
                );
                // Six at once, two keys: no call waits for another's
                // timeout, and a local fallback keeps its keys apart.
                let keys = ["k", "k", "j", "k", "j", "j"];
                let want = keys
                    .iter()
                    .map(|k| policy_answer(on_failure, &fallback, k, at))
                    .collect();
                step(&mut script, &keys, want, "the policy's answers, at once");
                start(&server, &prefix).unwrap_or_else(|e| panic!("{e}"));
                script.push("  -- the server answers again\n".into());
                // Another app server uses m once; then only Redis's answer
                // for m is +1 (open says +0, closed denies, and the local
                // limiter has never seen m).
                let mut other_settings = settings_on(&server);
                other_settings.prefix = prefix.clone();
                let other = (self.tested().build)(rule, other_settings)
                    .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
                match other.try_check("m", at) {
                    Ok(d) if d == (Decision::Allowed { remaining: 2 }) => script.push(format!(
                        "  another app server: {} -> {}\n",
                        call("m", at),
                        describe(&d)
                    )),
                    got => self.fail(
                        &format!("the failure policy with {what}"),
                        format!(
                            "{setup}:\n{}  a new instance's try_check(\"m\", 10s) gave {got:?}, not Ok(+2), once the server was back",
                            script.join("")
                        ),
                    ),
                }
                // The scripts forgotten, as after any restart: the instance
                // must send its script again on NOSCRIPT.
                let _: () = redis::cmd("SCRIPT")
                    .arg("FLUSH")
                    .query(&mut server.admin())
                    .expect("SCRIPT FLUSH answers");
                script.push("  -- SCRIPT FLUSH: the server has forgotten every script\n".into());
                step(
                    &mut script,
                    &["m"],
                    vec![Decision::Allowed { remaining: 1 }],
                    "Redis's answer: the server is back, and the same instance must use it again",
                );
            }
        }
    }

    /// A server that cannot be reached (connections never complete): the
    /// policy's answer within the timeout, for a limiter that has never
    /// connected.
    pub fn follows_its_failure_policy_when_the_server_is_unreachable(&self) {
        let unreachable = crate::infra::server::Unreachable::new();
        let at = Timestamp::from_secs(10);
        for on_failure in [
            OnFailure::Closed {
                retry_after: Duration::from_secs(7),
            },
            OnFailure::Open,
        ] {
            let rule = RuleKind::FixedWindow.rule(3, Duration::from_secs(3600));
            let mut settings = settings_on(RedisServer::shared());
            settings.client =
                crate::redis_limiter::client(&unreachable.url()).expect("a valid URL");
            settings.timeout = FAULT_TIMEOUT;
            settings.on_failure = on_failure;
            let limiter = (self.tested().build)(rule, settings)
                .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
            // Six calls at once: none may wait for another's connection.
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..6 {
                let (limiter, tx) = (limiter.clone(), tx.clone());
                crate::trial::spawn(move || {
                    let _ = tx.send(limiter.check("k", at));
                });
            }
            let started = Instant::now();
            let most = FAULT_TIMEOUT + FAULT_MARGIN;
            let want = policy_answer(on_failure, &local(&rule), "k", at);
            for _ in 0..6 {
                match rx.recv_timeout(most.saturating_sub(started.elapsed())) {
                Ok(got) if got == want => {}
                Ok(got) => self.fail(
                    "the failure policy with the server unreachable",
                    format!(
                        "a fixed window, timeout {FAULT_TIMEOUT:?}, on_failure {on_failure:?}, and a server whose \
                         connections never complete: {} -> {}, where the policy says {}.",
                        call("k", at),
                        describe(&got),
                        describe(&want)
                    ),
                ),
                Err(_) => self.fail(
                    "the failure policy with the server unreachable",
                    format!(
                        "a fixed window, timeout {FAULT_TIMEOUT:?}, on_failure {on_failure:?}, and a server whose \
                         connections never complete (a host gone, a firewall that drops): six calls \
                         {} at once, and one did not return within {most:?}. Connecting waits too: \
                         connect with `settings.client.get_connection_with_timeout(settings.timeout)`, \
                         and never while holding a lock another call needs.",
                        call("k", at)
                    ),
                ),
            }
            }
        }
    }

    /// A decision cut off between its commands (the app server's connection
    /// dropped after its first, second, … command) leaves no key without a
    /// time to live: such a key would deny its client forever.
    pub fn leaves_no_key_without_a_ttl_when_cut_off(&self) {
        let server = RedisServer::shared();
        let proxy = Proxy::start(server.addr(), 1);
        let mut admin = server.admin();
        // The request that is cut: a key's first, one in the same window,
        // and one two hours on (a new window; the bucket full again).
        let situations: [(&str, Option<Timestamp>, Timestamp); 3] = [
            ("the key's first request", None, Timestamp::from_secs(10)),
            (
                "a second request in the same window",
                Some(Timestamp::from_secs(10)),
                Timestamp::from_secs(11),
            ),
            (
                "a request two hours after the first",
                Some(Timestamp::from_secs(10)),
                Timestamp::from_secs(7_210),
            ),
        ];
        for kind in RULES {
            let rule = kind.rule(3, Duration::from_secs(3600));
            for (what, first, at) in situations {
                for cut in 1..=8 {
                    let mut settings = settings_on(server);
                    settings.client =
                        crate::redis_limiter::client(&proxy.url(0)).expect("a valid URL");
                    let prefix = settings.prefix.clone();
                    let limiter = (self.tested().build)(rule, settings)
                        .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
                    let mut story = String::new();
                    if let Some(first) = first {
                        match limiter.try_check("k", first) {
                            Ok(d) => story.push_str(&format!(
                                "{} -> {}, then ",
                                call("k", first),
                                describe(&d)
                            )),
                            Err(e) => self.fail(
                                "the cut-off check",
                                format!("{} returned Err from try_check: {e}", call("k", first)),
                            ),
                        }
                    }
                    let l = limiter.clone();
                    let clients: Vec<Box<dyn FnOnce() -> Decision + Send>> =
                        vec![Box::new(move || l.check("k", at))];
                    let steps = match proxy.run(clients, &mut |_| 0, Some(cut), time_limit()) {
                        Ok((_, steps)) => steps,
                        Err((e, steps)) => self.fail(
                            "the cut-off check",
                            format!("{e}\n{}", self.schedule(&steps)),
                        ),
                    };
                    proxy.close_all();
                    let keys: Vec<String> = redis::cmd("KEYS")
                        .arg(format!("{prefix}*"))
                        .query(&mut admin)
                        .expect("KEYS answers");
                    for key in keys {
                        let ttl: i64 = redis::cmd("PTTL")
                            .arg(&key)
                            .query(&mut admin)
                            .expect("PTTL answers");
                        if ttl == -1 {
                            self.fail(
                                "the cut-off check",
                                format!(
                                    "a {} (3 per hour), {what}: {story}{} whose connection was cut after \
                                     its command {cut}, as when an app server dies mid-decision. Key {key} \
                                     is left without a time to live: nothing will ever delete it, and if it \
                                     holds a count, that client may be denied forever.\n{}\nSet the value \
                                     and its expiry in one command (one Lua script), never as two.",
                                    kind.name(),
                                    call("k", at),
                                    self.schedule(&steps)
                                ),
                            );
                        }
                    }
                    if steps.len() < cut {
                        break;
                    }
                }
            }
        }
    }
}
