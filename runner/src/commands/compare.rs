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
        .filter(|l| !runner::libtest_noise(l))
        .collect();
    // Blank lines left where bookkeeping was taken out come as one.
    let mut shown: Vec<&str> = Vec::new();
    for line in text {
        if !(line.trim().is_empty() && shown.last().is_some_and(|l| l.trim().is_empty())) {
            shown.push(line);
        }
    }
    println!("{}", shown.join("\n").trim());
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
            if let Some(command) = runner::any_replay_command(&all.failures) {
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
