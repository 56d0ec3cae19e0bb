//! `cargo run -- compare N [TIMELINE]`: the learner's answers beside the
//! reference's.

use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry, State};
use kata_runner::suite;

use super::{run_lesson, spinner, Done, Refusal};

pub fn compare(root: &Path, entry: &Entry, timeline: Option<String>) -> Done {
    // Refused here, before building anything, with the same words as the tests.
    let which = runner::comparison(entry.kind, timeline.as_deref()).map_err(Refusal)?;
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
        .filter(|l| !libtest_noise(l))
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
            if let Some(command) = runner::any_replay_command(&all.output) {
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

/// What cargo and libtest print around the comparison, which says nothing
/// to a learner: the run's bookkeeping, and that the comparison "failed"
/// (it panics when the answers differ, to exit 1).
fn libtest_noise(line: &str) -> bool {
    let trimmed = line.trim();
    line.starts_with("running ")
        || line.starts_with("test ")
        || line.starts_with("test result:")
        || trimmed == "."
        || trimmed == "failures:"
        || trimmed == "compare_with_reference"
        || line.starts_with("error: test failed, to rerun pass")
        || line.starts_with("note: run with `RUST_BACKTRACE=1`")
}

#[cfg(test)]
mod tests {
    use super::libtest_noise;

    #[test]
    fn cargo_s_and_libtest_s_bookkeeping_is_not_shown() {
        let output =
            "running 1 test\nyours:\n#  time  key\nfailures:\n    compare_with_reference\n\
                      test result: FAILED. 0 passed; 1 failed\n\
                      error: test failed, to rerun pass `-p ratelimit-kata --test lesson_08`";
        let kept: Vec<&str> = output.lines().filter(|l| !libtest_noise(l)).collect();
        assert_eq!(kept, ["yours:", "#  time  key"]);
    }
}
