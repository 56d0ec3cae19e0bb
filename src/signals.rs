//! A stack overflow is reported as Rust reports it, once loom has run too.
//!
//! loom runs the threads of a model as coroutines (the `generator` crate) on
//! stacks of their own, and to tell a coroutine's overflow from other faults
//! `generator` replaces the process's `SIGSEGV` and `SIGBUS` handlers the
//! first time a coroutine starts. For a fault off every coroutine's stack its
//! handler prints a backtrace from inside the signal handler, on the small
//! alternate signal stack: that overflows in turn, and the test binary dies
//! by `SIGSEGV` without a word, where Rust would have said "thread '…' has
//! overflowed its stack" and named the thread (the test). Any test that ran
//! after a loom scenario in the same binary could die that way.
//!
//! So before the first model runs, [`before_loom`] keeps Rust's handlers,
//! lets `generator` install its own, and puts a dispatcher in front of both:
//! a fault on a thread that is exploring a model goes to `generator`'s
//! handler (a coroutine's overflow becomes that model's panic); every other
//! fault goes to Rust's.

#[cfg(unix)]
mod imp {
    use std::cell::Cell;
    use std::sync::OnceLock;

    thread_local! {
        // Set while this thread explores a loom model: its coroutines run
        // on it. A const initialiser: reading it allocates nothing, as a
        // signal handler requires.
        static IN_MODEL: Cell<bool> = const { Cell::new(false) };
    }

    /// The handlers of SIGSEGV and SIGBUS: Rust's, then `generator`'s.
    struct Saved {
        rust: [libc::sigaction; 2],
        generator: [libc::sigaction; 2],
    }

    static SAVED: OnceLock<Saved> = OnceLock::new();
    const SIGNALS: [libc::c_int; 2] = [libc::SIGSEGV, libc::SIGBUS];

    fn current(signal: libc::c_int) -> libc::sigaction {
        // SAFETY: reads the action into a zeroed struct; changes nothing.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut action);
            action
        }
    }

    pub fn before_loom() {
        SAVED.get_or_init(|| {
            let rust = SIGNALS.map(current);
            // Any model starts a coroutine, and so installs generator's
            // handlers.
            loom::model(|| {});
            let generator = SIGNALS.map(current);
            Saved { rust, generator }
        });
        // After `SAVED` is set: `dispatch` reads it.
        install();
    }

    fn install() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            for signal in SIGNALS {
                // SAFETY: installs `dispatch` with the flags Rust's and
                // generator's handlers use (SA_SIGINFO, SA_ONSTACK: it runs
                // on the thread's alternate signal stack).
                unsafe {
                    let mut action: libc::sigaction = std::mem::zeroed();
                    action.sa_sigaction = dispatch as *const () as libc::sighandler_t;
                    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                    libc::sigemptyset(&mut action.sa_mask);
                    libc::sigaction(signal, &action, std::ptr::null_mut());
                }
            }
        });
    }

    /// Runs `explore` with this thread marked as exploring a model.
    pub fn in_model<R>(explore: impl FnOnce() -> R) -> R {
        struct Unmark;
        impl Drop for Unmark {
            fn drop(&mut self) {
                IN_MODEL.with(|m| m.set(false));
            }
        }
        IN_MODEL.with(|m| m.set(true));
        let _unmark = Unmark;
        explore()
    }

    extern "C" fn dispatch(
        signal: libc::c_int,
        info: *mut libc::siginfo_t,
        context: *mut libc::c_void,
    ) {
        let Some(saved) = SAVED.get() else { return };
        let which = usize::from(signal == libc::SIGBUS);
        let in_model = IN_MODEL.try_with(Cell::get).unwrap_or(false);
        let action = if in_model {
            &saved.generator[which]
        } else {
            &saved.rust[which]
        };
        let handler = action.sa_sigaction;
        if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
            // The fault happens again on return, with the default action:
            // the process ends by this signal.
            // SAFETY: sigaction is async-signal-safe.
            unsafe { libc::sigaction(signal, action, std::ptr::null_mut()) };
        } else if action.sa_flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the handler was installed with SA_SIGINFO, so it takes
            // these three arguments.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        } else {
            // SAFETY: installed without SA_SIGINFO: it takes the signal alone.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
    }
}

#[cfg(not(unix))]
mod imp {
    pub fn before_loom() {}

    pub fn in_model<R>(explore: impl FnOnce() -> R) -> R {
        explore()
    }
}

/// Installs the dispatcher (once; the first call runs an empty loom model).
/// Call before a thread explores a model.
pub use imp::before_loom;

/// Runs `explore`, which runs loom models on this thread, with faults on
/// this thread sent to loom's coroutine handler.
pub use imp::in_model;

#[cfg(all(test, unix))]
mod tests {
    /// After a loom model, an ordinary thread's overflow still ends with
    /// Rust's message naming the thread (and SIGABRT), not a silent SIGSEGV.
    #[test]
    fn an_overflow_after_loom_is_reported_by_rust() {
        const PROBE: &str = "KATA_SIGNALS_PROBE";
        if std::env::var_os(PROBE).is_some() {
            super::before_loom();
            crate::scenarios::explore_with("an empty model".into(), || None).unwrap();
            #[inline(never)]
            fn deep(n: u64) -> u64 {
                let buf = [n; 64];
                if n == 0 {
                    std::hint::black_box(buf)[3]
                } else {
                    deep(n - 1) + std::hint::black_box(buf)[1]
                }
            }
            std::thread::Builder::new()
                .name("the overflowing thread".into())
                .stack_size(256 << 10)
                .spawn(|| deep(std::hint::black_box(u64::MAX)))
                .unwrap()
                .join()
                .unwrap();
            return;
        }
        // This unit test's name, without the crate's.
        let name = concat!(
            module_path!(),
            "::an_overflow_after_loom_is_reported_by_rust"
        );
        let (output, stopped) = crate::run::run_alone(
            name.split_once("::").map_or(name, |(_, test)| test),
            PROBE,
            std::time::Duration::from_secs(60),
        );
        assert!(!stopped, "{output}");
        assert!(
            output.contains("thread 'the overflowing thread'")
                && output.contains("has overflowed its stack"),
            "the overflow was not reported by Rust:\n{output}"
        );
    }
}
