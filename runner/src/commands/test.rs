//! `cargo run -- test N`: one lesson's tests, milestone by milestone and
//! tier by tier, each tier's result shown as it arrives (also what `watch`
//! shows after each run).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry, State};
use kata_runner::staged::{self, Reach, Stage};
use kata_runner::state;
use kata_runner::suite::{self, Outcome};

use super::{on_path, paint, painted_state, spinner};

/// One lesson's summary; the exit code says whether every check run passed
/// and, without `--milestone`, whether the lesson passed.
pub fn summarize(root: &Path, entry: &Entry, details: bool, reach: Reach) -> ExitCode {
    if entry.kind.needs_redis() && !on_path(&kata::infra::server::program()) {
        eprintln!("{}\n", kata::infra::server::INSTALL);
    }
    let total = entry.milestones.len();
    println!("lesson {:02}, {}", entry.number, entry.title);
    let bar = spinner(format!("building the tests of {}", entry.name));
    let mut heading: Option<Option<usize>> = None;
    let staged = staged::run(root, entry, "learner", reach, |stage, outcome| {
        bar.suspend(|| {
            if heading != Some(stage.milestone) {
                heading = Some(stage.milestone);
                if let Some(m) = stage.milestone {
                    let title = &entry.milestones[m - 1].title;
                    println!("milestone {m} of {total}: {title}");
                }
            }
            println!("{}", tier_line(stage, outcome));
            let _ = std::io::stdout().flush();
        });
        bar.set_message(format!("running the next checks of {}", entry.name));
    });
    bar.finish_and_clear();
    let untouched = runner::untouched(root, entry);
    let outcome = &staged.outcome;
    let state = runner::assess(outcome, untouched);
    let reached = runner::milestones_reached(entry, outcome);
    if total > 0 {
        // What `hint` offers next: the first milestone not reached.
        let _ = state::remember_milestone(root, &entry.name, (reached + 1).min(total));
    }
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
    let all_passed = staged.first_failed().is_none() && outcome.ran;
    if !staged.not_run.is_empty() {
        let here = staged.ran.last().and_then(|(s, _)| s.milestone);
        println!(
            "{}",
            not_run(entry, here, &staged.not_run, reach, all_passed)
        );
    }
    let summary = match (&state, reach.upto) {
        (State::NotStarted, _) => "not started: the file is still the stub".to_string(),
        (_, Some(k)) if all_passed => format!(
            "milestones 1 to {k} of {total} reached ({} checks)",
            outcome.tests.len()
        ),
        (State::Passed, _) if staged.not_run.is_empty() => runner::one_line(&state, outcome),
        _ => {
            let failed = outcome.failed().count();
            let ran = outcome.tests.len();
            let mut line = format!("failing {failed} of the {ran} checks run");
            if let Some(next) = runner::milestone_line(entry, reached) {
                line = format!("{next}; {line}");
            }
            line
        }
    };
    let shown_state = if all_passed && reach.upto.is_some() {
        State::Passed
    } else {
        state.clone()
    };
    println!("\n{}", painted_state(&shown_state, &summary));
    if all_passed && (staged.not_run.is_empty() || reach.upto.is_some()) {
        return ExitCode::SUCCESS;
    }
    let Some((_, failing)) = staged.first_failed() else {
        return ExitCode::FAILURE;
    };
    // The named examples that fail: each name states a rule.
    let mut examples: Vec<&str> = outcome
        .failed()
        .filter_map(|name| name.strip_prefix("examples::"))
        .collect();
    // In the test file's order, whichever ended first.
    examples.sort();
    if !examples.is_empty() {
        println!("\nfailing examples:");
        for name in examples {
            println!("  {}", suite::readable_example(name));
        }
    }
    if details {
        println!("\n{}", staged.details());
    } else if let Some(first) = runner::first_failure(&failing.failures, 30) {
        println!("\nfirst failure:\n{first}");
        // A long failure is cut; its replay command, at its end, is not.
        if let Some(command) = runner::replay_command(&failing.failures) {
            if !first.contains(&command) {
                println!("\nreplay it beside the reference's answers:\n  {command}");
            }
        }
    } else if let Some(crash) = &failing.crash {
        println!("\n{crash}");
    }
    ExitCode::FAILURE
}

/// `  ok    properties     7 of 7 passed  (1.2 s)`
fn tier_line(stage: &Stage, outcome: &Outcome) -> String {
    let total = stage.tests.len();
    let failed = stage
        .tests
        .iter()
        .filter(|t| !outcome.tests.iter().any(|(n, ok)| n == *t && *ok))
        .count();
    let mark = if staged::passed(outcome) {
        paint("ok  ", "32")
    } else {
        paint("FAIL", "31")
    };
    let what = if outcome.crash.is_some() {
        "crashed".to_string()
    } else if outcome.timed_out {
        "stopped: out of time".to_string()
    } else {
        format!("{} of {total} passed", total - failed)
    };
    format!(
        "  {mark}  {:<52} {what}  ({:.1} s)",
        stage.tier.label(),
        outcome.took.as_secs_f64()
    )
}

/// Which stages were not run, and why: `not run: properties, races (a quick
/// check fails first: ...)`.
fn not_run(
    entry: &Entry,
    here: Option<usize>,
    stages: &[Stage],
    reach: Reach,
    all_passed: bool,
) -> String {
    let tiers: Vec<&str> = stages
        .iter()
        .filter(|s| s.milestone == here)
        .map(|s| s.tier.label())
        .collect();
    let later: Vec<usize> = {
        let mut m: Vec<usize> = stages
            .iter()
            .filter_map(|s| s.milestone)
            .filter(|m| Some(*m) != here)
            .collect();
        m.dedup();
        m
    };
    let why = if all_passed {
        format!("--milestone {} stops there", reach.upto.unwrap_or_default())
    } else {
        format!(
            "a check above fails first; `cargo run -- test {} --all` runs them anyway",
            entry.number
        )
    };
    let mut parts = Vec::new();
    if !tiers.is_empty() {
        parts.push(tiers.join(", "));
    }
    match later.as_slice() {
        [] => {}
        [one] => parts.push(format!("milestone {one}")),
        [first, last] => parts.push(format!("milestones {first} and {last}")),
        [first, .., last] => parts.push(format!("milestones {first} to {last}")),
    }
    format!("  not run: {} ({why})", parts.join("; "))
}
