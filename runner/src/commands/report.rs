//! `cargo run -- report`: every lesson's state and failing checks, for
//! instructors.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use indicatif::ProgressBar;
use kata_runner::report;
use kata_runner::runner::Entry;

use super::{Done, Refusal};

pub fn report(root: &Path, lessons: &[Entry], json: bool, name: Option<String>) -> Done {
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
