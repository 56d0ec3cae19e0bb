//! `cargo run -p kata-class --bin autograding -- [--write]`: GitHub
//! Classroom's autograding workflow for this kata's lessons, a grader per
//! milestone; printed, or with `--write` written to
//! `.github/workflows/classroom.yml` (run it when the milestones change: a
//! test fails while the file is not what this writes).

use std::path::Path;
use std::process::ExitCode;

use kata_class::workflow;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let write = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--write") => true,
        Some(other) => {
            eprintln!("error: unknown argument {other:?}; the only one is --write");
            return ExitCode::from(2);
        }
    };
    let lessons = match kata_runner::runner::lessons(&root) {
        Ok(lessons) => lessons,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let text = workflow::github(&lessons);
    if !write {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    let path = root.join(workflow::GITHUB);
    if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
        println!("{} is up to date", workflow::GITHUB);
        return ExitCode::SUCCESS;
    }
    let written = path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&path, &text));
    match written {
        Ok(()) => {
            println!("wrote {}", workflow::GITHUB);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: cannot write {}: {e}", path.display());
            ExitCode::FAILURE
        }
    }
}
