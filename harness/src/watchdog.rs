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

/// Waits for a child process up to `limit`, reading both its outputs
/// meanwhile (so a chatty child cannot block on a full pipe); kills it, and
/// its process group when it leads one, after `limit`. Returns what it
/// printed and whether it was stopped.
pub fn collect(mut child: std::process::Child, limit: Duration) -> (String, bool) {
    fn read(pipe: Option<impl std::io::Read + Send + 'static>) -> mpsc::Receiver<String> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            let _ = tx.send(text);
        });
        rx
    }
    let stdout = read(child.stdout.take());
    let stderr = read(child.stderr.take());
    let deadline = std::time::Instant::now() + limit;
    let mut timed_out = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => break,
            Ok(None) if std::time::Instant::now() >= deadline => {
                // The whole group: cargo, and the test binary it started,
                // which would otherwise run on, holding our pipes open.
                #[cfg(unix)]
                let _ = std::process::Command::new("kill")
                    .args(["-s", "KILL", "--", &format!("-{}", child.id())])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
                timed_out = true;
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // Anything that outlived the kill must not keep us waiting for its output.
    let grace = Duration::from_secs(5);
    let out = stdout.recv_timeout(grace).unwrap_or_default();
    let err = stderr.recv_timeout(grace).unwrap_or_default();
    (format!("{out}{err}"), timed_out)
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
    let spawned = std::thread::Builder::new()
        .name("kata-watched".into())
        .stack_size(32 << 20)
        .spawn(move || {
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
    if let Err(e) = spawned {
        return Err(Stop::Panicked(format!("could not start a thread: {e}")));
    }
    match rx.recv_timeout(limit) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(message)) => Err(Stop::Panicked(message)),
        Err(_) => {
            watch.cancelled.store(true, Ordering::Relaxed);
            let last = *watch.last_op.lock().unwrap_or_else(|e| e.into_inner());
            let stopped = rx.recv_timeout(Duration::from_secs(1)).is_ok();
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
            text.contains("compare_exchange at harness/src/watchdog.rs"),
            "{text}"
        );
        assert!(text.contains("stopped it there"), "{text}");
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
