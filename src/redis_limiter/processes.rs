//! App servers as processes. Each is this test binary run again (its
//! `app_server` test, which the suite marks ignored), building the limiters
//! it is sent (an implementation, a rule and settings) and answering
//! `try_check` over its stdin and stdout. A limiter whose state depends on
//! its process (a process id in a key, a count kept in memory) answers each
//! process apart, which app servers inside one process cannot show.
//!
//! The processes are started on first use, [`SERVERS`] of them, kept for the
//! test binary's run and tied to it (they die with it).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use super::drive::{
    in_turn, settings_on, BuildRedis, Limiter, RedisVariant, RuleKind, RULES, SERVERS,
};
use super::{OnFailure, Settings};
use crate::decision::{ConfigError, Decision};
use crate::drive::{Drive, Implementations};
use crate::infra::server::RedisServer;
use crate::time::Timestamp;
use crate::timeline::parse_decisions;
use crate::watchdog::{take_panic, time_limit};

/// Set in an app server process's environment.
const CHILD: &str = "KATA_APP_SERVER";
/// Starts each line an app server answers with (the test binary prints lines too).
const ANSWER: &str = "KATA_APP_ANSWER";
/// The test an app server process runs (at the test file's root).
pub const TEST: &str = "app_server";

/// One app server process.
struct Process {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Process {
    fn start(number: usize) -> Result<Process, String> {
        let exe = std::env::current_exe().map_err(|e| format!("the test binary's path: {e}"))?;
        let mut command = Command::new(exe);
        command
            .args([
                "--exact",
                TEST,
                "--ignored",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(CHILD, number.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = crate::watchdog::spawn_tied(command)
            .map_err(|e| format!("app server process {number} did not start: {e}"))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        crate::trial::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The binary's "test app_server ... " may start the first line.
                if let Some(at) = line.find(ANSWER) {
                    let answer = line[at + ANSWER.len()..].trim_start();
                    if tx.send(answer.to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        let mut process = Process {
            child,
            stdin,
            lines,
        };
        match process.receive(number)?.as_str() {
            "ready" => Ok(process),
            other => Err(format!(
                "app server process {number} said {other:?} instead of being ready"
            )),
        }
    }

    fn receive(&mut self, number: usize) -> Result<String, String> {
        match self.lines.recv_timeout(time_limit()) {
            Ok(line) => Ok(line),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "app server process {number} did not answer within {} s",
                time_limit().as_secs()
            )),
            Err(RecvTimeoutError::Disconnected) => Err(format!(
                "app server process {number} ended ({})",
                match self.child.try_wait() {
                    Ok(Some(status)) => status.to_string(),
                    _ => "its output closed".into(),
                }
            )),
        }
    }

    fn ask(&mut self, number: usize, line: &str) -> Result<String, String> {
        writeln!(self.stdin, "{line}")
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("app server process {number} stopped reading: {e}"))?;
        self.receive(number)
    }
}

/// The app server processes, each started again if it ended.
fn processes() -> &'static [Mutex<Option<Process>>] {
    static ALL: OnceLock<Vec<Mutex<Option<Process>>>> = OnceLock::new();
    ALL.get_or_init(|| (0..SERVERS).map(|_| Mutex::new(None)).collect())
}

/// Sends `line` to app server `number` (starting it if need be) and
/// returns its answer.
pub(crate) fn ask(number: usize, line: &str) -> Result<String, String> {
    let mut slot = processes()[number]
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        *slot = Some(Process::start(number)?);
    }
    let answer = slot.as_mut().expect("started above").ask(number, line);
    if answer.is_err() {
        // Whatever happened to it, the next call starts a fresh one.
        if let Some(mut p) = slot.take() {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
    answer
}

pub(crate) fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

pub(crate) fn unhex(text: &str) -> Result<String, String> {
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2).unwrap_or("?"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|e| format!("{text:?} is not hex: {e}"))?;
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// A limiter that lives in app server process `number`.
pub struct Remote {
    number: usize,
    id: u64,
}

impl Remote {
    /// Builds `v`'s limiter of `kind` in app server process `number`.
    pub fn new(
        number: usize,
        v: RedisVariant,
        kind: RuleKind,
        (limit, period): (u64, Duration),
        (url, settings): (&str, &Settings),
    ) -> Result<Remote, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let line = format!(
            "new {id} {} {} {limit} {} {} {} {} {}",
            hex(v.file),
            kind.index_in(&RULES),
            period.as_nanos(),
            hex(url),
            hex(&settings.prefix),
            settings.timeout.as_nanos(),
            settings.ttl_grace.as_nanos()
        );
        match ask(number, &line)?.as_str() {
            "ok" => Ok(Remote { number, id }),
            other => Err(answer_error(other)),
        }
    }
}

pub(crate) fn answer_error(answer: &str) -> String {
    match answer.split_once(' ') {
        Some((_, text)) => unhex(text).unwrap_or_else(|e| e),
        None => answer.to_string(),
    }
}

impl Limiter for Remote {
    fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, redis::RedisError> {
        let line = format!("check {} {} {}", self.id, hex(key), now.as_nanos());
        let answer = ask(self.number, &line).unwrap_or_else(|e| panic!("{e}"));
        match answer.split_once(' ') {
            Some(("ok", d)) => match parse_decisions(d).as_deref() {
                Ok([d]) => Ok(*d),
                _ => panic!("app server process {} answered {answer:?}", self.number),
            },
            Some(("err", text)) => Err(redis::RedisError::from(std::io::Error::other(
                unhex(text).unwrap_or_default(),
            ))),
            _ => panic!(
                "in app server process {}: {}",
                self.number,
                answer_error(&answer)
            ),
        }
    }

    fn check(&self, key: &str, now: Timestamp) -> Decision {
        self.try_check(key, now)
            .unwrap_or_else(|e| panic!("app server process {}: {e}", self.number))
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        let _ = ask(self.number, &format!("drop {}", self.id));
    }
}

/// In an app server process (its `app_server` test): answers the lines of
/// stdin until it closes. Elsewhere, returns at once.
pub fn serve(implementations: &Implementations<RedisVariant>) {
    serve_with(implementations, &mut |_| None);
}

/// [`serve`], with a kind's own commands: `more` answers the lines it
/// knows (given their fields), `None` for the others. An answer is `ok …`,
/// or `fail` and the reason in hex.
pub fn serve_with(
    implementations: &Implementations<RedisVariant>,
    more: &mut dyn FnMut(&[&str]) -> Option<String>,
) {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mut all: Vec<RedisVariant> = vec![
        implementations.learner,
        implementations.stub,
        implementations.reference,
    ];
    all.extend(implementations.mistakes.iter().map(|(_, v)| *v));
    all.extend(implementations.alternatives.iter().map(|(_, v)| *v));
    let mut limiters: HashMap<u64, Arc<dyn Limiter>> = HashMap::new();
    println!("{ANSWER} ready");
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        let fields: Vec<&str> = line.split(' ').collect();
        if let Some(answer) = more(&fields) {
            println!("{ANSWER} {answer}");
            continue;
        }
        let answer = match fields.as_slice() {
            ["new", id, file, rule, limit, period, url, prefix, timeout, grace] => {
                let built = (|| -> Result<(u64, Arc<dyn Limiter>), String> {
                    let file = unhex(file)?;
                    let v = all
                        .iter()
                        .find(|v| v.file == file)
                        .ok_or_else(|| format!("no implementation is compiled from {file}"))?;
                    let number = |s: &str| s.parse::<u64>().map_err(|e| e.to_string());
                    let kind = RULES[number(rule)? as usize];
                    let mut settings = Settings::new(&unhex(url)?).map_err(|e| e.to_string())?;
                    settings.prefix = unhex(prefix)?;
                    settings.timeout = Duration::from_nanos(number(timeout)?);
                    settings.ttl_grace = Duration::from_nanos(number(grace)?);
                    settings.on_failure = OnFailure::Closed {
                        retry_after: Duration::from_secs(1),
                    };
                    let rule = kind.rule(number(limit)?, Duration::from_nanos(number(period)?));
                    let build: BuildRedis = v.build;
                    let limiter = build(rule, settings).map_err(|e| format!("{e:?}"))?;
                    Ok((number(id)?, limiter))
                })();
                match built {
                    Ok((id, limiter)) => {
                        limiters.insert(id, limiter);
                        "ok".to_string()
                    }
                    Err(e) => format!("fail {}", hex(&e)),
                }
            }
            ["check", id, key, now] => {
                let limiter = id
                    .parse()
                    .ok()
                    .and_then(|id: u64| limiters.get(&id).cloned());
                match (limiter, unhex(key), now.parse::<u64>()) {
                    (Some(limiter), Ok(key), Ok(now)) => {
                        let now = Timestamp::from_nanos(now);
                        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            limiter.try_check(&key, now)
                        })) {
                            Ok(Ok(d)) => format!("ok {d}"),
                            Ok(Err(e)) => format!("err {}", hex(&e.to_string())),
                            Err(payload) => {
                                let text = take_panic()
                                    .or_else(|| payload.downcast_ref::<String>().cloned())
                                    .or_else(|| {
                                        payload.downcast_ref::<&str>().map(|s| s.to_string())
                                    })
                                    .unwrap_or_else(|| "a panic".into());
                                format!("panic {}", hex(&text))
                            }
                        }
                    }
                    _ => format!("fail {}", hex(&format!("cannot read {line:?}"))),
                }
            }
            ["drop", id] => {
                id.parse().ok().and_then(|id: u64| limiters.remove(&id));
                "ok".to_string()
            }
            _ => format!("fail {}", hex(&format!("cannot read {line:?}"))),
        };
        println!("{ANSWER} {answer}");
    }
    std::process::exit(0);
}

/// Three app servers with the same settings on the shared Redis, taking
/// requests in turn: together they must answer as one limiter. Each is a
/// process of its own (a [`Remote`]), as app servers are: state
/// kept per process shows.
pub fn servers(
    v: RedisVariant,
    kind: RuleKind,
    limit: u64,
    period: Duration,
) -> Result<Box<dyn Drive>, ConfigError> {
    // The configuration's errors are the limiter's own, said here.
    (v.build)(kind.rule(limit, period), settings_on(RedisServer::shared()))?;
    let server = RedisServer::shared();
    let settings = settings_on(server);
    let instances = (0..SERVERS)
        .map(|n| {
            Remote::new(n, v, kind, (limit, period), (&server.url(), &settings))
                .map(|r| Arc::new(r) as Arc<dyn Limiter>)
                .unwrap_or_else(|e| panic!("{e}"))
        })
        .collect();
    Ok(in_turn(instances))
}
