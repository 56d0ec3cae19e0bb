//! Runs a lesson's trials as libtest runs tests: the same lines, the same
//! failures section and summary, the same exit codes; each check on a
//! thread named after it, at most `--test-threads` at once, in the order
//! of their names.
//!
//! When `KATA_RESULTS` names a file, each event also goes there as a JSON
//! line, for the runner and the self-check:
//!
//! - `{"event":"started","name":N}` when a check starts;
//! - `{"event":"ok"|"failed"|"ignored","name":N,"check":C,"tier":T,
//!   "secs":S,"output":O}` when it ends (`check` is the kind of check, as
//!   [`Check::name`](kata_catalog::groups::Check::name) says it; `output`
//!   is what it printed and why it failed);
//! - `{"event":"done","passed":P,"failed":F,"ignored":I,"filtered_out":X}`
//!   at the end.

use std::collections::VecDeque;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use super::args::{Args, Format};
use super::capture::{install_hook, Output};
use super::{Trial, Trials};

/// Runs `trials` with the process's arguments, and says how it went: 0
/// when every check run passed, 101 when one failed (as libtest).
pub fn main(trials: Trials) -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        // The usage, asked for, on stdout; a refusal on stderr.
        Err((text, 0)) => {
            let _ = write!(std::io::stdout(), "{text}");
            return ExitCode::SUCCESS;
        }
        Err((text, code)) => {
            let _ = write!(std::io::stderr(), "{text}");
            return ExitCode::from(code);
        }
    };
    // Read once and taken out of the environment: this binary run again
    // (an app server, a check alone) writes no results of its own there.
    let results = std::env::var_os(RESULTS);
    std::env::remove_var(RESULTS);
    let mut trials = trials.into_vec();
    trials.sort_by(|a, b| a.name.cmp(&b.name));
    if args.list {
        list(&args, &trials);
        return ExitCode::SUCCESS;
    }
    ExitCode::from(run(&args, trials, results))
}

/// The variable that names the file of results.
const RESULTS: &str = "KATA_RESULTS";

/// `--list`: each selected check as `NAME: test`, and in the pretty format
/// how many.
fn list(args: &Args, trials: &[Trial]) {
    let mut out = std::io::stdout().lock();
    let listed: Vec<&Trial> = trials
        .iter()
        .filter(|t| args.selects(&t.name) && (!args.ignored || t.ignored.is_some()))
        .collect();
    for t in &listed {
        let _ = writeln!(out, "{}: test", t.name);
    }
    if args.format == Format::Pretty {
        let _ = writeln!(out, "\n{}, 0 benchmarks", tests(listed.len()));
    }
}

fn tests(n: usize) -> String {
    format!("{n} test{}", if n == 1 { "" } else { "s" })
}

/// What became of one check.
enum Verdict {
    Passed,
    Failed,
    Ignored(&'static str),
}

/// Runs the selected checks, the quickest tiers first (examples and
/// drawings, then properties, races, and the slow checks), each tier in
/// the order of the names; returns the exit code. A learner hears of a
/// wrong key function from an example in a second, and a hang found by a
/// property stops the loom models that would each wait it out.
fn run(args: &Args, mut trials: Vec<Trial>, results: Option<std::ffi::OsString>) -> u8 {
    install_hook();
    let started = Instant::now();
    let total = trials.len();
    trials.sort_by_key(Trial::tier);
    let mut queue: VecDeque<(Trial, bool)> = trials
        .into_iter()
        .filter(|t| args.selects(&t.name))
        .filter(|t| !args.ignored || t.ignored.is_some())
        .map(|t| {
            let skip = t.ignored.is_some() && !args.ignored && !args.include_ignored;
            (t, skip)
        })
        .collect();
    let filtered_out = total - queue.len();
    let threads = args.threads().max(1);
    let mut printer = Printer::new(args, queue.len(), threads, results);
    printer.start(queue.len());

    let (tx, rx) = mpsc::channel::<(String, Verdict, String, Duration)>();
    let mut running = 0usize;
    let (mut passed, mut failed, mut ignored) = (0usize, 0usize, 0usize);
    loop {
        while running < threads {
            let Some((trial, skip)) = queue.pop_front() else {
                break;
            };
            if skip {
                ignored += 1;
                let reason = trial.ignored.unwrap_or("");
                printer.result(&trial, &Verdict::Ignored(reason), "", Duration::ZERO);
                continue;
            }
            printer.starting(&trial);
            let output = Output::new(&trial.name, !args.nocapture);
            let sender = tx.clone();
            let Trial { name, run, .. } = trial;
            let spawned = std::thread::Builder::new().name(name.clone()).spawn({
                let name = name.clone();
                move || {
                    let begun = Instant::now();
                    Output::adopt(Some(output.clone()));
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        __rust_begin_short_backtrace(run)
                    }));
                    Output::adopt(None);
                    let verdict = match result {
                        Ok(()) => Verdict::Passed,
                        Err(_) => Verdict::Failed,
                    };
                    let _ = sender.send((name, verdict, output.text(), begun.elapsed()));
                }
            });
            if let Err(e) = spawned {
                let _ = tx.send((
                    name.clone(),
                    Verdict::Failed,
                    format!("the check's thread did not start: {e}\n"),
                    Duration::ZERO,
                ));
            }
            running += 1;
        }
        if running == 0 {
            break;
        }
        let (name, verdict, text, took) = rx.recv().expect("a check's thread answers");
        running -= 1;
        match verdict {
            Verdict::Passed => passed += 1,
            Verdict::Failed => failed += 1,
            Verdict::Ignored(_) => ignored += 1,
        }
        printer.finished(&name, &verdict, &text, took);
    }
    printer.summary(passed, failed, ignored, filtered_out, started.elapsed());
    if failed == 0 {
        0
    } else {
        101
    }
}

/// Runs a check: its frame marks where a short backtrace ends, as the frame
/// of this name does in libtest, so that `RUST_BACKTRACE=1` shows the
/// check's frames and not the runner's.
#[inline(never)]
fn __rust_begin_short_backtrace(run: Box<dyn FnOnce() + Send>) {
    run();
    // Not a tail call, so that this frame stays on the stack.
    std::hint::black_box(());
}

/// Writes the results, as libtest does, and the JSON lines.
struct Printer {
    format: Format,
    color: bool,
    /// Whether a check's name is printed when it starts (one at a time)
    /// or with its result.
    one_at_a_time: bool,
    show_output: bool,
    /// The facts of each check started, for its JSON line.
    checks: std::collections::HashMap<String, (&'static str, &'static str)>,
    failures: Vec<(String, String)>,
    successes: Vec<(String, String)>,
    done: usize,
    total: usize,
    results: Option<Mutex<std::fs::File>>,
}

impl Printer {
    fn new(
        args: &Args,
        total: usize,
        threads: usize,
        results: Option<std::ffi::OsString>,
    ) -> Printer {
        let results = results.and_then(|path| {
            let opened = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path);
            match opened {
                Ok(file) => Some(Mutex::new(file)),
                Err(e) => {
                    eprintln!(
                        "error: the results cannot be written to {} (KATA_RESULTS): {e}",
                        path.to_string_lossy()
                    );
                    None
                }
            }
        });
        Printer {
            format: args.format,
            color: args
                .color
                .unwrap_or_else(|| std::io::stdout().is_terminal()),
            one_at_a_time: threads == 1,
            show_output: args.show_output,
            checks: Default::default(),
            failures: vec![],
            successes: vec![],
            done: 0,
            total,
            results,
        }
    }

    fn out(&self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    }

    fn json(&self, line: serde_json::Value) {
        if let Some(file) = &self.results {
            // One write per line, so that a reader never sees half of one.
            let text = format!("{line}\n");
            let mut file = file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = file.write_all(text.as_bytes());
        }
    }

    fn start(&self, n: usize) {
        self.out(&format!("\nrunning {}\n", tests(n)));
    }

    fn starting(&mut self, trial: &Trial) {
        self.checks
            .insert(trial.name.clone(), (trial.check().name(), tier(trial)));
        self.json(serde_json::json!({"event": "started", "name": trial.name}));
        if self.format == Format::Pretty && self.one_at_a_time {
            self.out(&format!("test {} ... ", trial.name));
        }
    }

    fn result(&mut self, trial: &Trial, verdict: &Verdict, text: &str, took: Duration) {
        self.checks
            .insert(trial.name.clone(), (trial.check().name(), tier(trial)));
        self.finished(&trial.name, verdict, text, took);
    }

    fn finished(&mut self, name: &str, verdict: &Verdict, text: &str, took: Duration) {
        let (check, tier) = self
            .checks
            .get(name)
            .copied()
            .unwrap_or(("property", "properties"));
        let (event, word, color) = match verdict {
            Verdict::Passed => ("ok", "ok".to_string(), 32),
            Verdict::Failed => ("failed", "FAILED".to_string(), 31),
            Verdict::Ignored("") => ("ignored", "ignored".to_string(), 33),
            Verdict::Ignored(why) => ("ignored", format!("ignored, {why}"), 33),
        };
        self.json(serde_json::json!({
            "event": event, "name": name, "check": check, "tier": tier,
            "secs": took.as_secs_f64(), "output": text,
        }));
        let painted = |s: &str| match self.color {
            true => format!("\x1b[{color}m{s}\x1b[0m"),
            false => s.to_string(),
        };
        match self.format {
            Format::Pretty => {
                let head = match self.one_at_a_time && !matches!(verdict, Verdict::Ignored(_)) {
                    true => String::new(),
                    false => format!("test {name} ... "),
                };
                let (word, rest) = match verdict {
                    Verdict::Ignored(why) if !why.is_empty() => {
                        ("ignored".into(), format!(", {why}"))
                    }
                    _ => (word, String::new()),
                };
                self.out(&format!("{head}{}{rest}\n", painted(&word)));
            }
            Format::Terse => {
                let mark = match verdict {
                    Verdict::Passed => ".",
                    Verdict::Failed => "F",
                    Verdict::Ignored(_) => "i",
                };
                self.done += 1;
                let mut text = painted(mark);
                if self.done.is_multiple_of(88) {
                    text.push_str(&format!(" {}/{}\n", self.done, self.total));
                }
                self.out(&text);
            }
        }
        match verdict {
            Verdict::Failed => self.failures.push((name.to_string(), text.to_string())),
            Verdict::Passed if self.show_output => {
                self.successes.push((name.to_string(), text.to_string()))
            }
            _ => {}
        }
    }

    fn summary(
        &mut self,
        passed: usize,
        failed: usize,
        ignored: usize,
        filtered: usize,
        took: Duration,
    ) {
        self.json(serde_json::json!({
            "event": "done", "passed": passed, "failed": failed, "ignored": ignored,
            "filtered_out": filtered,
        }));
        let mut text = String::new();
        if self.format == Format::Terse && !self.done.is_multiple_of(88) {
            text.push('\n');
        }
        // As libtest: the outputs in the order the checks ended, then the
        // names in order.
        let mut section = |title: &str, entries: &mut Vec<(String, String)>| {
            if entries.is_empty() {
                return;
            }
            text.push_str(&format!("\n{title}:\n"));
            let outputs: String = entries
                .iter()
                .filter(|(_, out)| !out.is_empty())
                .map(|(name, out)| format!("---- {name} stdout ----\n{out}\n"))
                .collect();
            if !outputs.is_empty() {
                text.push('\n');
                text.push_str(&outputs);
            }
            text.push_str(&format!("\n{title}:\n"));
            let mut names: Vec<&String> = entries.iter().map(|(n, _)| n).collect();
            names.sort();
            for name in names {
                text.push_str(&format!("    {name}\n"));
            }
        };
        if self.show_output {
            section("successes", &mut self.successes);
        }
        section("failures", &mut self.failures);
        let verdict = match failed {
            0 => "ok".to_string(),
            _ => "FAILED".to_string(),
        };
        let painted = match (self.color, failed) {
            (true, 0) => format!("\x1b[32m{verdict}\x1b[0m"),
            (true, _) => format!("\x1b[31m{verdict}\x1b[0m"),
            (false, _) => verdict,
        };
        text.push_str(&format!(
            "\ntest result: {painted}. {passed} passed; {failed} failed; {ignored} ignored; \
             0 measured; {filtered} filtered out; finished in {:.2}s\n\n",
            took.as_secs_f64()
        ));
        self.out(&text);
    }
}

fn tier(trial: &Trial) -> &'static str {
    trial.tier().name()
}
