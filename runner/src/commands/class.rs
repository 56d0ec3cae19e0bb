//! `cargo run -- class …`: the class view, for instructors. It is a crate
//! of its own (`class-view/`, `kata-class`): its sandbox, archive reader and
//! grading writer are no part of the learner's runner, which only builds
//! and starts it, the first time an instructor asks.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use kata_runner::suite;

use super::{Done, Refusal};

/// `cargo run --manifest-path class-view/Cargo.toml --bin kata-class --
/// --root ROOT ARGS…`, the class crate beside this runner (ROOT may be
/// another kata: the class view reads its catalog), in the caller's folder
/// (a relative PATH is the caller's), its exit code the runner's: 2 for a
/// refusal, 1 when a checkout could not run. Cargo's build shows on a
/// terminal, the first time a minute or two.
pub fn class(root: &Path, args: &[OsString]) -> Done {
    let kata = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = kata.join("class-view").join("Cargo.toml");
    if !manifest.exists() {
        return Err(Refusal(format!(
            "{} has no class-view/ crate: the class view is the instructors' tool",
            kata.display()
        )));
    }
    let mut cargo = std::process::Command::new(suite::cargo());
    cargo.arg("run");
    if !std::io::stderr().is_terminal() {
        cargo.arg("--quiet");
    }
    let status = cargo
        .arg("--manifest-path")
        .arg(&manifest)
        .args(["--bin", "kata-class", "--", "--root"])
        .arg(root)
        .args(args)
        .status()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Ended by a signal.
        None => ExitCode::FAILURE,
    })
}
