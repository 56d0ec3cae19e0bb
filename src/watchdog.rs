//! Runs learner code so that a panic, a deadlock or an endless loop ends as a
//! failed test with its location, never a hung or aborted run.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, Once};
use std::time::Duration;

use crate::files::tidy_path;
use crate::sync::{set_watch, Watch};

thread_local! {
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
    static PROGRESS: RefCell<Option<Arc<AtomicUsize>>> = const { RefCell::new(None) };
}

/// How long one watched piece of work may take (`KATA_TIME_LIMIT_SECS`,
/// default 10). A property case takes milliseconds and a loom model well under
/// a second; only a hang reaches this.
pub fn time_limit() -> Duration {
    let secs = std::env::var("KATA_TIME_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    Duration::from_secs(secs)
}

/// The first hang of this test run. A hung call keeps its thread (nothing can
/// stop a loop that never reaches a lock or an atomic), so once one is found
/// the other tests fail at once and point to it instead of each waiting out
/// the time limit beside a spinning core.
static FIRST_HANG: Mutex<Option<String>> = Mutex::new(None);

fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            let at = info
                .location()
                .map(|l| format!("{}:{}:{}", tidy_path(l.file()), l.line(), l.column()))
                .unwrap_or_else(|| "an unknown place".into());
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "(no message)".into());
            // The first panic is the cause; later ones are unwinding's echoes.
            let _ = LAST_PANIC.try_with(|p| {
                p.borrow_mut()
                    .get_or_insert_with(|| format!("panicked at {at}: {message}"));
            });
            // Watched code reports its panics itself, once, with context; the
            // default hook would print every panic of every shrinking step.
            if !QUIET.try_with(Cell::get).unwrap_or(false) {
                previous(info);
            }
        }));
    });
}

/// Takes the first panic recorded on this thread since the last call.
pub fn take_panic() -> Option<String> {
    LAST_PANIC.with(|p| p.borrow_mut().take())
}

/// Tells the watchdog which request the watched thread is answering.
pub fn progress(index: usize) {
    let _ = PROGRESS.try_with(|p| {
        if let Some(p) = &*p.borrow() {
            p.store(index, Ordering::Relaxed);
        }
    });
}

/// Starts a child process that ends when this process ends, however it
/// ends (a test binary stopped from outside included): on Linux it is
/// started with `PR_SET_PDEATHSIG`, from one thread that lives as long as
/// the process (the signal follows the thread that forked, not the process).
pub fn spawn_tied(mut command: std::process::Command) -> std::io::Result<std::process::Child> {
    type Spawned = std::io::Result<std::process::Child>;
    type Request = (std::process::Command, mpsc::Sender<Spawned>);
    static KEEPER: std::sync::OnceLock<Mutex<mpsc::Sender<Request>>> = std::sync::OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::Builder::new()
            .name("kata-child-keeper".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread starts");
        Mutex::new(tx)
    });
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe, as code between fork and exec
    // must be.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let (tx, rx) = mpsc::channel();
    keeper
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((command, tx))
        .expect("the keeper thread lives as long as the process");
    rx.recv().expect("the keeper thread answers")
}

/// Waits for a child process up to `limit`, reading both its outputs
/// meanwhile (so a chatty child cannot block on a full pipe); kills it, and
/// its process group when it leads one, after `limit`. Returns what it
/// printed and whether it was stopped.
pub fn collect(child: std::process::Child, limit: Duration) -> (String, bool) {
    let run = collect_until(child, limit, |_, _| false);
    (run.output(), run.timed_out)
}

/// What [`collect_until`] saw of a child process.
#[derive(Debug, Default)]
pub struct Collected {
    pub stdout: String,
    pub stderr: String,
    /// Killed after the time limit.
    pub timed_out: bool,
    /// Killed because `stop` said so.
    pub stopped: bool,
    /// The signal that ended it, when one did and neither we nor the time
    /// limit sent it: a crash.
    pub signal: Option<i32>,
}

impl Collected {
    /// Everything it printed: its standard output, then its standard error.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// [`collect`], which also asks `stop(stdout, stderr)` whenever a line
/// arrives (at most every 20 ms; every 200 ms when none does) and kills the
/// child, and its process group, as soon as it says yes. Says which signal ended the child.
pub fn collect_until(
    mut child: std::process::Child,
    limit: Duration,
    mut stop: impl FnMut(&str, &str) -> bool,
) -> Collected {
    enum Chunk {
        Out(String),
        Err(String),
    }
    fn read(
        pipe: Option<impl std::io::Read + Send + 'static>,
        tx: mpsc::Sender<Chunk>,
        wrap: fn(String) -> Chunk,
    ) {
        crate::trial::spawn(move || {
            let Some(pipe) = pipe else { return };
            let mut reader = std::io::BufReader::new(pipe);
            let mut line = Vec::new();
            while let Ok(n) = std::io::BufRead::read_until(&mut reader, b'\n', &mut line) {
                if n == 0
                    || tx
                        .send(wrap(String::from_utf8_lossy(&line).into_owned()))
                        .is_err()
                {
                    break;
                }
                line.clear();
            }
        });
    }
    let (tx, rx) = mpsc::channel();
    read(child.stdout.take(), tx.clone(), Chunk::Out);
    read(child.stderr.take(), tx, Chunk::Err);
    let kill = |child: &mut std::process::Child| {
        // The whole group: cargo, and the test binary it started, which
        // would otherwise run on, holding our pipes open.
        #[cfg(unix)]
        let _ = std::process::Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", child.id())])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = child.kill();
        child.wait().ok()
    };
    let deadline = std::time::Instant::now() + limit;
    let mut seen = Collected::default();
    let mut asked = std::time::Instant::now();
    let mut fresh = false;
    let status = loop {
        // Every turn, whether a line came or not, also asks `stop` and
        // looks at the child and the clock: a child that prints without
        // pause is stopped all the same.
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(Chunk::Out(text)) => {
                seen.stdout.push_str(&text);
                fresh = true;
            }
            Ok(Chunk::Err(text)) => {
                seen.stderr.push_str(&text);
                fresh = true;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Both outputs closed: nothing more to read, only to wait for.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(20))
            }
        }
        // Asked when a line came, and every 200 ms without one, so that a
        // `stop` that watches something besides the output (a run no longer
        // wanted) is heard from a child that prints nothing.
        let due = if fresh { 20 } else { 200 };
        if asked.elapsed() >= Duration::from_millis(due) {
            fresh = false;
            asked = std::time::Instant::now();
            if stop(&seen.stdout, &seen.stderr) {
                seen.stopped = true;
                break kill(&mut child);
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Err(_) => break None,
            Ok(None) if std::time::Instant::now() >= deadline => {
                seen.timed_out = true;
                break kill(&mut child);
            }
            Ok(None) => {}
        }
    };
    // Anything that outlived the child must not keep us waiting for its
    // output: what arrives within a grace period is kept.
    let grace = std::time::Instant::now() + Duration::from_secs(5);
    while let Ok(chunk) =
        rx.recv_timeout(grace.saturating_duration_since(std::time::Instant::now()))
    {
        match chunk {
            Chunk::Out(text) => seen.stdout.push_str(&text),
            Chunk::Err(text) => seen.stderr.push_str(&text),
        }
    }
    if !seen.stopped && !seen.timed_out {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            seen.signal = status.and_then(|s| s.signal());
        }
    }
    seen
}

/// A signal's name as `kill -l` gives it, with its number: `11 (SIGSEGV)`.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "a signal",
    };
    format!("{signal} ({name})")
}

/// Runs `work` on a new OS thread and waits for it: a panic there comes
/// back as its message with its location, as on a watched thread.
pub fn on_another_thread<R: Send>(work: impl FnOnce() -> R + Send) -> Result<R, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            QUIET.with(|q| q.set(true));
            panic::catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
                take_panic().unwrap_or_else(|| {
                    payload
                        .downcast_ref::<String>()
                        .cloned()
                        .unwrap_or_else(|| "panicked".into())
                })
            })
        })
        .join()
        .unwrap_or_else(|_| Err("panicked".into()))
    })
}

/// Why watched work did not finish normally.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// It panicked: the message names the place.
    Panicked(String),
    /// It ran past the time limit: endless loop or deadlock.
    Hung(String),
}

impl Stop {
    pub fn text(&self) -> &str {
        match self {
            Stop::Panicked(s) | Stop::Hung(s) => s,
        }
    }
}

/// Runs `work` on its own thread. A panic comes back as [`Stop::Panicked`]
/// with its location; work still running after `limit` comes back as
/// [`Stop::Hung`], naming the last lock or atomic operation it performed and
/// the request it was answering (`describe_request`).
pub fn watched<R: Send + 'static>(
    limit: Duration,
    describe_request: impl Fn(usize) -> String,
    work: impl FnOnce() -> R + Send + 'static,
) -> Result<R, Stop> {
    watch_over(limit, describe_request, work, true)
}

fn watch_over<R: Send + 'static>(
    limit: Duration,
    describe_request: impl Fn(usize) -> String,
    work: impl FnOnce() -> R + Send + 'static,
    remember_hang: bool,
) -> Result<R, Stop> {
    install_hook();
    if let Some(first) = FIRST_HANG.lock().unwrap_or_else(|e| e.into_inner()).clone() {
        return Err(Stop::Hung(format!(
            "was not run: earlier in this run a call {first} Fix that first; this test runs again then."
        )));
    }
    let watch = Arc::new(Watch::default());
    let progress_at = Arc::new(AtomicUsize::new(usize::MAX));
    let (tx, rx) = mpsc::channel();
    let (w, p) = (watch.clone(), progress_at.clone());
    let output = crate::trial::Output::current();
    let spawned = std::thread::Builder::new()
        .name("kata-watched".into())
        .stack_size(32 << 20)
        .spawn(move || {
            crate::trial::Output::adopt(output);
            QUIET.with(|q| q.set(true));
            set_watch(Some(w));
            PROGRESS.with(|slot| *slot.borrow_mut() = Some(p));
            let outcome = panic::catch_unwind(AssertUnwindSafe(work)).map_err(|payload| {
                LAST_PANIC
                    .with(|p| p.borrow_mut().take())
                    .unwrap_or_else(|| {
                        payload
                            .downcast_ref::<String>()
                            .cloned()
                            .unwrap_or_else(|| "panicked".into())
                    })
            });
            let _ = tx.send(outcome);
        });
    let handle = match spawned {
        Ok(handle) => handle,
        Err(e) => return Err(Stop::Panicked(format!("could not start a thread: {e}"))),
    };
    // A thread that answered is joined, never detached: glibc's
    // pthread_detach reads the thread's descriptor after marking it
    // detached, and a thread that exits in between has its stack (where
    // the descriptor lives) unmapped as soon as another thread starts or
    // ends, which a stack this large (over glibc's 40 MiB cache of stacks)
    // always is. That read then ends the test binary by SIGSEGV, once in
    // thousands of runs. A thread still running when given up on is
    // detached while it runs, which is safe.
    match rx.recv_timeout(limit) {
        Ok(answer) => {
            let _ = handle.join();
            answer.map_err(Stop::Panicked)
        }
        Err(_) => {
            watch.cancelled.store(true, Ordering::Relaxed);
            let last = *watch.last_op.lock().unwrap_or_else(|e| e.into_inner());
            let stopped = rx.recv_timeout(Duration::from_secs(1)).is_ok();
            if stopped {
                let _ = handle.join();
            }
            let index = progress_at.load(Ordering::Relaxed);
            let mut text = format!(
                "did not return within {} s: an endless loop or a deadlock.",
                limit.as_secs()
            );
            if index != usize::MAX {
                text.push_str(&format!(" It was answering {}.", describe_request(index)));
            }
            match last {
                Some((at, op)) => text.push_str(&format!(
                    " Its last lock or atomic operation was {op} at {}:{}.",
                    tidy_path(at.file()),
                    at.line()
                )),
                None => text.push_str(" It performed no lock or atomic operation."),
            }
            text.push_str(if stopped {
                " The watchdog stopped it there."
            } else {
                " It is still running (blocked in a lock, or a loop with no lock or atomic in it) \
                 and uses a core until the test binary exits."
            });
            if remember_hang {
                FIRST_HANG
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(|| text.clone());
            }
            Err(Stop::Hung(text))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::std_backend::{AtomicU64, Mutex, Ordering as O};

    #[test]
    fn returns_results_and_panics_with_location() {
        assert_eq!(watched(time_limit(), |_| String::new(), || 7), Ok(7));
        let stop =
            watched(time_limit(), |_| String::new(), || -> u8 { panic!("boom") }).unwrap_err();
        assert!(
            matches!(&stop, Stop::Panicked(m) if m.contains("src/watchdog.rs") && m.contains("boom")),
            "{stop:?}"
        );
    }

    #[test]
    fn stops_an_endless_cas_loop_and_names_it() {
        // Not remembered as this run's first hang: the other unit tests go on.
        let stop = watch_over(
            Duration::from_millis(200),
            |i| format!("request #{}", i + 1),
            || {
                progress(4);
                let a = AtomicU64::new(0);
                loop {
                    if a.compare_exchange(1, 2, O::SeqCst, O::SeqCst).is_ok() {
                        break;
                    }
                }
            },
            false,
        )
        .unwrap_err();
        let text = stop.text();
        assert!(matches!(stop, Stop::Hung(_)));
        assert!(text.contains("request #5"), "{text}");
        assert!(
            text.contains("compare_exchange at src/watchdog.rs"),
            "{text}"
        );
        assert!(text.contains("stopped it there"), "{text}");
    }

    fn shell(script: &str) -> std::process::Child {
        let mut command = std::process::Command::new("sh");
        command
            .args(["-c", script])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command.spawn().expect("sh starts")
    }

    #[test]
    #[cfg(unix)]
    fn a_child_ended_by_a_signal_is_named_as_a_crash() {
        let seen = collect_until(
            shell("echo before; kill -SEGV $$"),
            Duration::from_secs(10),
            |_, _| false,
        );
        assert_eq!(seen.signal, Some(11), "{seen:?}");
        assert_eq!(signal_name(11), "11 (SIGSEGV)");
        assert!(seen.stdout.contains("before") && !seen.stopped && !seen.timed_out);
        // A normal exit, even a failing one, is no crash.
        let seen = collect_until(shell("exit 101"), Duration::from_secs(10), |_, _| false);
        assert_eq!(seen.signal, None, "{seen:?}");
    }

    #[test]
    fn a_child_is_stopped_when_asked_and_after_its_limit() {
        let started = std::time::Instant::now();
        let seen = collect_until(
            shell("echo 'test a ... FAILED'; echo shown >&2; sleep 30"),
            Duration::from_secs(20),
            |out, err| out.contains("FAILED") && err.contains("shown"),
        );
        assert!(
            seen.stopped && !seen.timed_out && seen.signal.is_none(),
            "{seen:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(15), "{seen:?}");
        let seen = collect_until(shell("sleep 30"), Duration::from_millis(300), |_, _| false);
        assert!(
            seen.timed_out && !seen.stopped && seen.signal.is_none(),
            "{seen:?}"
        );
        // A child that prints without pause is stopped at its limit too.
        let started = std::time::Instant::now();
        let seen = collect_until(
            shell("while :; do echo line; done"),
            Duration::from_millis(300),
            |_, _| false,
        );
        assert!(seen.timed_out && started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn self_deadlock_is_a_panic_naming_both_lines() {
        let stop = watched(
            time_limit(),
            |_| String::new(),
            || {
                let m = Mutex::new(1);
                let _first = m.lock().unwrap();
                let _second = m.lock().unwrap();
            },
        )
        .unwrap_err();
        let text = stop.text();
        assert!(text.contains("deadlock"), "{text}");
        assert_eq!(text.matches("src/watchdog.rs").count(), 3, "{text}");
    }
}
