//! What a check prints, kept with its trial as libtest keeps it: each
//! trial's thread holds its [`Output`], which [`println`], [`eprint`] and the
//! panic hook write to; with `--nocapture` there is none and they write
//! straight to the process's own output.
//!
//! The harness prints through [`println`] and [`eprint`], and
//! the threads a check starts take its output ([`spawn`],
//! [`Output::inherited`], [`Output::adopt`]). What a learner's file or
//! another crate prints with `println!` goes to the process's output as it
//! comes: libtest keeps it through a hook only the standard library may
//! use, and a `println!` of our own in the learner's module is refused by
//! the compiler (a macro-expanded macro may not shadow the prelude's). The
//! runner shows only the checks' outputs, so a learner's prints never mix
//! with what it shows.

use std::cell::RefCell;
use std::fmt;
use std::io::Write;
use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};

thread_local! {
    static CURRENT: RefCell<Option<Output>> = const { RefCell::new(None) };
}

/// Where one trial's output goes: a buffer shared by the threads it
/// starts and adopts, and the trial's name.
#[derive(Clone, Debug)]
pub struct Output {
    name: Arc<str>,
    kept: Option<Arc<Mutex<Vec<u8>>>>,
}

impl Output {
    /// A trial's output: kept, or printed as it comes (`--nocapture`).
    pub(super) fn new(name: &str, keep: bool) -> Output {
        Output {
            name: name.into(),
            kept: keep.then(Arc::default),
        }
    }

    /// The output of the trial this thread runs for, to hand to a thread it
    /// starts ([`Output::adopt`]).
    pub fn current() -> Option<Output> {
        CURRENT.try_with(|c| c.borrow().clone()).ok().flatten()
    }

    /// Makes this thread write where `output` does (a thread a check
    /// starts, so that its panic shows under the check).
    pub fn adopt(output: Option<Output>) {
        let _ = CURRENT.try_with(|c| *c.borrow_mut() = output);
    }

    /// A thread pool's start hook (tokio's `on_thread_start`): its threads
    /// write where this thread does, as threads a libtest test starts do.
    pub fn inherited() -> impl Fn() + Send + Sync + 'static {
        let output = Output::current();
        move || Output::adopt(output.clone())
    }

    /// What was kept so far.
    pub(super) fn text(&self) -> String {
        self.kept.as_ref().map_or_else(String::new, |k| {
            String::from_utf8_lossy(&k.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
        })
    }

    fn write(&self, bytes: &[u8], to_stderr: bool) {
        match &self.kept {
            Some(kept) => kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend_from_slice(bytes),
            None => write_out(bytes, to_stderr),
        }
    }
}

fn write_out(bytes: &[u8], to_stderr: bool) {
    // A closed pipe is not the check's failure.
    let _ = if to_stderr {
        std::io::stderr().lock().write_all(bytes)
    } else {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes).and_then(|()| out.flush())
    };
}

fn write(args: fmt::Arguments, to_stderr: bool) {
    let text = fmt::format(args);
    match Output::current() {
        Some(output) => output.write(text.as_bytes(), to_stderr),
        None => write_out(text.as_bytes(), to_stderr),
    }
}

/// `eprint!` for a check: kept with the trial's output.
pub fn eprint(args: fmt::Arguments) {
    write(args, true);
}

/// The name of the trial this thread runs for (`property::keeps_the_limit`),
/// if it runs for one.
pub fn name() -> Option<String> {
    CURRENT
        .try_with(|c| c.borrow().as_ref().map(|o| o.name.to_string()))
        .ok()
        .flatten()
}

/// Installs, once, the panic hook that writes what Rust's own writes
/// (`thread 'NAME' (TID) panicked at FILE:LINE:COL:`, the message, the
/// backtrace or the note on how to see one) to the trial's output.
pub(super) fn install_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| std::panic::set_hook(Box::new(hook)));
}

fn hook(info: &PanicHookInfo) {
    static NOTED: AtomicBool = AtomicBool::new(false);
    let thread = std::thread::current();
    let name = thread.name().unwrap_or("<unnamed>");
    let at = info
        .location()
        .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
        .unwrap_or_default();
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "Box<dyn Any>".into());
    let mut text = format!(
        "\nthread '{name}' ({}) panicked at {at}:\n{message}\n",
        tid()
    );
    let backtrace = std::env::var("RUST_BACKTRACE").ok().filter(|v| v != "0");
    if let Some(how) = backtrace {
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        text.push_str("stack backtrace:\n");
        match how.as_str() {
            "full" => text.push_str(&trace),
            _ => {
                text.push_str(&short(&trace));
                text.push_str(
                    "note: Some details are omitted, run with `RUST_BACKTRACE=full` for a \
                     verbose backtrace.\n",
                );
            }
        }
    } else if !NOTED.swap(true, Ordering::Relaxed) {
        text.push_str(
            "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
        );
    }
    match Output::current() {
        Some(output) => output.write(text.as_bytes(), true),
        None => write_out(text.as_bytes(), true),
    }
}

/// A backtrace as Rust's own hook shortens it: the frames between the
/// panic's machinery and the thread's start, numbered from 0.
pub(super) fn short(trace: &str) -> String {
    let mut frames: Vec<Vec<&str>> = vec![];
    for line in trace.lines() {
        let starts_frame = line
            .trim_start()
            .split_once(": ")
            .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        match frames.last_mut() {
            Some(frame) if !starts_frame => frame.push(line),
            _ => frames.push(vec![line]),
        }
    }
    let named = |frame: &Vec<&str>, marker: &str| frame[0].contains(marker);
    let from = frames
        .iter()
        .position(|f| named(f, "__rust_end_short_backtrace"))
        .map_or(0, |i| i + 1);
    let to = frames
        .iter()
        .position(|f| named(f, "__rust_begin_short_backtrace"))
        .unwrap_or(frames.len())
        .max(from);
    let mut text = String::new();
    for (n, frame) in frames[from..to].iter().enumerate() {
        let symbol = frame[0]
            .trim_start()
            .split_once(": ")
            .map_or("", |(_, s)| s);
        text.push_str(&format!("{n:>4}: {symbol}\n"));
        for line in &frame[1..] {
            text.push_str(line);
            text.push('\n');
        }
    }
    text
}

/// The thread's id as the system knows it, as Rust's own hook shows it.
fn tid() -> u64 {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no preconditions.
    return unsafe { libc::gettid() } as u64;
    #[cfg(not(target_os = "linux"))]
    return std::process::id().into();
}

/// `println!` for a check: kept with the trial's output.
pub fn println(args: fmt::Arguments) {
    write(format_args!("{args}\n"), false);
}

/// `std::thread::spawn` for a check: the thread writes to the trial's
/// output, as a thread a libtest test starts does.
pub fn spawn<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let output = Output::current();
    std::thread::spawn(move || {
        Output::adopt(output);
        work()
    })
}
