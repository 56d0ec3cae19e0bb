//! The checks of the `redis-limiter` kind (lesson 08).
//!
//! What a `Decision` can say is checked by the checks every lesson shares,
//! once per rule ([`RedisLesson::rule`]) and once more with three app
//! servers taking turns over one Redis ([`RedisLesson::servers`]). What it
//! cannot say is checked here: races between app servers (the loom
//! scenarios, explored over the order of Redis commands by the
//! [`proxy`](super::proxy)), the failure policy with the server paused,
//! killed and restarted, keys and their times to live, the server's clock,
//! and the "N app servers" drawings.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::drive::{
    local, policy_answer, settings_on, BuildRedis, Limiter, RedisVariant, RuleKind, GRACE, SERVERS,
};
use super::proxy::{Proxy, Step};
use super::server::RedisServer;
use super::{Clock, OnFailure, Rule};
use crate::checks::Lesson;
use crate::decision::{describe, Decision};
use crate::drive::{Implementations, Variant};
use crate::models::Algorithm;
use crate::render::call;
use crate::run::run_cases;
use crate::scenarios::{compact, linearizable, linearizations, show_answers, Answers, Scenario};
use crate::snapshot::assert_snapshot;
use crate::subject::Subject;
use crate::time::Timestamp;
use crate::timeline::{Config, Request, Timeline};
use crate::watchdog::time_limit;

/// One implementation of lesson 08: the limiter itself, and the standard
/// variants the shared checks drive (one per [`RuleKind`], as one app
/// server and as three).
#[derive(Clone, Copy)]
pub struct RedisImpl {
    pub redis: RedisVariant,
    pub single: [Variant; 3],
    pub servers: [Variant; 3],
}

/// Lesson 08 with the subject `KATA_SUBJECT` selects.
pub struct RedisLesson {
    pub root: &'static str,
    pub number: u32,
    pub title: &'static str,
    pub limiter: &'static str,
    subject: Subject,
    implementations: Implementations<RedisImpl>,
    single: Vec<Lesson>,
    servers: Vec<Lesson>,
}

/// Every call crosses a socket to a real server: the shared properties run
/// a quarter of their cases.
const CASE_DIVISOR: u32 = 4;

/// How many orders of commands a race scenario explores at most.
const MOST_SCHEDULES: usize = 400;

/// How many times an order may pass over a server that has a command
/// waiting (loom's default bound, for the same reason: races between a few
/// commands need few switches).
const PREEMPTIONS: usize = 2;

/// The timeout the failure checks configure, and the margin a call may
/// take past it.
const FAULT_TIMEOUT: Duration = Duration::from_millis(250);
const FAULT_MARGIN: Duration = Duration::from_millis(200);

impl RedisLesson {
    pub fn new(
        root: &'static str,
        number: u32,
        title: &'static str,
        limiter: &'static str,
        _algorithm: Algorithm,
        implementations: Implementations<RedisImpl>,
    ) -> RedisLesson {
        let subject = implementations.subject_from_env(root);
        let lessons = |pick: fn(&RedisImpl) -> [Variant; 3], how: &str| {
            RuleKind::ALL
                .iter()
                .enumerate()
                .map(|(i, kind)| {
                    Lesson::new(
                        root,
                        number,
                        title,
                        limiter,
                        kind.rule(1, Duration::from_nanos(1)).algorithm(),
                        implementations.map(|v| pick(v)[i]),
                    )
                    .with_fewer_cases(CASE_DIVISOR)
                    .titled(crate::checks::leak(format!(
                        "{title}: {}{how}",
                        kind.name()
                    )))
                })
                .collect()
        };
        RedisLesson {
            root,
            number,
            title,
            limiter,
            subject,
            single: lessons(|v| v.single, ", one app server"),
            servers: lessons(
                |v| v.servers,
                ", three app servers taking requests in turn over one Redis",
            ),
            implementations,
        }
    }

    /// The checks every lesson shares, for one rule and one app server.
    pub fn rule(&self, kind: RuleKind) -> &Lesson {
        &self.single[kind as usize]
    }

    /// The same, with three app servers taking requests in turn.
    pub fn servers(&self, kind: RuleKind) -> &Lesson {
        &self.servers[kind as usize]
    }

    fn tested(&self) -> RedisVariant {
        self.implementations.pick(self.subject).redis
    }

    fn whose(&self) -> String {
        format!("{} ({})", self.subject, self.tested().file)
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!(
            "lesson {:02} ({}): {what} fails for {}.\n{message}",
            self.number,
            self.title,
            self.whose()
        )
    }

    // ------------------------------------------------------------------ source

    /// The limiter reads no clock and starts no thread: time comes from the
    /// call or from Redis's `TIME`, timeouts from the socket.
    pub fn uses_only_its_inputs(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_its_inputs();
    }

    pub fn uses_only_the_sync_facade(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_the_sync_facade();
    }

    // ------------------------------------------------------------------- races

    /// Explores a loom scenario between app servers: each of the scenario's
    /// threads is an instance of its own with a connection of its own, and
    /// the proxy releases their commands in every order (up to
    /// [`MOST_SCHEDULES`]), for each rule. The answers must be those of some
    /// one-at-a-time order of the same calls.
    pub fn race(&self, scenario: Scenario) {
        for kind in RuleKind::ALL {
            if let Err(e) = self.explore(kind, &scenario) {
                self.fail(
                    &format!("the race scenario \"{}\" ({})", scenario.name, kind.name()),
                    e,
                );
            }
        }
    }

    fn explore(&self, kind: RuleKind, s: &Scenario) -> Result<(), String> {
        let server = RedisServer::shared();
        let proxy = Proxy::start(server.addr(), s.threads.len());
        let algorithm = kind.rule(1, Duration::from_nanos(1)).algorithm();
        let allowed = linearizations(algorithm, s);
        let build = self.tested().build;
        let rule = kind.rule(s.config.limit, s.config.period);
        let instances = |prefix: &str| -> Result<Vec<Arc<dyn Limiter>>, String> {
            (0..s.threads.len())
                .map(|i| {
                    let mut settings = settings_on(server);
                    settings.prefix = prefix.to_string();
                    settings.client = super::client(&proxy.url(i)).expect("a valid URL");
                    build(rule, settings).map_err(|e| format!("new({rule:?}) returned Err({e:?})"))
                })
                .collect()
        };
        let calls = |l: &dyn Limiter, reqs: &[Request]| -> Result<Vec<Decision>, String> {
            reqs.iter()
                .map(|r| {
                    l.try_check(&r.key, r.now).map_err(|e| {
                        format!("{} returned Err from try_check: {e}", call(&r.key, r.now))
                    })
                })
                .collect()
        };
        // One run first, unscheduled, so that every run after it finds the
        // scripts loaded and sends the same commands.
        {
            let warm = instances(&settings_on(server).prefix)?;
            for (i, reqs) in s.threads.iter().enumerate() {
                calls(&*warm[i], &s.before)?;
                calls(&*warm[i], reqs)?;
            }
            proxy.close_all();
        }
        let mut replay: Vec<usize> = Vec::new();
        for _ in 0..MOST_SCHEDULES {
            let prefix = settings_on(server).prefix;
            let servers = instances(&prefix)?;
            let before = calls(&*servers[0], &s.before)?;
            let mut trace: Vec<(usize, usize)> = Vec::new();
            // Who went last, and how often a server with a command waiting
            // was passed over: orders with more than PREEMPTIONS such
            // switches are not tried (as loom bounds its own).
            let (mut last, mut preempted) = (None::<usize>, 0);
            let mut choose = |ready: &[usize]| {
                // The options: the server that went last first (no switch),
                // then the others in order.
                let mut options: Vec<usize> = (0..ready.len()).collect();
                if let Some(p) = last.and_then(|l| ready.iter().position(|&r| r == l)) {
                    options.retain(|&o| o != p);
                    options.insert(0, p);
                    if preempted >= PREEMPTIONS {
                        options.truncate(1);
                    }
                }
                let c = if options.len() == 1 {
                    0
                } else {
                    let c = replay
                        .get(trace.len())
                        .copied()
                        .unwrap_or(0)
                        .min(options.len() - 1);
                    trace.push((c, options.len()));
                    c
                };
                let pick = options[c];
                if last.is_some_and(|l| ready.contains(&l) && ready[pick] != l) {
                    preempted += 1;
                }
                last = Some(ready[pick]);
                pick
            };
            let clients = s
                .threads
                .iter()
                .enumerate()
                .map(|(i, reqs)| {
                    let (l, reqs) = (servers[i].clone(), reqs.clone());
                    Box::new(move || calls(&*l, &reqs)) as Box<dyn FnOnce() -> _ + Send>
                })
                .collect();
            let (results, steps) = proxy
                .run(clients, &mut choose, None, time_limit())
                .map_err(|(e, steps)| format!("{e}\n{}", self.schedule(&steps)))?;
            let mut threads = Vec::new();
            for (i, r) in results.into_iter().enumerate() {
                match r {
                    Ok(Ok(ds)) => threads.push(ds),
                    Ok(Err(e)) | Err(e) => {
                        return Err(format!("app server {i}: {e}\n{}", self.schedule(&steps)))
                    }
                }
            }
            let after = calls(&*servers[0], &s.after)?;
            let got = Answers {
                before,
                threads,
                after,
            };
            if !linearizable(algorithm, s, &got) {
                let mut text = format!(
                    "In this order of Redis commands the answers match no one-at-a-time order of the same calls (a {} of limit {} and period {:?}; each app server is an instance of your limiter with a connection of its own):\n{}One-at-a-time orders give one of these (a call that comes late for its key in that order may also be denied):\n",
                    kind.name(),
                    s.config.limit,
                    s.config.period,
                    show_answers(s, &got, "app server"),
                );
                for a in &allowed {
                    text.push_str(&format!("  {}\n", compact(a, "app server")));
                }
                text.push_str(&self.schedule(&steps));
                text.push_str(
                    "\nA decision that takes several commands can be cut in between by another \
                     app server's: make it one command (a Lua script, run with EVALSHA).",
                );
                return Err(text);
            }
            drop(servers);
            proxy.close_all();
            // The next order: the last pick that had another option takes it.
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
        println!(
            "race scenario \"{}\" ({}): stopped after {MOST_SCHEDULES} orders",
            s.name,
            kind.name()
        );
        Ok(())
    }

    /// A schedule, command by command, with the line of the learner's file
    /// that names each command where there is one.
    fn schedule(&self, steps: &[Step]) -> String {
        let v = self.tested();
        let mut out = String::from("The order of Redis commands, as they reached the server:\n");
        for s in steps {
            let name = s.command.name();
            let at = line_naming(v.source, &name)
                .map(|n| format!("   ({}:{n})", v.file))
                .unwrap_or_default();
            out.push_str(&format!(
                "  app server {}  {}  -> {}{at}\n",
                s.client,
                s.command.text(),
                s.reply
            ));
        }
        out
    }

    // ------------------------------------------------------------------ faults

    /// Paused (SIGSTOP), then resumed: the policy's answer within the
    /// timeout, then Redis's answers again from the same instance.
    pub fn follows_its_failure_policy_when_the_server_is_paused(&self) {
        self.fault(
            "the server paused",
            |server| server.pause(),
            |server| {
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
            |server| server.kill(),
            |server| server.restart(),
        );
    }

    fn fault(
        &self,
        what: &str,
        stop: fn(&RedisServer),
        start: fn(&RedisServer) -> Result<(), String>,
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
                        std::thread::spawn(move || {
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
                    &["k"],
                    vec![Decision::Allowed { remaining: 2 }],
                    "Redis's answer: k's first request",
                );
                stop(&server);
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
                start(&server).unwrap_or_else(|e| panic!("{e}"));
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
        let unreachable = super::server::Unreachable::new();
        let at = Timestamp::from_secs(10);
        for on_failure in [
            OnFailure::Closed {
                retry_after: Duration::from_secs(7),
            },
            OnFailure::Open,
        ] {
            let rule = RuleKind::FixedWindow.rule(3, Duration::from_secs(3600));
            let mut settings = settings_on(RedisServer::shared());
            settings.client = super::client(&unreachable.url()).expect("a valid URL");
            settings.timeout = FAULT_TIMEOUT;
            settings.on_failure = on_failure;
            let limiter = (self.tested().build)(rule, settings)
                .unwrap_or_else(|e| panic!("new({rule:?}) returned Err({e:?})"));
            // Six calls at once: none may wait for another's connection.
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..6 {
                let (limiter, tx) = (limiter.clone(), tx.clone());
                std::thread::spawn(move || {
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
        for kind in RuleKind::ALL {
            let rule = kind.rule(3, Duration::from_secs(3600));
            for (what, first, at) in situations {
                for cut in 1..=8 {
                    let mut settings = settings_on(server);
                    settings.client = super::client(&proxy.url(0)).expect("a valid URL");
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

    // ---------------------------------------------------------- keys and TTLs

    /// On generated timelines, after every request: every key is the
    /// prefix and a client key as the hash tag, every key the scripts wrote
    /// was passed in `KEYS[]`, a script's keys share one hash tag, and every
    /// key has a time to live: that of its state (the end of the window, the
    /// newest entry leaving the log, the bucket full again) in whole
    /// milliseconds rounded up, plus the grace.
    pub fn keys_live_under_their_hash_tag_and_expire(&self) {
        let server = Arc::new(RedisServer::start().unwrap_or_else(|e| panic!("{e}")));
        let proxy = Arc::new(Proxy::start(server.addr(), 1));
        let shapes = [crate::gen::Shape::InOrder, crate::gen::Shape::OutOfOrder];
        for (kind, shape) in RuleKind::ALL
            .into_iter()
            .flat_map(|k| shapes.map(|s| (k, s)))
        {
            let algorithm = kind.rule(1, Duration::from_nanos(1)).algorithm();
            let strategy = crate::gen::timelines(algorithm, shape);
            let build = self.tested().build;
            let (server, proxy) = (server.clone(), proxy.clone());
            let result = run_cases(
                self.subject,
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

    // ------------------------------------------------------------ server clock

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
                "  app server {s}: {} -> {}\n",
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
                         {script}The first {capacity} requests are allowed with {} left, every later one is \
                         denied until about an hour from now: the script must read the time with \
                         redis.call('TIME') and ignore the `now` passed in.",
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
                             server's clock ({taken} tokens of an hour taken since the first request), plus \
                             the grace.",
                            if expiry < lo { lo - expiry } else { expiry - hi },
                            if expiry < lo { "sooner" } else { "later" }
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

    // ---------------------------------------------------------------- drawings

    /// Three app servers behind a round robin: each with a limiter in
    /// memory, then all three on one Redis. Per window, how many requests
    /// each arrangement admitted.
    pub fn three_servers_snapshot(&self, kind: RuleKind) {
        // Four a second either way: a window of a second, or a token every
        // quarter second.
        let (limit, period) = match kind {
            RuleKind::Gcra => (4, SECOND / 4),
            _ => (4, SECOND),
        };
        let timeline = three_servers_timeline(limit, period);
        let algorithm = kind.rule(1, Duration::from_nanos(1)).algorithm();
        let in_memory = round_robin_in_memory(algorithm, &timeline);
        let contract = crate::models::model_run(algorithm, &timeline);
        let run = |v: RedisImpl| -> Vec<Decision> {
            let mut d = (v.servers[kind as usize].build)(limit, timeline.config.period)
                .unwrap_or_else(|e| panic!("new returned Err({e:?})"));
            timeline
                .requests
                .iter()
                .map(|r| d.check(&r.key, r.now))
                .collect()
        };
        let tested = run(self.implementations.pick(self.subject));
        let reference = run(self.implementations.reference);
        let draw = |shared: &[Decision]| draw_three_servers(kind, &timeline, &in_memory, shared);
        let name = match kind {
            RuleKind::FixedWindow => "three_servers_fixed_window",
            RuleKind::SlidingLog => "three_servers_sliding_log",
            RuleKind::Gcra => "three_servers_gcra",
        };
        assert_snapshot(
            (self.root, self.number, name),
            &format!(
                "Three app servers behind a round robin, 16 requests a second: in-memory {}s against one {} on Redis",
                kind.name(),
                kind.name()
            ),
            [&draw(&tested), &draw(&reference), &draw(&contract)],
            &self.whose(),
        );
    }
}

/// The first line of `source` (1-based) that names a Redis command: as a
/// string (`"INCR"`, `cmd("GET")`), as the redis crate's method (`.incr(`),
/// or, for a script, where it is invoked.
pub fn line_naming(source: &str, command: &str) -> Option<usize> {
    let lower = command.to_ascii_lowercase();
    let mut needles = vec![
        format!("\"{command}\""),
        format!("\"{lower}\""),
        format!(".{lower}("),
    ];
    if command.starts_with("EVAL") {
        needles.extend([".invoke(".to_string(), ".invoke::<".to_string()]);
    }
    if command == "SET" {
        needles.push(".set_ex(".into());
        needles.push(".set_options(".into());
    }
    source.lines().enumerate().find_map(|(n, line)| {
        let code = line.split("//").next().unwrap_or("");
        needles
            .iter()
            .any(|w| code.contains(w.as_str()))
            .then_some(n + 1)
    })
}

/// 16 requests a second for three seconds, of one key: the three app
/// servers take them in turn.
const SECOND: u64 = 1_000_000_000;

/// More than the three app servers' limits together.
const PER_SECOND: u64 = 16;

fn three_servers_timeline(limit: u64, period: u64) -> Timeline {
    let requests = (0..3 * PER_SECOND)
        .map(|i| {
            Request::new(
                "k",
                (i / PER_SECOND) * SECOND + (i % PER_SECOND) * (SECOND / PER_SECOND),
            )
        })
        .collect();
    Timeline {
        config: Config::new(limit, period),
        requests,
    }
}

/// Each app server with a model of its own, request `i` on server `i % 3`.
fn round_robin_in_memory(algorithm: Algorithm, t: &Timeline) -> Vec<Decision> {
    let mut models: Vec<_> = (0..SERVERS).map(|_| algorithm.model(t.config)).collect();
    t.requests
        .iter()
        .enumerate()
        .map(|(i, r)| models[i % SERVERS].decide(&r.key, r.now.as_nanos()))
        .collect()
}

fn draw_three_servers(
    kind: RuleKind,
    t: &Timeline,
    in_memory: &[Decision],
    shared: &[Decision],
) -> String {
    let period = SECOND;
    let windows = t
        .requests
        .last()
        .map(|r| r.now.as_nanos() / period + 1)
        .unwrap_or(0);
    let rule = match kind {
        RuleKind::Gcra => format!(
            "a GCRA of capacity {}, a token every {} ms",
            t.config.limit,
            t.config.period.as_millis()
        ),
        _ => format!("a {} of {} a second", kind.name(), t.config.limit),
    };
    let mut out = format!(
        "{rule}; {PER_SECOND} requests a second for one key, app servers 0, 1, 2 in turn\n\n"
    );
    out.push_str(&format!(
        "{:<10} {:<32} {}\n",
        "second", "3 limiters in memory", "3 limiters on one Redis"
    ));
    for w in 0..windows {
        let count = |ds: &[Decision]| {
            t.requests
                .iter()
                .zip(ds)
                .filter(|(r, d)| r.now.as_nanos() / period == w && d.is_allowed())
                .count()
        };
        let width = PER_SECOND as usize;
        let bar = |n: usize| {
            format!(
                "{}{} {n:>2}",
                "#".repeat(n),
                ".".repeat(width - n.min(width))
            )
        };
        out.push_str(&format!(
            "{:<10} {:<32} {}\n",
            format!("[{w}s, {}s)", w + 1),
            bar(count(in_memory)),
            bar(count(shared))
        ));
    }
    let total = |ds: &[Decision]| ds.iter().filter(|d| d.is_allowed()).count();
    out.push_str(&format!(
        "\nadmitted in all: {} in memory, {} on Redis, of {} requests",
        total(in_memory),
        total(shared),
        t.requests.len()
    ));
    out
}

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
            RuleKind::Gcra => before.max(now) + p,
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

/// The server's clock in whole milliseconds since 1970 (`TIME`).
fn server_ms(admin: &mut redis::Connection) -> Result<i64, String> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(admin).map_err(|e| e.to_string())?;
    Ok(s * 1000 + us / 1000)
}

/// PEXPIRETIME's answer for a key that never expires.
fn ttl_is_none(expiry: i64) -> bool {
    expiry == -1
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
    settings.client = super::client(&proxy.url(0)).expect("a valid URL");
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
    let grace = GRACE.as_millis();
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
        let at = format!(
            "after request {i}, {} -> {}",
            call(&r.key, r.now),
            describe(&d)
        );
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

    #[test]
    fn a_command_is_found_by_its_name_or_its_method() {
        let src = "// GET is not this\nlet x = con.get(k);\nredis::cmd(\"INCR\")\nscript.key(k).invoke(con)";
        assert_eq!(line_naming(src, "GET"), Some(2));
        assert_eq!(line_naming(src, "INCR"), Some(3));
        assert_eq!(line_naming(src, "EVALSHA"), Some(4));
        assert_eq!(line_naming(src, "EXPIRE"), None);
    }
}
