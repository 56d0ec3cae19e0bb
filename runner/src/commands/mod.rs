//! The runner's commands, one a file, and what they share: how a command
//! refuses, the lessons' states (run, or kept from an earlier run),
//! spinners and colour.

mod bench;
mod class;
mod compare;
mod hint;
mod load;
mod points;
mod report;
mod reset;
mod serve;
mod status;
mod test;
mod watch;

pub use bench::bench;
pub use class::class;
pub use compare::compare;
pub use hint::hint;
pub use kata_runner::progress::spinner;
pub use load::load;
pub use points::points;
pub use report::report;
pub use reset::reset;
pub use serve::serve;
pub use status::status;
pub use test::summarize;
pub use watch::watch;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use kata_runner::runner::{self, Entry, State};
use kata_runner::staged::Reach;
use kata_runner::suite::{self, Outcome};

/// A child's success or failure as the runner's own.
pub fn exit_code(status: std::process::ExitStatus) -> ExitCode {
    if status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Colour only on a terminal, and never when NO_COLOR is set.
pub fn paint(text: &str, code: &str) -> String {
    let on = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    if on {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub fn painted_state(state: &State, line: &str) -> String {
    match state {
        State::Passed => paint(line, "32"),
        State::NotStarted => paint(line, "2"),
        _ => paint(line, "31"),
    }
}

/// A failure of the command itself: a message and exit code 2.
pub struct Refusal(pub String);

pub type Done = Result<ExitCode, Refusal>;

pub fn find(lessons: &[Entry], number: u32) -> Result<&Entry, Refusal> {
    lessons.iter().find(|l| l.number == number).ok_or_else(|| {
        let known: Vec<String> = lessons.iter().map(|l| l.number.to_string()).collect();
        Refusal(format!(
            "there is no lesson {number}; the lessons are {}",
            known.join(", ")
        ))
    })
}

/// How far `test` goes: `--all`, and `--milestone K` checked against the
/// lesson's milestones.
pub fn reach(entry: &Entry, all: bool, milestone: Option<usize>) -> Result<Reach, Refusal> {
    let total = entry.milestones.len();
    match milestone {
        Some(k) if total == 0 && k != 1 => Err(Refusal(format!(
            "lesson {} has no milestones: it is one step, `--milestone 1` or none",
            entry.number
        ))),
        Some(k) if total > 0 && !(1..=total).contains(&k) => Err(Refusal(format!(
            "lesson {} has milestones 1 to {total}, not {k}",
            entry.number
        ))),
        _ => Ok(Reach {
            all,
            upto: milestone.filter(|_| total > 0),
        }),
    }
}

pub fn run_lesson(root: &Path, entry: &Entry) -> (State, Outcome) {
    if entry.kind.needs_redis() && !on_path(&kata::infra::server::program()) {
        eprintln!("{}\n", kata::infra::server::INSTALL);
    }
    let outcome = suite::run(root, &entry.name, "learner");
    (
        runner::assess(&outcome, runner::untouched(root, entry)),
        outcome,
    )
}

/// Whether `program` names a file that exists, or one on `PATH`.
pub fn on_path(program: &str) -> bool {
    let path = Path::new(program);
    if path.components().count() > 1 {
        return path.is_file();
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// A lesson's state for an overview: from the cache when nothing it depends
/// on changed since its last run.
pub fn known_lesson(root: &Path, entry: &Entry) -> (State, Outcome) {
    let outcome = kata_runner::report::outcome(root, entry);
    (
        runner::assess(&outcome, runner::untouched(root, entry)),
        outcome,
    )
}

/// Every lesson's state, with a progress bar while the tests run.
pub fn survey(root: &Path, lessons: &[Entry]) -> Vec<(State, Outcome)> {
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
