//! `cargo run -- serve`: an API wearing the learner's layer of lesson 07.

use std::path::Path;

use kata_runner::runner::Entry;
use kata_runner::suite;

use super::{exit_code, Done, Refusal};

/// `cargo run -- serve`: the lesson 07 test binary's demo server, in the
/// foreground, its output straight to the terminal.
pub fn serve(root: &Path, lessons: &[Entry], reference: bool, port: u16) -> Done {
    let entry = lessons
        .iter()
        .find(|e| e.kind.serves())
        .ok_or_else(|| Refusal("no lesson of this kata is an HTTP layer".into()))?;
    let subject = if reference { "reference" } else { "learner" };
    println!(
        "building {} ({}) ...",
        entry.name,
        if reference {
            "the reference's layer"
        } else {
            "your layer"
        }
    );
    let mut command = std::process::Command::new(suite::cargo());
    command
        .current_dir(root)
        .args(["test", "--quiet", "--test", &entry.name, "--"])
        .args(["--ignored", "--exact", "demo_server", "--nocapture"])
        .env("KATA_SUBJECT", subject)
        .env("KATA_SERVE_PORT", port.to_string())
        .env("RUST_BACKTRACE", "0")
        .stdout(std::process::Stdio::piped());
    // Stopped with the runner, however the runner is stopped: cargo gets
    // SIGTERM when the runner dies, and the server stops when cargo does.
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
    let mut child = command
        .spawn()
        .map_err(|e| Refusal(format!("could not run cargo: {e}")))?;
    // The server's lines, without libtest's around them.
    if let Some(out) = child.stdout.take() {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let libtest = line.starts_with("running ")
                || line.starts_with("test ")
                || line.starts_with("test result:")
                || line.trim().is_empty();
            if !libtest {
                println!("{line}");
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Refusal(format!("could not wait for cargo: {e}")))?;
    Ok(exit_code(status))
}
