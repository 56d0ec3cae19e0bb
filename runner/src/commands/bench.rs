//! `cargo run -- bench N`: the learner's limiter timed against the
//! reference's.

use std::path::Path;

use kata_runner::runner::Entry;
use kata_runner::suite;

use super::{exit_code, Done, Refusal};

/// `cargo run -- bench N`: the bench crate's `versus` binary, built with
/// only this lesson's learner file in it, in release mode.
pub fn bench(root: &Path, entry: &Entry) -> Done {
    if !entry.kind.measured() {
        let why = if entry.kind.needs_redis() {
            "its cost is a round trip to Redis, which it does not measure yet"
        } else {
            "it does not measure this kind of lesson"
        };
        return Err(Refusal(format!(
            "`bench` measures limiters in memory; {}: {why}",
            entry.name
        )));
    }
    if !root.join("bench").join("Cargo.toml").exists() {
        return Err(Refusal(format!(
            "{} has no bench/ crate to measure with",
            root.display()
        )));
    }
    println!(
        "building lessons/{}.rs, the reference and any going-further solution in release mode (the first time takes a few minutes) ...",
        entry.name
    );
    let status = std::process::Command::new(suite::cargo())
        .current_dir(root)
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "ratelimit-kata-bench",
            "--bin",
            "versus",
        ])
        .env("KATA_BENCH_LESSON", entry.number.to_string())
        .env("RUST_BACKTRACE", "0")
        .status()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    Ok(exit_code(status))
}
