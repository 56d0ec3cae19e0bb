//! `cargo run -- reset N`: the lesson's stub back, the learner's file kept.

use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry};

use super::{Done, Refusal};

pub fn reset(root: &Path, entry: &Entry) -> Done {
    let file = entry.file(root);
    let stub = std::fs::read(entry.stub(root)).map_err(|e| {
        Refusal(format!(
            "cannot read the stub lessons/stubs/{}.rs: {e}",
            entry.name
        ))
    })?;
    // Every version that is not the stub is kept, numbered, never overwritten.
    let mine = std::fs::read(&file).ok();
    if let Some(mine) = mine.filter(|mine| *mine != stub) {
        let backup = runner::next_backup(root, &entry.name);
        if let Some(dir) = backup.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                Refusal(format!(
                    "cannot make {}: {e}; nothing was changed",
                    dir.display()
                ))
            })?;
        }
        std::fs::write(&backup, mine).map_err(|e| {
            Refusal(format!(
                "cannot keep a backup at {}: {e}; nothing was changed",
                backup.display()
            ))
        })?;
        let shown = backup.strip_prefix(root).unwrap_or(&backup);
        println!(
            "your file is kept at {} (to bring it back: cp {} lessons/{}.rs)",
            shown.display(),
            shown.display(),
            entry.name
        );
    } else {
        println!(
            "lessons/{}.rs was already the stub: nothing to keep",
            entry.name
        );
    }
    std::fs::write(&file, stub)
        .map_err(|e| Refusal(format!("cannot write lessons/{}.rs: {e}", entry.name)))?;
    println!("lessons/{}.rs is the stub again", entry.name);
    Ok(ExitCode::SUCCESS)
}
