//! Runs a lesson's test binary as a child process and reads its results:
//! what the self-check (and the runner) build on.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What kind of check a test is and the tier it runs in, read from the
/// module of its group: the catalog's list, which the harness keeps to.
pub use kata_catalog::groups::{Check, Tier};

/// The results of one run of a lesson's tests.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Each test's name and whether it passed; empty if the binary did not run.
    pub tests: Vec<(String, bool)>,
    /// Each failed test's output (what it printed, and its panic), in the
    /// order the tests ended.
    pub failures: Vec<Failure>,
    /// Whether the binary ran to its summary (it built and ran).
    pub ran: bool,
    /// Whether the run was stopped after [`run_limit`].
    pub timed_out: bool,
    /// How the test binary crashed, if it did: the signal that ended it and
    /// the tests it had started and not finished.
    pub crash: Option<String>,
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
    pub fn failed_checks(&self) -> Vec<Check> {
        let mut kinds: Vec<Check> = self.failed().map(Check::of).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }
}

/// A failed check: its name and what it printed (its panic's message
/// included), as the lesson's test binary wrote it to `KATA_RESULTS`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    pub name: String,
    pub output: String,
}

/// What a lesson's test binary wrote to the file `KATA_RESULTS` names, a
/// JSON line per event (see `kata::trial`).
#[derive(Debug, Default)]
struct Results {
    tests: Vec<(String, bool)>,
    failures: Vec<Failure>,
    /// The checks started and not ended, in the order they started.
    running: Vec<String>,
    /// Whether the binary wrote its summary.
    done: bool,
}

impl Results {
    fn read(file: &Path) -> Results {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        Results::parse(&text)
    }

    fn parse(text: &str) -> Results {
        let mut results = Results::default();
        for line in text.lines() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            let name = event["name"].as_str().unwrap_or_default().to_string();
            match event["event"].as_str() {
                Some("started") => results.running.push(name),
                Some(verdict @ ("ok" | "failed")) => {
                    results.running.retain(|n| *n != name);
                    if verdict == "failed" {
                        results.failures.push(Failure {
                            name: name.clone(),
                            output: event["output"].as_str().unwrap_or_default().to_string(),
                        });
                    }
                    results.tests.push((name, verdict == "ok"));
                }
                Some("done") => results.done = true,
                _ => {}
            }
        }
        results
    }

    /// A fresh file for one run's results: named by this process, the run
    /// and the time, and emptied of what a run stopped before it could
    /// remove its file left under that name.
    fn file() -> PathBuf {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let file = std::env::temp_dir().join(format!(
            "kata-results-{}-{n}-{now}.jsonl",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&file);
        file
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

/// What the learner's builds leave out: the gallery's mistakes, which only
/// the self-check runs. A test binary without them is compiled again in a
/// second after an edit, not in several (the self-check's builds, which
/// keep them, are its own: switching between the two rebuilds once).
pub const MISTAKES: (&str, &str) = ("KATA_MISTAKES", "off");

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
    let file = Results::file();
    let mut command = Command::new(cargo());
    command
        .current_dir(root)
        .args([
            "test", "--quiet", "--test", lesson, "--", "--format", "pretty",
        ])
        .args(test_args)
        .env("KATA_RESULTS", &file)
        .env("KATA_SUBJECT", subject)
        .env(MISTAKES.0, MISTAKES.1)
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
    let results = Results::read(&file);
    let _ = std::fs::remove_file(&file);
    Outcome {
        tests: results.tests,
        failures: tidy(results.failures, root),
        ran: results.done,
        timed_out,
        crash: None,
        output,
        took,
    }
}

/// The failures' outputs with the lesson files named as learners see them,
/// relative to the kata's root.
fn tidy(failures: Vec<Failure>, root: &Path) -> Vec<Failure> {
    let prefix = format!("{}/", root.display());
    failures
        .into_iter()
        .map(|f| Failure {
            output: f.output.replace(&prefix, ""),
            ..f
        })
        .collect()
}

/// The lessons' test binaries, built once (`cargo test --no-run`), so that
/// each run starts the binary itself rather than cargo.
pub struct Binaries {
    pub by_lesson: std::collections::BTreeMap<String, PathBuf>,
}

impl Binaries {
    /// Builds the lessons' tests exactly as `cargo test --test <lesson>`
    /// does from `root` (default members selected: another selection
    /// unifies features differently and builds every lesson again), and
    /// finds each lesson's binary. The compiler's errors are the `Err`.
    pub fn build(root: &Path, lessons: &[String]) -> Result<Binaries, String> {
        let selection: Vec<&str> = lessons
            .iter()
            .flat_map(|l| ["--test", l.as_str()])
            .collect();
        let by_lesson = build_tests(root, &selection)?;
        match lessons.iter().find(|l| !by_lesson.contains_key(*l)) {
            Some(missing) => Err(format!("cargo built no test binary for {missing}")),
            None => Ok(Binaries { by_lesson }),
        }
    }
}

/// Builds one lesson's test binary exactly as `cargo test --test <lesson>`
/// does from `root`, and finds it. The `Err` is what the build printed (the
/// compiler's errors, named relative to `root`, for
/// [`crate::runner::compiler_errors`]), or that it did not finish within
/// [`run_limit`].
pub fn build_lesson(root: &Path, lesson: &str) -> Result<PathBuf, String> {
    let mut command = Command::new(cargo());
    command
        .current_dir(root)
        .args([
            "test",
            "--quiet",
            "--no-run",
            "--message-format=json-render-diagnostics",
            "--test",
            lesson,
        ])
        .env(MISTAKES.0, MISTAKES.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let seen = match command.spawn() {
        Ok(child) => kata::watchdog::collect_until(child, run_limit(), |_, _| false),
        Err(e) => return Err(format!("could not start cargo: {e}")),
    };
    let printed = seen.stderr.replace(&format!("{}/", root.display()), "");
    if seen.timed_out {
        return Err(format!(
            "{printed}\nstopped: building the tests of {lesson} did not finish within {} s",
            run_limit().as_secs()
        ));
    }
    let built = seen.stdout.lines().find_map(|line| {
        let message = serde_json::from_str::<serde_json::Value>(line).ok()?;
        let target = &message["target"];
        let ours = target["name"] == lesson
            && target["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "test"));
        ours.then(|| message["executable"].as_str().map(PathBuf::from))
            .flatten()
    });
    match built {
        Some(exe) if !printed.lines().any(|l| l.starts_with("error")) => Ok(exe),
        _ if printed.trim().is_empty() => Err(format!("cargo built no test binary for {lesson}")),
        _ => Err(printed),
    }
}

/// Builds the test targets `selection` names (`cargo test --no-run` with
/// those arguments, from `root`) and finds each one's binary, by target
/// name. The compiler's errors are the `Err`.
pub fn build_tests(
    root: &Path,
    selection: &[&str],
) -> Result<std::collections::BTreeMap<String, PathBuf>, String> {
    let out = Command::new(cargo())
        .current_dir(root)
        .args(["test", "--quiet", "--no-run", "--message-format=json"])
        .args(selection)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not start cargo: {e}"))?;
    let mut by_target = std::collections::BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let target = &message["target"];
        let is_test = target["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "test"));
        if let (Some(name), Some(exe), true) = (
            target["name"].as_str(),
            message["executable"].as_str(),
            is_test,
        ) {
            by_target.insert(name.to_string(), PathBuf::from(exe));
        }
    }
    if !out.status.success() {
        return Err(format!(
            "`cargo test --no-run {}` failed; see the errors above",
            selection.join(" ")
        ));
    }
    Ok(by_target)
}

/// The tests of a test binary that run by default (not ignored), by name
/// (it starts them tier by tier, each tier by name).
pub fn list(exe: &Path) -> Result<Vec<String>, String> {
    let names = |ignored: bool| -> Result<Vec<String>, String> {
        let out = Command::new(exe)
            .args(["--list", "--format", "terse"])
            .args(ignored.then_some("--ignored"))
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("could not start {}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} --list failed: {}",
                exe.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_suffix(": test"))
            .map(str::to_string)
            .collect())
    };
    let ignored = names(true)?;
    Ok(names(false)?
        .into_iter()
        .filter(|t| !ignored.contains(t))
        .collect())
}

/// How far a run of a test binary goes.
pub enum Until<'a> {
    /// Every selected test, each test's output captured and shown once at
    /// the end, as `cargo test` shows it.
    End,
    /// Until one test has failed and the output shows each of these texts:
    /// the tests print as they go (`--nocapture`), and the binary is
    /// stopped then.
    Caught(&'a [String]),
}

/// The test threads of a run: at least two, so that the binary writes each
/// result's line when the test ends, one line per test, as libtest does
/// with more than one thread (the results themselves are read from
/// `KATA_RESULTS`).
pub fn test_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
}

/// Runs the test binary `exe` of a lesson with `KATA_SUBJECT=<subject>`:
/// the tests named in `only` (all of them if `None`), as far as `until`
/// says. Snapshots are never written and backtraces are off. A run past
/// [`run_limit`] is killed; a run that ends by a signal is a crash, named
/// with the signal and the tests that were running.
pub fn run_binary(
    root: &Path,
    exe: &Path,
    subject: &str,
    only: Option<&[String]>,
    until: Until,
) -> Outcome {
    run_binary_unless(root, exe, subject, only, until, test_threads(), &|| false)
}

/// [`run_binary`] on `threads` test threads (at least two: see
/// [`test_threads`]), stopped as soon as `unwanted()` says yes (asked at
/// least every 200 ms): a staged run's later stage, after an earlier one
/// failed.
pub fn run_binary_unless(
    root: &Path,
    exe: &Path,
    subject: &str,
    only: Option<&[String]>,
    until: Until,
    threads: usize,
    unwanted: &(dyn Fn() -> bool + Sync),
) -> Outcome {
    let started = Instant::now();
    let file = Results::file();
    let threads = threads.max(2);
    let mut command = Command::new(exe);
    command
        .current_dir(root)
        .args(["--format", "pretty", "--test-threads", &threads.to_string()])
        .env("KATA_RESULTS", &file)
        .env("KATA_SUBJECT", subject)
        .env("INSTA_UPDATE", "no")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(names) = only {
        command.arg("--exact").args(names);
    }
    let shows: &[String] = match until {
        Until::End => &[],
        Until::Caught(shows) => {
            command.arg("--nocapture");
            shows
        }
    };
    let stop_when_caught = matches!(until, Until::Caught(_));
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let seen = match command.spawn() {
        Ok(child) => kata::watchdog::collect_until(child, run_limit(), |out, err| {
            unwanted()
                || stop_when_caught
                    && !Results::read(&file).failures.is_empty()
                    && shows
                        .iter()
                        .all(|want| out.contains(want.as_str()) || err.contains(want.as_str()))
        }),
        Err(e) => kata::watchdog::Collected {
            stderr: format!("could not start {}: {e}", exe.display()),
            ..Default::default()
        },
    };
    let took = started.elapsed();
    let output = seen.output().replace(&format!("{}/", root.display()), "");
    let results = Results::read(&file);
    let _ = std::fs::remove_file(&file);
    let crash = seen.signal.map(|signal| {
        format!(
            "crashed: the test binary was ended by signal {} while running {}",
            kata::watchdog::signal_name(signal),
            if results.running.is_empty() {
                "no test (before the first or after the last)".to_string()
            } else {
                results.running.join(", ")
            }
        )
    });
    let mut output = output;
    if seen.timed_out {
        output.push_str(&format!(
            "\nstopped: the tests did not finish within {} s",
            run_limit().as_secs()
        ));
    }
    if let Some(crash) = &crash {
        output.push_str(&format!("\n{crash}"));
    }
    let ran = seen.stopped || results.done;
    Outcome {
        tests: results.tests,
        failures: tidy(results.failures, root),
        ran: ran && crash.is_none(),
        timed_out: seen.timed_out,
        crash,
        output,
        took,
    }
}

/// An example's name as words: `case_03_a_window_of_u64_max` → `a window
/// of u64 max`, and a possessive written as one (`a_new_key_s_bucket` → `a
/// new key's bucket`), since a test's name cannot hold an apostrophe.
pub fn readable_example(name: &str) -> String {
    let readable = name.split_once('_').map_or(name, |(_, rest)| rest);
    let readable = readable.split_once('_').map_or(readable, |(n, rest)| {
        if n.chars().all(|c| c.is_ascii_digit()) {
            rest
        } else {
            readable
        }
    });
    let words: Vec<&str> = readable.split('_').collect();
    let mut out = String::new();
    for (i, word) in words.iter().enumerate() {
        // `limiter_s_wait`, not `2_s` (seconds).
        let after_a_word = i > 0 && words[i - 1].chars().any(|c| c.is_ascii_alphabetic());
        if *word == "s" && after_a_word {
            out.push_str("'s");
        } else {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_example_reads_as_words_with_its_possessives() {
        assert_eq!(
            readable_example("case_03_a_window_of_u64_max"),
            "a window of u64 max"
        );
        assert_eq!(
            readable_example("case_1_a_new_key_s_bucket_is_full"),
            "a new key's bucket is full"
        );
        assert_eq!(
            readable_example("case_02_retry_after_is_the_limiter_s_wait_even_past_the_window"),
            "retry after is the limiter's wait even past the window"
        );
        assert_eq!(readable_example("case_04_a_wait_of_2_s"), "a wait of 2 s");
    }

    /// A stand-in for a test binary: lists three tests, passes the first
    /// and dies by SIGSEGV.
    #[cfg(unix)]
    fn crashing_binary() -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("kata-suite-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("lesson_99");
        std::fs::write(
            &exe,
            "#!/bin/sh\n\
             case \"$*\" in\n\
             *--ignored*) exit 0 ;;\n\
             *--list*) printf 'a: test\\nb: test\\nc: test\\n'; exit 0 ;;\n\
             esac\n\
             r() { echo \"{\\\"event\\\":\\\"$1\\\",\\\"name\\\":\\\"$2\\\"}\" >> \"$KATA_RESULTS\"; }\n\
             r started a; echo 'test a ... ok'; r ok a; r started b; r started c\n\
             kill -SEGV $$\n",
        )
        .unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        exe
    }

    #[test]
    #[cfg(unix)]
    fn a_crash_is_named_with_its_signal_and_the_tests_running() {
        let exe = crashing_binary();
        for until in [Until::End, Until::Caught(&[])] {
            let outcome = run_binary(Path::new("."), &exe, "reference", None, until);
            let crash = outcome.crash.clone().expect("a crash");
            assert!(
                crash.contains("signal 11 (SIGSEGV) while running b, c"),
                "{crash}"
            );
            assert!(
                !outcome.ran && outcome.output.contains(&crash),
                "{outcome:?}"
            );
            assert_eq!(outcome.tests, [("a".to_string(), true)]);
        }
        let _ = std::fs::remove_dir_all(exe.parent().unwrap());
    }

    #[test]
    fn results_are_read_from_the_binary_s_json_lines() {
        let text = "{\"event\":\"started\",\"name\":\"a\"}\n\
                    {\"event\":\"started\",\"name\":\"b\"}\n\
                    {\"event\":\"ok\",\"name\":\"a\",\"output\":\"\"}\n\
                    not a line of ours\n\
                    {\"event\":\"failed\",\"name\":\"b\",\"output\":\"boom\\n\"}\n\
                    {\"event\":\"started\",\"name\":\"c\"}\n";
        let results = Results::parse(text);
        assert_eq!(
            results.tests,
            [("a".to_string(), true), ("b".to_string(), false)]
        );
        assert_eq!(results.failures[0].output, "boom\n");
        assert_eq!(results.running, ["c"]);
        assert!(!results.done);
        assert!(Results::parse(&format!("{text}{{\"event\":\"done\"}}")).done);
    }
}
