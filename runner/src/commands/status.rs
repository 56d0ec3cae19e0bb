//! `cargo run`: every lesson's state and the next step.

use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry, State};

use super::{painted_state, survey, Done, Refusal};

pub fn status(root: &Path, lessons: &[Entry]) -> Done {
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
        let mut line = runner::one_line(state, outcome);
        if *state != State::NotStarted && *state != State::Passed {
            let reached = runner::milestones_reached(entry, outcome);
            if let Some(at) = runner::milestone_line(entry, reached) {
                line = format!("{line}; at {at}");
            }
        }
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
