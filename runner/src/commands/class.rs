//! `cargo run -- class …`: the class view, for instructors. It is a crate
//! of its own (`class-view/`, `kata-class`): its sandbox, archive reader and
//! grading writer are no part of the learner's runner, which only builds
//! and starts it, the first time an instructor asks.

use std::ffi::OsString;
use std::path::Path;

use kata_runner::suite;

use super::{exit_code, Done, Refusal};

/// `cargo run -p kata-class -- --root ROOT ARGS…` with the class crate
/// beside this runner (ROOT may be another kata: the class view reads its
/// catalog), its exit code the runner's.
pub fn class(root: &Path, args: &[OsString]) -> Done {
    let kata = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = kata.join("class-view").join("Cargo.toml");
    if !manifest.exists() {
        return Err(Refusal(format!(
            "{} has no class-view/ crate: the class view is the instructors' tool",
            kata.display()
        )));
    }
    let status = std::process::Command::new(suite::cargo())
        .current_dir(&kata)
        .arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--bin", "kata-class", "--", "--root"])
        .arg(root)
        .args(args)
        .status()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    Ok(exit_code(status))
}
