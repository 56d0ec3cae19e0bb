//! `cargo run -- class FOLDER`: a whole class at a glance.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kata_runner::runner::Entry;

use super::{spinner, Done, Refusal};

/// The class view, for instructors.
pub fn class(root: &Path, lessons: &[Entry], dir: &Path, html: Option<PathBuf>) -> Done {
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
