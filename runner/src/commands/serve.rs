//! `cargo run -- serve`: an API wearing the learner's layer of lesson 07,
//! built by the demo crate (`demo/`).

use std::path::Path;

use kata_runner::runner::Entry;
use kata_runner::suite;

use super::{exit_code, Done, Refusal};

/// `cargo run -- serve`: the demo crate's `serve` binary, built with only
/// the serving lesson's file in it (the learner's, or the reference's), in
/// the foreground, its output straight to the terminal.
pub fn serve(
    root: &Path,
    lessons: &[Entry],
    reference: bool,
    port: u16,
    servers: Option<(u8, bool)>,
) -> Done {
    // `--servers N`: the lesson whose whole stack serves as app servers;
    // else the lesson whose layer serves.
    use kata_catalog::Serves;
    let wanted = match servers {
        Some(_) => Serves::Stack,
        None => Serves::Layer,
    };
    let entry = lessons
        .iter()
        .find(|e| e.kind.serves() == Some(wanted))
        .ok_or_else(|| {
            Refusal(match servers {
                Some(_) => "no lesson of this kata serves its whole stack as app servers".into(),
                None => "no lesson of this kata is of a kind that serves (an HTTP layer)".into(),
            })
        })?;
    println!(
        "building {} ({}) ...",
        entry.name,
        match (reference, servers) {
            (true, None) => "the reference's layer",
            (false, None) => "your layer",
            (true, Some(_)) => "the reference's layer and limiter",
            (false, Some(_)) => "your layer and limiter",
        }
    );
    let mut args = vec!["--port".to_string(), port.to_string()];
    if let Some((n, cluster)) = servers {
        args.extend(["--servers".to_string(), n.to_string()]);
        if cluster {
            args.push("--cluster".into());
        }
    }
    // The demo crate of this runner's kata, over the kata being served.
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/Cargo.toml");
    let mut command = std::process::Command::new(suite::cargo());
    command
        .current_dir(root)
        .arg("run")
        .arg("--quiet")
        .arg("--manifest-path")
        .arg(&demo)
        .args(["--bin", "serve", "--"])
        .args(&args)
        .env("KATA_DEMO_ROOT", root)
        .env(
            "KATA_DEMO_LESSON",
            if servers.is_some() {
                entry.number.to_string()
            } else {
                String::new()
            },
        )
        .env(
            "KATA_DEMO_SUBJECT",
            if reference { "reference" } else { "learner" },
        )
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
    // The server's lines, as they come.
    if let Some(out) = child.stdout.take() {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
        }
    }
    let status = child
        .wait()
        .map_err(|e| Refusal(format!("could not wait for cargo: {e}")))?;
    Ok(exit_code(status))
}
