//! `cargo run -- points REPORT`: one report's points, milestone by
//! milestone of the catalog, as CI prints them (the GitHub workflow and the
//! GitLab job), without building the instructors' class view.

use std::path::Path;
use std::process::ExitCode;

use kata_runner::points;
use kata_runner::report;
use kata_runner::runner::Entry;

use super::{Done, Refusal};

pub fn points(lessons: &[Entry], file: &Path) -> Done {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Refusal(format!("cannot read {}: {e}", file.display())))?;
    let report = report::parse(&text).map_err(|e| Refusal(format!("{}: {e}", file.display())))?;
    let who = report.learner.clone().unwrap_or_else(|| {
        file.file_stem()
            .map_or("?".into(), |s| s.to_string_lossy().into_owned())
    });
    print!("{}", points::table(lessons, &who, &report));
    Ok(ExitCode::SUCCESS)
}
