//! `cargo run -- test N`: one lesson's tests, summed up by kind of check
//! (also what `watch` shows after each run).

use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry, State};
use kata_runner::suite;

use super::{painted_state, run_lesson, spinner};

/// One lesson's summary; the exit code says whether it passed.
pub fn summarize(root: &Path, entry: &Entry, details: bool) -> ExitCode {
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
