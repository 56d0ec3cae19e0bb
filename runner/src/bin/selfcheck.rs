//! The kata checks itself: every lesson's suite must pass the reference and
//! the correct alternatives, fail every behavioural test of the stub
//! (`lessons/stubs/`, whatever the learner file holds now), and catch every
//! mistake of the gallery.
//!
//! `cargo run --bin selfcheck` (all lessons) or `cargo run --bin selfcheck -- 2 3`.
//! Prints a table (lesson × subject → verdict, with each row's time), the
//! slowest rows, and ends with `N passed, N failed`; exits non-zero if
//! anything failed.
//!
//! A reference, an alternative and the stub run the whole suite. A mistake
//! runs its quick checks first ([`Check::quick`]), then the others, and
//! stops as soon as one check failed and the output shows the mistake's
//! `Shows:` lines: one failing check with its message proves it caught. A
//! test binary that ends by a signal is a crash, and a failure whatever was
//! expected.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{Command, ExitCode};
use std::time::Instant;

use kata_catalog::{Catalog, Lesson};
use kata_runner::suite::{self, Binaries, Check, Outcome, Until};

/// What a subject must do to the suite.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Every test passes: the reference and the correct alternatives.
    Pass,
    /// Every behavioural test fails: the stub.
    FailAll,
    /// At least one test fails (a source check counts): a mistake.
    Caught,
}

struct Row {
    lesson: String,
    subject: String,
    ok: bool,
    detail: String,
    seconds: f64,
}

fn judge(expect: Expect, outcome: &Outcome) -> (bool, String) {
    if let Some(crash) = &outcome.crash {
        return (false, crash.clone());
    }
    if outcome.timed_out {
        return (
            false,
            format!(
                "stopped after {} s (KATA_RUN_LIMIT_SECS)",
                suite::run_limit().as_secs()
            ),
        );
    }
    if !outcome.ran {
        let why = outcome
            .output
            .lines()
            .find(|l| l.contains("error") || l.contains("names no implementation"))
            .unwrap_or("no test ran");
        return (false, format!("did not run: {why}"));
    }
    if outcome
        .output
        .contains("names no implementation of this lesson")
    {
        return (
            false,
            "KATA_SUBJECT was refused: not compiled into the tests".into(),
        );
    }
    let total = outcome.tests.len();
    let behavioural = outcome
        .tests
        .iter()
        .filter(|(n, _)| Check::of(n).behavioural())
        .count();
    let kinds = outcome.failed_checks();
    let kind_names = kinds
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ");
    match expect {
        Expect::Pass => {
            let failed: Vec<&str> = outcome.failed().collect();
            if failed.is_empty() && total > 0 {
                (true, format!("passed all {total} tests"))
            } else {
                (
                    false,
                    format!(
                        "{} of {total} tests failed: {}",
                        failed.len(),
                        failed.join(", ")
                    ),
                )
            }
        }
        Expect::FailAll => {
            let passing: Vec<&str> = outcome
                .tests
                .iter()
                .filter(|(n, ok)| *ok && Check::of(n).behavioural())
                .map(|(n, _)| n.as_str())
                .collect();
            if passing.is_empty() && behavioural > 0 {
                (true, format!("fails all {behavioural} behavioural tests"))
            } else {
                (
                    false,
                    format!("passes behavioural tests: {}", passing.join(", ")),
                )
            }
        }
        // A source check counts: what it rejects (a real clock, per-thread
        // state, an ordering std rejects) no run of the tests may show.
        Expect::Caught => {
            let failed = outcome.failed().count();
            if failed > 0 {
                (
                    true,
                    format!("caught by {kind_names} ({failed} of {total} tests run)"),
                )
            } else {
                (false, format!("NOT caught: passes all {total} tests"))
            }
        }
    }
}

fn subjects(lesson: &Lesson) -> Vec<(String, Expect)> {
    let mut list = vec![
        ("reference".to_string(), Expect::Pass),
        ("stub".to_string(), Expect::FailAll),
    ];
    list.extend(
        lesson
            .mistakes
            .iter()
            .map(|m| (format!("mistake:{}", m.name), Expect::Caught)),
    );
    list.extend(
        lesson
            .alternatives
            .iter()
            .map(|a| (format!("alternative:{}", a.name), Expect::Pass)),
    );
    list
}

/// Runs a mistake's quick checks, then, unless one of them caught it, all
/// the others in one run (tier by tier, as many at once as there are
/// cores); stops as soon as a check has failed and the output shows every
/// text of `shows`. The outcome gathers both runs.
fn until_caught(
    root: &Path,
    exe: &Path,
    subject: &str,
    shows: &[String],
    threads: usize,
) -> Outcome {
    let tests = suite::list(exe).unwrap_or_default();
    let mut all: Option<Outcome> = None;
    for quick in [true, false] {
        let names: Vec<String> = tests
            .iter()
            .filter(|t| Check::of(t).quick() == quick)
            .cloned()
            .collect();
        if names.is_empty() {
            continue;
        }
        let run = suite::run_binary_unless(
            root,
            exe,
            subject,
            Some(&names),
            Until::Caught(shows),
            threads,
            &|| false,
        );
        let so_far = match all.take() {
            None => run,
            Some(mut so_far) => {
                so_far.tests.extend(run.tests);
                so_far.failures.extend(run.failures);
                so_far.output.push_str(&run.output);
                so_far.took += run.took;
                so_far.ran &= run.ran;
                so_far.timed_out |= run.timed_out;
                so_far.crash = so_far.crash.or(run.crash);
                so_far
            }
        };
        let done = so_far.crash.is_some()
            || so_far.timed_out
            || !so_far.ran
            || (so_far.failed().next().is_some()
                && shows.iter().all(|w| so_far.output.contains(w.as_str())));
        all = Some(so_far);
        if done {
            break;
        }
    }
    all.unwrap_or_else(|| {
        let until = Until::Caught(shows);
        suite::run_binary_unless(root, exe, subject, None, until, threads, &|| false)
    })
}

/// The integration tests run beside the lessons: each row's name, its
/// package and its test target.
const BESIDE: [(&str, &str, &str); 2] = [
    (
        "runner (cargo test -p kata-runner --test runner)",
        "kata-runner",
        "runner",
    ),
    (
        "class view (cargo test -p kata-class --test class)",
        "kata-class",
        "class",
    ),
];

/// A row for a run of the crates' own tests; their output is shown when
/// they fail.
fn harness_row(what: &str, run: std::io::Result<std::process::Output>, seconds: f64) -> Row {
    let ok = matches!(&run, Ok(out) if out.status.success());
    if let (false, Ok(out)) = (ok, &run) {
        eprintln!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Row {
        lesson: "harness".into(),
        subject: what.into(),
        ok,
        detail: match run {
            Ok(out) if out.status.success() => "passed".into(),
            Ok(out) => format!("failed ({}), output above", out.status),
            Err(e) => format!("could not run: {e}"),
        },
        seconds,
    }
}

fn progress(done: usize, total: usize, what: &str) {
    let mut err = std::io::stderr();
    if err.is_terminal() {
        let width = 30;
        let filled = width * done / total.max(1);
        let _ = write!(
            err,
            "\r\x1b[2K[{}{}] {done}/{total} {what}",
            "#".repeat(filled),
            "-".repeat(width - filled)
        );
    } else {
        let _ = writeln!(err, "[{done}/{total}] {what}");
    }
    let _ = err.flush();
}

fn main() -> ExitCode {
    // The kata is the folder above this crate (`runner/`).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = &root.canonicalize().unwrap_or(root);
    let wanted: Vec<u32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let catalog = match Catalog::load(root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };
    let lessons: Vec<Lesson> = catalog
        .lessons
        .into_iter()
        .filter(|l| wanted.is_empty() || wanted.contains(&l.number))
        .collect();
    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();

    eprintln!("building the harness and every lesson's tests ...");
    // The crates' own unit tests (the catalog's include every file's
    // agreement with lessons/lessons.toml; the bench's, lessons 05 and 06
    // answering as governor does).
    let started_unit = Instant::now();
    let unit = Command::new(suite::cargo())
        .current_dir(root)
        .args(["test", "--quiet", "--lib"])
        .args([
            "-p",
            "kata-catalog",
            "-p",
            "kata-harness",
            "-p",
            "kata-runner",
            "-p",
            "kata-class",
            "-p",
            "ratelimit-kata-bench",
        ])
        .env("RUST_BACKTRACE", "0")
        .output();
    rows.push(harness_row(
        "unit tests (catalog, harness, runner, class view, bench: governor's answers)",
        unit,
        started_unit.elapsed().as_secs_f64(),
    ));
    // Built exactly as `cargo test --test …` builds them, then run directly.
    let names: Vec<String> = lessons.iter().map(Lesson::name).collect();
    let binaries = match Binaries::build(root, &names) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            println!("0 passed, 1 failed");
            return ExitCode::FAILURE;
        }
    };

    // Every check of a lesson with milestones belongs to one, and every
    // pattern of its milestones takes a check.
    for lesson in lessons.iter().filter(|l| !l.milestones.is_empty()) {
        let exe = &binaries.by_lesson[&lesson.name()];
        let (ok, detail) = match suite::list(exe) {
            Ok(tests) => {
                let problems = kata_runner::runner::milestone_problems(&lesson.milestones, &tests);
                (
                    problems.is_empty(),
                    if problems.is_empty() {
                        format!(
                            "{} checks in {} milestones",
                            tests.len(),
                            lesson.milestones.len()
                        )
                    } else {
                        problems.join("; ")
                    },
                )
            }
            Err(e) => (false, e),
        };
        rows.push(Row {
            lesson: lesson.name(),
            subject: "milestones (lessons/lessons.toml)".into(),
            ok,
            detail,
            seconds: 0.0,
        });
    }

    // The runner driven on its fixtures, and the class view on its own,
    // built here and run one after the other beside the lessons that need
    // no server (their checks have no tight time limits), from their
    // binaries (a cargo running them would hold the build directory), once
    // every lesson is built.
    let started_beside = Instant::now();
    let mut built_beside = Vec::new();
    for (what, package, test) in BESIDE {
        match suite::build_tests(root, &["-p", package, "--test", test]) {
            Ok(built) => built_beside.push((what, built[test].clone())),
            Err(e) => rows.push(Row {
                lesson: "harness".into(),
                subject: what.into(),
                ok: false,
                detail: e,
                seconds: started_beside.elapsed().as_secs_f64(),
            }),
        }
    }
    let dir = root.to_path_buf();
    let mut beside = Some(std::thread::spawn(move || {
        built_beside
            .into_iter()
            .map(|(what, exe)| {
                let started = Instant::now();
                let run = Command::new(exe)
                    .current_dir(&dir)
                    .env("RUST_BACKTRACE", "0")
                    .stdin(std::process::Stdio::null())
                    .output();
                (what, run, started.elapsed().as_secs_f64())
            })
            .collect::<Vec<_>>()
    }));
    let mut join_runner = |rows: &mut Vec<Row>| {
        if let Some(thread) = beside.take() {
            let ran = thread.join().unwrap_or_else(|_| {
                let panicked = Err(std::io::Error::other("the thread panicked"));
                vec![(
                    "the runner's and the class view's tests",
                    panicked,
                    started_beside.elapsed().as_secs_f64(),
                )]
            });
            for (i, (what, run, seconds)) in ran.into_iter().enumerate() {
                rows.insert(1 + i, harness_row(what, run, seconds));
            }
        }
    };
    let plan: Vec<(&Lesson, String, Expect)> = lessons
        .iter()
        .flat_map(|l| subjects(l).into_iter().map(move |(s, e)| (l, s, e)))
        .collect();
    for (i, (lesson, subject, expect)) in plan.iter().enumerate() {
        if !lesson.kind.runs_beside_the_runner() {
            join_runner(&mut rows);
        }
        progress(i, plan.len(), &format!("{} {subject}", lesson.name()));
        let exe = &binaries.by_lesson[&lesson.name()];
        // A mistake may say what its failure must show (`//! Shows: …`):
        // the messages are checked too, not only that something failed.
        let wanted = match subject.strip_prefix("mistake:") {
            Some(name) => lesson
                .mistakes
                .iter()
                .find(|m| m.name == name)
                .and_then(|m| std::fs::read_to_string(root.join(&m.path)).ok())
                .map(|text| kata_catalog::mistake::shows(&text))
                .unwrap_or_default(),
            None => Vec::new(),
        };
        // As many test threads as the learner's runner gives the lesson.
        let threads = kata_runner::staged::threads_for(lesson.kind);
        let outcome = match expect {
            Expect::Caught => until_caught(root, exe, subject, &wanted, threads),
            Expect::Pass | Expect::FailAll => {
                suite::run_binary_unless(root, exe, subject, None, Until::End, threads, &|| false)
            }
        };
        let (mut ok, mut detail) = judge(*expect, &outcome);
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|want| !outcome.output.contains(want.as_str()))
            .collect();
        if ok && !missing.is_empty() {
            ok = false;
            detail = format!("caught, but the failure does not show {missing:?}");
        }
        if !ok {
            eprintln!(
                "{} {subject}: {detail}; its output:\n{}",
                lesson.name(),
                outcome.output
            );
        }
        rows.push(Row {
            lesson: lesson.name(),
            subject: subject.clone(),
            ok,
            detail,
            seconds: outcome.took.as_secs_f64(),
        });
    }
    join_runner(&mut rows);
    // An unknown subject is named once, not once per test, and fails the run.
    if let Some(first) = lessons.first() {
        let exe = &binaries.by_lesson[&first.name()];
        let outcome = suite::run_binary(root, exe, "no-such-subject", None, Until::End);
        let said = outcome
            .output
            .matches("names no implementation of this lesson")
            .count();
        rows.push(Row {
            lesson: first.name(),
            subject: "KATA_SUBJECT=no-such-subject".into(),
            ok: said == 1 && outcome.tests.is_empty() && outcome.crash.is_none(),
            detail: format!("refused, said {}", kata::text::times(said)),
            seconds: outcome.took.as_secs_f64(),
        });
    }
    progress(plan.len(), plan.len(), "done");
    if std::io::stderr().is_terminal() {
        eprintln!();
    }

    let width = rows.iter().map(|r| r.subject.len()).max().unwrap_or(0);
    println!();
    for r in &rows {
        println!(
            "{:<10} {:<width$}  {:<4}  {:>5.1}s  {}",
            r.lesson,
            r.subject,
            if r.ok { "ok" } else { "FAIL" },
            r.seconds,
            r.detail
        );
    }
    let mut slowest: Vec<&Row> = rows.iter().collect();
    slowest.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    println!("\nthe slowest rows:");
    for r in slowest.iter().take(10) {
        println!("{:>7.1}s  {} {}", r.seconds, r.lesson, r.subject);
    }
    let passed = rows.iter().filter(|r| r.ok).count();
    let failed = rows.len() - passed;
    println!("\nself-check took {:.0}s", started.elapsed().as_secs_f64());
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
