//! The runner: `cargo run` guides a learner through the kata.
//!
//! With no arguments it shows every lesson's state and the next step; the
//! subcommands run, watch, compare, hint, reset, bench, report and class.
//! Every state comes from running the lessons' tests (or from the kept
//! outcome of a run whose inputs did not change), never from a progress file.

use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use kata_runner::report;
use kata_runner::runner::{self, Entry, State};
use kata_runner::suite::{self, Outcome};
use notify::Watcher;

#[derive(Parser)]
#[command(
    name = "cargo run --",
    about = "The ratelimit kata: build rate limiters lesson by lesson.",
    long_about = "The ratelimit kata: build rate limiters lesson by lesson.\n\n\
                  With no command: every lesson's state and what to do next."
)]
struct Cli {
    /// The kata's folder (default: this one).
    #[arg(long, global = true, env = "KATA_ROOT", hide_env = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Re-run a lesson's tests whenever its file is saved (or on Enter); q then Enter quits.
    Watch {
        /// The lesson's number (default: the first one not passed).
        lesson: Option<u32>,
    },
    /// Run one lesson's tests and sum them up by kind of check.
    Test {
        lesson: u32,
        /// Show every failing check's whole message.
        #[arg(long)]
        details: bool,
    },
    /// Show the next hint of a lesson (one more each time), or hint K again.
    Hint {
        lesson: u32,
        /// Show this hint (1, 2, …) again instead of the next one.
        which: Option<usize>,
    },
    /// Your answers next to the reference's, for a named timeline or your own
    /// requests ("a@0 a@0 a@1"); the first difference is marked.
    Compare {
        lesson: u32,
        /// first_look (default), boundary_burst, burst_then_steady, two_keys,
        /// long_idle_gap, exact_edges; a timeline as a failure prints it
        /// ("L=1 W=2ns: b@3 b@3"); or requests alone, like "a@0 a@0 a@1".
        timeline: Option<String>,
    },
    /// Put the lesson's stub back, keeping your file (every earlier version,
    /// numbered) in lessons/backups/.
    Reset { lesson: u32 },
    /// Time your limiter of lesson N against the reference (and governor for
    /// the token bucket and GCRA), optimised build, ns per decision; for
    /// lesson 07, your layer against the reference's and tower_governor's.
    Bench { lesson: u32 },
    /// Serve an API wearing your layer of lesson 07 on a loopback port, to
    /// try with curl; prints the URL and curl lines. Stop with Ctrl-C.
    Serve {
        /// The reference's layer instead of yours.
        #[arg(long)]
        reference: bool,
        /// The port on 127.0.0.1 (0 picks a free one).
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Validate a running server under load: one client's requests to a
    /// loopback URL at a steady rate for a few seconds, then per second how
    /// many were admitted against what the policy the server announces
    /// (`RateLimit-Policy`) allows, and a verdict. Exits 0 on PASS, 1 on FAIL.
    Load {
        /// The URL, on 127.0.0.1, ::1 or localhost (`cargo run -- serve` prints one).
        url: String,
        /// Requests per second (1 to 1000).
        #[arg(long, default_value_t = 20)]
        rate: u32,
        /// How long, in seconds (1 to 60).
        #[arg(long, default_value_t = 5)]
        seconds: u32,
    },
    /// A whole class at a glance, for instructors: from a folder of reports
    /// (`report --json` files) or of learners' checkouts, or both. Prints a
    /// table and writes a self-contained HTML page.
    Class {
        /// The folder of reports and checkouts.
        folder: PathBuf,
        /// Where to write the page (default: FOLDER/class.html).
        #[arg(long)]
        html: Option<PathBuf>,
    },
    /// Every lesson's state and failing checks, for instructors. Exits 0
    /// when every lesson started passes, 1 otherwise.
    Report {
        /// As JSON (its schema: lessons/runner.md, "The report").
        #[arg(long)]
        json: bool,
        /// The learner's name (default: git's user.name).
        #[arg(long)]
        name: Option<String>,
    },
}

/// `cargo run -- load URL`: the harness's load, its table and its verdict.
fn load(url: &str, rate: u32, seconds: u32) -> Done {
    let load = kata::http::load::Load::new(url, rate, seconds).map_err(Refusal)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Refusal(format!("no runtime: {e}")))?;
    println!(
        "sending {} requests to {url}, {rate} a second for {seconds} s ...",
        u64::from(rate) * u64::from(seconds)
    );
    let report = runtime.block_on(kata::http::load::run(&load));
    print!("{}", report.render());
    Ok(if report.verdict().is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// `cargo run -- bench N`: the bench crate's `versus` binary, built with
/// only this lesson's learner file in it, in release mode.
fn bench(root: &Path, entry: &Entry) -> Done {
    if entry.kind == kata_catalog::Kind::RedisLimiter {
        return Err(Refusal(format!(
            "`bench` measures limiters in memory; {}'s cost is a round trip to Redis, which it does not measure yet",
            entry.name
        )));
    }
    if !root.join("bench").join("Cargo.toml").exists() {
        return Err(Refusal(format!(
            "{} has no bench/ crate to measure with",
            root.display()
        )));
    }
    println!(
        "building lessons/{}.rs and the reference in release mode (the first time takes a few minutes) ...",
        entry.name
    );
    let status = std::process::Command::new(suite::cargo())
        .current_dir(root)
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "ratelimit-kata-bench",
            "--bin",
            "versus",
        ])
        .env("KATA_BENCH_LESSON", entry.number.to_string())
        .env("RUST_BACKTRACE", "0")
        .status()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    Ok(exit_code(status))
}

/// `cargo run -- serve`: the lesson 07 test binary's demo server, in the
/// foreground, its output straight to the terminal.
fn serve(root: &Path, lessons: &[Entry], reference: bool, port: u16) -> Done {
    let entry = lessons
        .iter()
        .find(|e| e.kind == kata_catalog::Kind::HttpLayer)
        .ok_or_else(|| Refusal("no lesson of this kata is an HTTP layer".into()))?;
    let subject = if reference { "reference" } else { "learner" };
    println!(
        "building {} ({}) ...",
        entry.name,
        if reference {
            "the reference's layer"
        } else {
            "your layer"
        }
    );
    let mut command = std::process::Command::new(suite::cargo());
    command
        .current_dir(root)
        .args(["test", "--quiet", "--test", &entry.name, "--"])
        .args(["--ignored", "--exact", "demo_server", "--nocapture"])
        .env("KATA_SUBJECT", subject)
        .env("KATA_SERVE_PORT", port.to_string())
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped());
    // Stopped with the runner, however the runner is stopped: cargo gets
    // SIGTERM when the runner dies, and the server stops when cargo does.
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    let mut child = command
        .spawn()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    // The server's lines, without libtest's around them.
    if let Some(out) = child.stdout.take() {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let libtest = line.starts_with("running ")
                || line.starts_with("test ")
                || line.starts_with("test result:")
                || line.trim().is_empty();
            if !libtest {
                println!("{line}");
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Refusal(format!("could not wait for cargo: {e}")))?;
    Ok(exit_code(status))
}

/// A child's success or failure as the runner's own.
fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The class view, for instructors.
fn class(root: &Path, lessons: &[Entry], dir: &Path, html: Option<PathBuf>) -> Done {
    let bar = spinner("reading the class".into());
    let class = kata_runner::class::collect(root, lessons, dir, |who| {
        bar.set_message(format!("running the lessons of {who}"))
    })
    .map_err(Refusal)?;
    bar.finish_and_clear();
    print!("{}", kata_runner::class::table(lessons, &class));
    let page = html.unwrap_or_else(|| dir.join("class.html"));
    std::fs::write(&page, kata_runner::class::html(lessons, &class))
        .map_err(|e| Refusal(format!("cannot write {}: {e}", page.display())))?;
    println!(
        "
the page for a projector: {}",
        page.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Colour only on a terminal, and never when NO_COLOR is set.
fn paint(text: &str, code: &str) -> String {
    let on = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

fn painted_state(state: &State, line: &str) -> String {
    match state {
        State::Passed => paint(line, "32"),
        State::NotStarted => paint(line, "2"),
        _ => paint(line, "31"),
    }
}

/// A failure of the command itself: a message and exit code 2.
struct Refusal(String);

type Done = Result<ExitCode, Refusal>;

fn find(lessons: &[Entry], number: u32) -> Result<&Entry, Refusal> {
    lessons.iter().find(|l| l.number == number).ok_or_else(|| {
        let known: Vec<String> = lessons.iter().map(|l| l.number.to_string()).collect();
        Refusal(format!(
            "there is no lesson {number}; the lessons are {}",
            known.join(", ")
        ))
    })
}

fn run_lesson(root: &Path, entry: &Entry) -> (State, Outcome) {
    if entry.kind == kata_catalog::Kind::RedisLimiter && !on_path(&kata::redis::server::program()) {
        eprintln!("{}\n", kata::redis::server::INSTALL);
    }
    let outcome = suite::run(root, &entry.name, "learner");
    (
        runner::assess(&outcome, runner::untouched(root, entry)),
        outcome,
    )
}

/// Whether `program` names a file that exists, or one on `PATH`.
fn on_path(program: &str) -> bool {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A lesson's state for an overview: from the cache when nothing it depends
/// on changed since its last run.
fn known_lesson(root: &Path, entry: &Entry) -> (State, Outcome) {
    let outcome = report::outcome(root, entry);
    (
        runner::assess(&outcome, runner::untouched(root, entry)),
        outcome,
    )
}

fn spinner(message: String) -> ProgressBar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new_spinner()
    } else {
        ProgressBar::hidden()
    };
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

/// Every lesson's state, with a progress bar while the tests run.
fn survey(root: &Path, lessons: &[Entry]) -> Vec<(State, Outcome)> {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(lessons.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")
            .expect("a valid template")
            .progress_chars("#>-"),
    );
    let states = lessons
        .iter()
        .map(|entry| {
            bar.set_message(format!("testing {}", entry.name));
            let result = known_lesson(root, entry);
            bar.inc(1);
            result
        })
        .collect();
    bar.finish_and_clear();
    states
}

fn status(root: &Path, lessons: &[Entry]) -> Done {
    if lessons.is_empty() {
        return Err(Refusal(format!(
            "no lessons found under {} (lessons/lessons.toml)",
            root.display()
        )));
    }
    let states = survey(root, lessons);
    println!("ratelimit kata: {} lessons\n", lessons.len());
    let width = lessons.iter().map(|l| l.title.len()).max().unwrap_or(0);
    for (entry, (state, outcome)) in lessons.iter().zip(&states) {
        let line = runner::one_line(state, outcome);
        println!(
            "  {:02}  {:<width$}  {}",
            entry.number,
            entry.title,
            painted_state(state, &line)
        );
    }
    let passed = states.iter().filter(|(s, _)| *s == State::Passed).count();
    let filled = 30 * passed / lessons.len();
    println!(
        "\n  [{}{}] {passed} of {} lessons passed\n",
        "#".repeat(filled),
        "-".repeat(30 - filled),
        lessons.len()
    );
    match lessons
        .iter()
        .zip(&states)
        .find(|(_, (s, _))| *s != State::Passed)
    {
        None => println!("Every lesson passes. Well done."),
        Some((entry, (state, _))) => {
            let verb = if *state == State::NotStarted {
                "Start"
            } else {
                "Continue"
            };
            println!(
                "Next: {verb} lesson {:02}. Read lessons/{}.md, edit lessons/{}.rs, and run\n  cargo run -- watch {}\nto re-run its tests each time you save (cargo run -- hint {} when stuck).",
                entry.number, entry.name, entry.name, entry.number, entry.number
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One lesson's summary; the exit code says whether it passed.
fn summarize(root: &Path, entry: &Entry, details: bool) -> ExitCode {
    let bar = spinner(format!("running the tests of {}", entry.name));
    let (state, outcome) = run_lesson(root, entry);
    bar.finish_and_clear();
    println!(
        "lesson {:02}, {}: {}",
        entry.number,
        entry.title,
        painted_state(&state, &runner::one_line(&state, &outcome))
    );
    match &state {
        State::DoesNotCompile(errors) => {
            println!("\nlessons/{}.rs does not compile:\n\n{errors}", entry.name);
            return ExitCode::FAILURE;
        }
        State::TimedOut => {
            println!(
                "\nthe tests did not finish within {} s: look for a loop that never ends outside any lock or atomic.",
                suite::run_limit().as_secs()
            );
            return ExitCode::FAILURE;
        }
        _ => {}
    }
    for (kind, (failed, total)) in runner::by_kind(&outcome) {
        let mark = if failed == 0 { "ok  " } else { "FAIL" };
        println!(
            "  {mark}  {:<20} {} of {total} passed",
            runner::kind_label(kind),
            total - failed
        );
    }
    if state == State::Passed {
        return ExitCode::SUCCESS;
    }
    // The named examples that fail: each name states a rule.
    let examples: Vec<&str> = outcome
        .failed()
        .filter_map(|name| name.strip_prefix("examples::"))
        .collect();
    if !examples.is_empty() {
        println!("\nfailing examples:");
        for name in examples {
            let readable = name.split_once('_').map_or(name, |(_, rest)| rest);
            let readable = readable.split_once('_').map_or(readable, |(n, rest)| {
                if n.chars().all(|c| c.is_ascii_digit()) {
                    rest
                } else {
                    readable
                }
            });
            println!("  {}", readable.replace('_', " "));
        }
    }
    if details {
        println!("\n{}", runner::failure_details(&outcome.output));
    } else if let Some(first) = runner::first_failure(&outcome.output, 30) {
        println!("\nfirst failure:\n{first}");
        // A long failure is cut; its replay command, at its end, is not.
        if let Some(command) = runner::replay_command(&outcome.output) {
            if !first.contains(&command) {
                println!("\nreplay it beside the reference's answers:\n  {command}");
            }
        }
    }
    ExitCode::FAILURE
}

fn hint(root: &Path, entry: &Entry, which: Option<usize>) -> Done {
    let text = std::fs::read_to_string(entry.text(root))
        .map_err(|e| Refusal(format!("cannot read lessons/{}.md: {e}", entry.name)))?;
    let all = runner::hints(&text);
    if all.is_empty() {
        return Err(Refusal(format!("lessons/{}.md has no hints", entry.name)));
    }
    let shown = runner::hints_shown(root, &entry.name);
    let next = match which {
        Some(k) if (1..=all.len()).contains(&k) && k > shown + 1 => {
            return Err(Refusal(format!(
                "you have seen {} of lesson {}'s hints; the next one is `cargo run -- hint {}`",
                if shown == 0 {
                    "none".to_string()
                } else {
                    format!("hints 1 to {shown}")
                },
                entry.number,
                entry.number
            )))
        }
        Some(k) if (1..=all.len()).contains(&k) => k - 1,
        Some(k) => {
            return Err(Refusal(format!(
                "lesson {} has hints 1 to {}, not {k}",
                entry.number,
                all.len()
            )))
        }
        None => shown.min(all.len() - 1),
    };
    let hint = &all[next];
    println!(
        "{} ({} of {})\n\n{}",
        hint.title,
        next + 1,
        all.len(),
        hint.text
    );
    if next + 1 < all.len() {
        println!(
            "\n(run `cargo run -- hint {}` again for the next hint; `cargo run -- hint {} K` shows hint K again)",
            entry.number, entry.number
        );
    } else {
        println!("\n(that was the last hint)");
    }
    runner::remember_hints_shown(root, &entry.name, shown.max(next + 1))
        .map_err(|e| Refusal(format!("cannot remember the hints shown: {e}")))?;
    Ok(ExitCode::SUCCESS)
}

fn compare(root: &Path, entry: &Entry, timeline: Option<String>) -> Done {
    let which = timeline.unwrap_or_else(|| kata::checks::DEFAULT_COMPARISON.into());
    // Refused here, before building anything, with the same words as the tests.
    if entry.kind == kata_catalog::Kind::HttpLayer {
        let named = kata::http::checks::SNAPSHOTS
            .iter()
            .any(|(n, _)| *n == which);
        if !named {
            kata::http::exchange::parse(&which).map_err(|e| {
                let names: Vec<&str> = kata::http::checks::SNAPSHOTS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect();
                Refusal(format!(
                    "{e}; name one of {} or write a timeline as a failure prints it",
                    names.join(", ")
                ))
            })?;
        }
    } else {
        kata::timeline::Standard::resolve(&which).map_err(Refusal)?;
    }
    let bar = spinner(format!("running {} on {which}", entry.name));
    let outcome = suite::run_with(
        root,
        &entry.name,
        "learner",
        &[
            "--ignored",
            "--exact",
            "compare_with_reference",
            "--nocapture",
        ],
        &[("KATA_COMPARE", &which)],
    );
    bar.finish_and_clear();
    if !outcome.ran {
        return Err(Refusal(format!(
            "lessons/{}.rs does not compile:\n\n{}",
            entry.name,
            runner::compiler_errors(&outcome.output)
        )));
    }
    let text: Vec<&str> = outcome
        .output
        .lines()
        .filter(|l| {
            !(l.starts_with("running ")
                || l.starts_with("test ")
                || l.starts_with("test result:")
                || l.trim() == ".")
        })
        .collect();
    println!("{}", text.join("\n").trim());
    let differs = outcome.output.contains("\nfirst difference: ");
    let stopped = outcome.failed().next().is_some();
    if !differs && !stopped {
        // The same answers here; say so only as far as it goes.
        let bar = spinner(format!("running every check of {}", entry.name));
        let (state, all) = run_lesson(root, entry);
        bar.finish_and_clear();
        if state != State::Passed && state != State::NotStarted {
            let failed = all.failed().count();
            println!(
                "\nBut {failed} of {} checks of lesson {:02} fail.",
                all.tests.len(),
                entry.number
            );
            if let Some(command) = runner::replay_command(&all.output) {
                println!(
                    "The first failing timeline, beside the reference's answers:\n  {command}"
                );
            }
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(if differs || stopped {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn reset(root: &Path, entry: &Entry) -> Done {
    let file = entry.file(root);
    let stub = std::fs::read(entry.stub(root)).map_err(|e| {
        Refusal(format!(
            "cannot read the stub lessons/stubs/{}.rs: {e}",
            entry.name
        ))
    })?;
    // Every version that is not the stub is kept, numbered, never overwritten.
    let mine = std::fs::read(&file).ok();
    if let Some(mine) = mine.filter(|mine| *mine != stub) {
        let backup = runner::next_backup(root, &entry.name);
        if let Some(dir) = backup.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                Refusal(format!(
                    "cannot make {}: {e}; nothing was changed",
                    dir.display()
                ))
            })?;
        }
        std::fs::write(&backup, mine).map_err(|e| {
            Refusal(format!(
                "cannot keep a backup at {}: {e}; nothing was changed",
                backup.display()
            ))
        })?;
        let shown = backup.strip_prefix(root).unwrap_or(&backup);
        println!(
            "your file is kept at {} (to bring it back: cp {} lessons/{}.rs)",
            shown.display(),
            shown.display(),
            entry.name
        );
    } else {
        println!(
            "lessons/{}.rs was already the stub: nothing to keep",
            entry.name
        );
    }
    std::fs::write(&file, stub)
        .map_err(|e| Refusal(format!("cannot write lessons/{}.rs: {e}", entry.name)))?;
    println!("lessons/{}.rs is the stub again", entry.name);
    Ok(ExitCode::SUCCESS)
}

fn report(root: &Path, lessons: &[Entry], json: bool, name: Option<String>) -> Done {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(lessons.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    let report = report::make(root, lessons, report::learner_name(root, name), |entry| {
        bar.set_message(format!("testing {}", entry.name));
        bar.inc(1);
    });
    bar.finish_and_clear();
    if json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Refusal(format!("cannot write the report: {e}")))?;
        println!("{text}");
    } else {
        println!(
            "report for {} at {}\n",
            report
                .learner
                .as_deref()
                .unwrap_or("(no name: --name NAME)"),
            report.when
        );
        for lesson in &report.lessons {
            println!("{:02} {:<18} {}", lesson.number, lesson.state, lesson.title);
            if let Some(line) = lesson
                .first_failure
                .as_ref()
                .or(lesson.compiler_error.as_ref())
            {
                println!("     {line}");
            }
        }
    }
    Ok(if report::all_started_pass(&report) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What wakes the watcher up.
enum Wake {
    Saved,
    Enter,
    Quit,
}

fn watch(root: &Path, lessons: &[Entry], number: Option<u32>) -> Done {
    let entry = match number {
        Some(n) => find(lessons, n)?.clone(),
        None => {
            let states = survey(root, lessons);
            match lessons
                .iter()
                .zip(&states)
                .find(|(_, (s, _))| *s != State::Passed)
            {
                Some((entry, _)) => entry.clone(),
                None => {
                    println!("Every lesson passes: nothing to watch.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
    };
    let (tx, rx) = mpsc::channel();
    let file = entry.file(root);
    let saved = tx.clone();
    let watched_name = file.file_name().map(|n| n.to_os_string());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            let ours = event.paths.iter().any(|p| {
                p.file_name().map(|n| n.to_os_string()) == watched_name
                    || p.ends_with(".kata-watch-probe")
            });
            if ours && (event.kind.is_modify() || event.kind.is_create()) {
                let _ = saved.send(Wake::Saved);
            }
        }
    })
    .ok();
    let dir = root.join("lessons");
    let watching = watcher
        .as_mut()
        .is_some_and(|w| w.watch(&dir, notify::RecursiveMode::NonRecursive).is_ok());
    // Probe: do file events arrive here at all? (Not on some network file systems.)
    let events_arrive = watching && {
        let probe = dir.join(".kata-watch-probe");
        let _ = std::fs::write(&probe, "probe");
        let arrived = matches!(rx.recv_timeout(Duration::from_secs(2)), Ok(Wake::Saved));
        let _ = std::fs::remove_file(&probe);
        while rx.try_recv().is_ok() {}
        arrived
    };
    let keys = tx;
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let wake = match line {
                Ok(l) if l.trim() == "q" => Wake::Quit,
                Ok(_) => Wake::Enter,
                Err(_) => Wake::Quit,
            };
            let quit = matches!(wake, Wake::Quit);
            if keys.send(wake).is_err() || quit {
                return;
            }
        }
        let _ = keys.send(Wake::Quit);
    });
    if events_arrive {
        println!(
            "watching lessons/{}.rs: the tests run again each time you save it (Enter re-runs, q then Enter quits)",
            entry.name
        );
    } else {
        println!(
            "file events do not arrive here (a network file system?): press Enter to re-run the tests of lesson {:02}, q then Enter to quit",
            entry.number
        );
    }
    let mut last = summarize(root, &entry, false);
    loop {
        match rx.recv() {
            Ok(Wake::Saved) | Ok(Wake::Enter) => {
                // A save often arrives as several events: take them as one
                // run, and quit after it if q came meanwhile.
                std::thread::sleep(Duration::from_millis(150));
                let quit = rx.try_iter().any(|wake| matches!(wake, Wake::Quit));
                redraw(&entry);
                last = summarize(root, &entry, false);
                if quit {
                    return Ok(last);
                }
            }
            Ok(Wake::Quit) | Err(_) => return Ok(last),
        }
    }
}

/// Before each run of watch mode: on a terminal the screen is cleared, so
/// the newest run is the only one shown; elsewhere runs are separated.
fn redraw(entry: &Entry) {
    if std::io::stdout().is_terminal() {
        print!("\x1b[2J\x1b[H");
        println!(
            "watching lessons/{}.rs (Enter re-runs, q then Enter quits)\n",
            entry.name
        );
    } else {
        println!("\n----");
    }
}

fn main() -> ExitCode {
    // Output piped into `head` and closed early ends the runner quietly, as
    // it does any Unix tool, instead of a panic about a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default action of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // The kata is the folder above this crate (`runner/`), unless told.
    let root = cli
        .root
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let root = root.canonicalize().unwrap_or(root);
    let done = runner::lessons(&root)
        .map_err(Refusal)
        .and_then(|lessons| match cli.command {
            None => status(&root, &lessons),
            Some(Command::Watch { lesson }) => watch(&root, &lessons, lesson),
            Some(Command::Test { lesson, details }) => {
                find(&lessons, lesson).map(|entry| summarize(&root, entry, details))
            }
            Some(Command::Hint { lesson, which }) => {
                find(&lessons, lesson).and_then(|e| hint(&root, e, which))
            }
            Some(Command::Compare { lesson, timeline }) => {
                find(&lessons, lesson).and_then(|e| compare(&root, e, timeline))
            }
            Some(Command::Reset { lesson }) => find(&lessons, lesson).and_then(|e| reset(&root, e)),
            Some(Command::Report { json, name }) => report(&root, &lessons, json, name),
            Some(Command::Class { folder, html }) => class(&root, &lessons, &folder, html),
            Some(Command::Bench { lesson }) => find(&lessons, lesson).and_then(|e| bench(&root, e)),
            Some(Command::Serve { reference, port }) => serve(&root, &lessons, reference, port),
            Some(Command::Load { url, rate, seconds }) => load(&url, rate, seconds),
        });
    match done {
        Ok(code) => code,
        Err(Refusal(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
