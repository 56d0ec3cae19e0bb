//! Writes and reads the gallery's mistakes (`mistakes/lesson_NN/<name>.diff`,
//! see `kata_catalog::mistake`):
//!
//! ```sh
//! cargo run -p kata-catalog --bin mistake -- show 7 <name> > /tmp/m.rs   # the mistake as a whole file
//! cargo run -p kata-catalog --bin mistake -- save 7 <name> /tmp/m.rs     # back into its diff
//! ```
//!
//! To write a new one, copy `solutions/lesson_NN.rs`, put the bug in it and
//! its explanation as the file's leading `//!` lines (with the `//! Shows:`
//! lines its failure must print), then `save` it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kata_catalog::mistake::{self, Mistake};

const USAGE: &str = "usage: mistake show LESSON NAME | mistake save LESSON NAME EDITED_FILE\n\
                     (LESSON: 7, 07 or lesson_07)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match run(&root, &args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(2)
        }
    }
}

fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let (command, lesson, name) = match args {
        [c, l, n, ..] => (c.as_str(), lesson_name(l)?, n.as_str()),
        _ => return Err(USAGE.into()),
    };
    if !kata_catalog::is_subject_name(name) {
        return Err(format!(
            "{name:?} cannot name a mistake: it must be a Rust identifier, and not one of the \
             names the lesson's test binary already uses ({})",
            kata_catalog::RESERVED.join(", ")
        ));
    }
    let reference_path = format!("solutions/{lesson}.rs");
    let mistake_path = format!("mistakes/{lesson}/{name}.diff");
    let applied_path = format!("target/mistakes/{lesson}/{name}.rs");
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
    };
    let reference = read(&root.join(&reference_path))?;
    match (command, &args[3..]) {
        ("show", []) => {
            let text = read(&root.join(&mistake_path))?;
            let applied = Mistake::parse(&text)
                .and_then(|m| m.apply(&reference))
                .map_err(|e| format!("{mistake_path}: {e}"))?;
            print!("{applied}");
            Ok(())
        }
        ("save", [edited]) => {
            let edited = read(&PathBuf::from(edited))?;
            let text = mistake::write(&reference, &edited, &reference_path, &applied_path)?;
            // What is saved must give back the file it was saved from.
            let back = Mistake::parse(&text).and_then(|m| m.apply(&reference))?;
            if back != edited {
                return Err(format!(
                    "{mistake_path} would not give back the edited file (does it end without a \
                     newline, or with blank lines?); nothing written"
                ));
            }
            let file = root.join(&mistake_path);
            std::fs::create_dir_all(file.parent().expect("a file in a folder"))
                .and_then(|()| std::fs::write(&file, text))
                .map_err(|e| format!("cannot write {mistake_path}: {e}"))?;
            eprintln!("wrote {mistake_path}");
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

/// `7`, `07` or `lesson_07` → `lesson_07`.
fn lesson_name(text: &str) -> Result<String, String> {
    let digits = text.strip_prefix("lesson_").unwrap_or(text);
    digits
        .parse::<u32>()
        .map(|n| format!("lesson_{n:02}"))
        .map_err(|_| format!("{text:?} is not a lesson number\n{USAGE}"))
}
