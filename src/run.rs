//! How a check runs what it tries, whatever the kind: a property's cases,
//! drawn with a fixed seed and each on a watched thread, and a test of this
//! binary run again alone, in a child process.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proptest::test_runner::{
    Config as PropConfig, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner,
};

use crate::render::call;
use crate::timeline::Timeline;
use crate::watchdog::{time_limit, watched, Stop};

/// Runs the test named `test` (`property::stays_quick_after_idle_gaps`, as
/// [`crate::trial::name`] gives it) of this test binary again, alone, in a child
/// process with `probe` set in its environment, and stops it (its whole
/// process group) after `limit`. Returns what it printed and whether it was
/// stopped. For checks that must not share the process: a loop with no
/// lock or atomic in it cannot be stopped any other way, and bytes held
/// are only the subject's when no other test runs.
pub fn run_alone(test: &str, probe: &str, limit: Duration) -> (String, bool) {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let mut command = std::process::Command::new(exe);
    command
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(probe, "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    // Tied to this process: a run of the tests stopped from outside stops it too.
    let child = crate::watchdog::spawn_tied(command).expect("the test binary starts again");
    crate::watchdog::collect(child, limit)
}

/// A failing case of a property: its message, the value, and whether it
/// hung (then it was neither shrunk nor run again).
pub struct Failed<T> {
    pub reason: String,
    pub value: T,
    pub hung: bool,
}

/// Runs one property: `cases` values of `strategy` drawn with a fixed seed
/// (deterministic runs), each checked on a watched thread, shrunk by
/// proptest at most `max_shrink_iters` times. A case that hangs is reported
/// at once: later cases pass untried, so shrinking stops at the value that
/// hung instead of hanging again. `describe(value, i)` names the `i`th
/// request of a value, for a hang's message. `subject` names whose
/// panic or hang a failure is (`your limiter`, `mistake <name>`).
pub fn run_cases<T: std::fmt::Debug + Clone + Send + 'static>(
    subject: impl std::fmt::Display,
    cases: u32,
    max_shrink_iters: u32,
    strategy: &impl proptest::strategy::Strategy<Value = T>,
    describe: fn(&T, usize) -> String,
    check: impl Fn(&T) -> Result<(), String> + Clone + Send + 'static,
) -> Result<(), Failed<T>> {
    let config = PropConfig {
        cases,
        failure_persistence: None,
        max_shrink_iters,
        ..PropConfig::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
    let hung = Arc::new(AtomicBool::new(false));
    let result = runner.run(strategy, |value| {
        if hung.load(Ordering::Relaxed) {
            return Ok(());
        }
        let (v, check) = (value.clone(), check.clone());
        match watched(time_limit(), |i| describe(&value, i), move || check(&v)) {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(TestCaseError::fail(message)),
            Err(Stop::Panicked(message)) => {
                Err(TestCaseError::fail(format!("{subject} {message}")))
            }
            Err(Stop::Hung(message)) => {
                hung.store(true, Ordering::Relaxed);
                Err(TestCaseError::fail(format!("{subject} {message}")))
            }
        }
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, value)) => Err(Failed {
            reason: reason.to_string(),
            value,
            hung: hung.load(Ordering::Relaxed),
        }),
        Err(TestError::Abort(reason)) => panic!("a property could not run: {reason}"),
    }
}

/// `request #3 check("a", 999ns)`: the `i`th request, for hang reports. A probe
/// replays the timeline and adds requests of its own past its end.
pub fn nth_request(timeline: &Timeline, i: usize) -> String {
    timeline
        .requests
        .get(i)
        .map(|r| format!("request #{} {}", i + 1, call(&r.key, r.now)))
        .unwrap_or_else(|| "an extra request of a replay".into())
}
