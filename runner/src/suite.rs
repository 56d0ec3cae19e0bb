//! Runs a lesson's test binary as a child process and reads its results:
//! what the self-check (and the runner) build on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What kind of check a test is, read from its name.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Kind {
    Example,
    Config,
    Property,
    Snapshot,
    Loom,
    /// A real server on a loopback port and a real client (lesson 07 on).
    EndToEnd,
    /// App servers' Redis commands in every order (lesson 08).
    Race,
    /// A Redis server paused, killed, restarted or cut off (lesson 08).
    Fault,
    /// A source check (`uses_only_…`, `compiles_…`): what the file may use
    /// and how its types are bounded; not behavioural.
    Source,
}

impl Kind {
    /// A test's kind, from the first part of its path that names one (a
    /// lesson that runs the shared checks once per rule puts them in a
    /// module per rule: `gcra::configuration::case_1`).
    pub fn of(test: &str) -> Kind {
        let any = |prefix: &str| test.split("::").any(|part| part.starts_with(prefix));
        if test.starts_with("examples::") {
            Kind::Example
        } else if any("configuration") {
            Kind::Config
        } else if any("timeline_") {
            Kind::Snapshot
        } else if any("loom_") {
            Kind::Loom
        } else if any("race_") {
            Kind::Race
        } else if any("fault_") {
            Kind::Fault
        } else if any("end_to_end") {
            Kind::EndToEnd
        } else if any("uses_only_") || any("compiles_") {
            Kind::Source
        } else {
            Kind::Property
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Example => "example",
            Kind::Config => "config",
            Kind::Property => "property",
            Kind::Snapshot => "snapshot",
            Kind::Loom => "loom",
            Kind::EndToEnd => "end-to-end",
            Kind::Race => "race",
            Kind::Fault => "fault",
            Kind::Source => "source",
        }
    }

    /// Whether the test exercises the limiter's behaviour (every kind but the
    /// source check, which a stub passes by design).
    pub fn behavioural(self) -> bool {
        self != Kind::Source
    }
}

/// The results of one run of a lesson's tests.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Each test's name and whether it passed; empty if the binary did not run.
    pub tests: Vec<(String, bool)>,
    /// Whether libtest printed its summary (the binary built and ran).
    pub ran: bool,
    /// Whether the run was stopped after [`run_limit`].
    pub timed_out: bool,
    pub output: String,
    pub took: Duration,
}

impl Outcome {
    pub fn failed(&self) -> impl Iterator<Item = &str> {
        self.tests
            .iter()
            .filter(|(_, ok)| !ok)
            .map(|(n, _)| n.as_str())
    }

    /// The kinds of check among the failed tests, each once, in order.
    pub fn failed_kinds(&self) -> Vec<Kind> {
        let mut kinds: Vec<Kind> = self.failed().map(Kind::of).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

/// The cargo that runs us, or `cargo` from the PATH.
pub fn cargo() -> PathBuf {
    std::env::var_os("CARGO")
        .map(PathBuf::from)
        .unwrap_or_else(|| "cargo".into())
}

/// How long one run of a lesson's tests, build included, may take
/// (`KATA_RUN_LIMIT_SECS`, default 600). The tests stop a learner's hang
/// themselves; this is for what they cannot stop.
pub fn run_limit() -> Duration {
    let secs = std::env::var("KATA_RUN_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// Runs `cargo test --test <lesson>` in `root` with `KATA_SUBJECT=<subject>`.
/// Snapshots are never written (`INSTA_UPDATE=no`) and backtraces are off, so a
/// wrong subject leaves nothing behind. A run past [`run_limit`] is killed.
pub fn run(root: &Path, lesson: &str, subject: &str) -> Outcome {
    run_with(root, lesson, subject, &[], &[])
}

/// [`run`], with further arguments for the test binary and further
/// environment variables.
pub fn run_with(
    root: &Path,
    lesson: &str,
    subject: &str,
    test_args: &[&str],
    env: &[(&str, &str)],
) -> Outcome {
    let started = Instant::now();
    let mut command = Command::new(cargo());
    command
        .current_dir(root)
        .args([
            "test", "--quiet", "--test", lesson, "--", "--format", "pretty",
        ])
        .args(test_args)
        .env("KATA_SUBJECT", subject)
        .env("INSTA_UPDATE", "no")
        .env("RUST_BACKTRACE", "0")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so that a run past the limit can be stopped
    // whole: cargo and the test binary it started.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let (output, timed_out) = match command.spawn() {
        Ok(child) => kata::watchdog::collect(child, run_limit()),
        Err(e) => (format!("could not start cargo: {e}"), false),
    };
    let took = started.elapsed();
    // The lesson files are compiled in by absolute path: name them as
    // learners see them, relative to the kata's root.
    let output = output.replace(&format!("{}/", root.display()), "");
    let output = if timed_out {
        format!(
            "{output}\nstopped: `cargo test --test {lesson}` did not finish within {} s",
            run_limit().as_secs()
        )
    } else {
        output
    };
    let tests = output
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("test ")?;
            let (name, verdict) = rest.rsplit_once(" ... ")?;
            match verdict.trim() {
                "ok" => Some((name.to_string(), true)),
                "FAILED" => Some((name.to_string(), false)),
                _ => None,
            }
        })
        .collect();
    let ran = output.lines().any(|l| l.starts_with("test result:"));
    Outcome {
        tests,
        ran,
        timed_out,
        output,
        took,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_names() {
        assert_eq!(Kind::of("examples::case_1_x"), Kind::Example);
        assert_eq!(Kind::of("configuration::case_2_zero_limit"), Kind::Config);
        assert_eq!(Kind::of("timeline_two_keys"), Kind::Snapshot);
        assert_eq!(Kind::of("loom_new_key"), Kind::Loom);
        assert_eq!(Kind::of("end_to_end_over_loopback"), Kind::EndToEnd);
        assert_eq!(Kind::of("compiles_over_any_limiter"), Kind::Source);
        assert_eq!(Kind::of("keeps_the_limit"), Kind::Property);
        assert_eq!(
            Kind::of("gcra::configuration::case_1_zero_limit"),
            Kind::Config
        );
        assert_eq!(Kind::of("gcra::keeps_the_limit"), Kind::Property);
        assert_eq!(Kind::of("race_burst_at_one_instant"), Kind::Race);
        assert_eq!(Kind::of("fault_server_paused"), Kind::Fault);
        assert!(!Kind::of("uses_only_the_sync_facade").behavioural());
    }
}
