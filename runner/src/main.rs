//! The runner: `cargo run` guides a learner through the kata.
//!
//! With no arguments it shows every lesson's state and the next step; the
//! subcommands run, watch, compare, hint, reset, bench, report and class.
//! Every state comes from running the lessons' tests (or from the kept
//! outcome of a run whose inputs did not change), never from a progress file.
//!
//! Here: the command line (clap's definitions) and the dispatch; each
//! command is a file of `commands/`.

mod commands;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use commands::{
    bench, class, compare, find, hint, load, points, reach, report, reset, serve, status,
    summarize, watch, Refusal,
};
use kata_runner::forward::class_root;
use kata_runner::runner;

#[derive(Parser)]
#[command(
    name = "cargo run --",
    about = "The ratelimit kata: build rate limiters lesson by lesson.",
    long_about = "The ratelimit kata: build rate limiters lesson by lesson.\n\n\
                  With no command: every lesson's state and what to do next."
)]
struct Cli {
    /// The kata's folder (default: this one).
    #[arg(long, global = true, env = "KATA_ROOT", hide_env = true)]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Re-run a lesson's tests whenever its file is saved (or on Enter); q then Enter quits.
    Watch {
        /// The lesson's number (default: the first one not passed).
        lesson: Option<u32>,
        /// Run every check each time, not only up to the first tier that fails.
        #[arg(long)]
        all: bool,
    },
    /// Run one lesson's tests milestone by milestone and tier by tier (quick
    /// checks, properties, races, slow checks), showing each tier as it ends
    /// and stopping after the first tier that fails.
    Test {
        lesson: u32,
        /// Show every failing check's whole message.
        #[arg(long)]
        details: bool,
        /// Run every check, past a tier that fails.
        #[arg(long)]
        all: bool,
        /// Only milestones 1 to K; exits 0 when they are all reached.
        #[arg(long, value_name = "K")]
        milestone: Option<usize>,
    },
    /// Show the next hint of a lesson (one more each time), or hint K again.
    Hint {
        lesson: u32,
        /// Show this hint (1, 2, …) again instead of the next one.
        which: Option<usize>,
    },
    /// Your answers next to the reference's, for a named timeline or your own
    /// requests ("a@0 a@0 a@1"); the first difference is marked.
    Compare {
        lesson: u32,
        /// first_look (default), boundary_burst, burst_then_steady, two_keys,
        /// long_idle_gap, exact_edges; a timeline as a failure prints it
        /// ("L=1 W=2ns: b@3 b@3"); or requests alone, like "a@0 a@0 a@1".
        timeline: Option<String>,
    },
    /// Put the lesson's stub back, keeping your file (every earlier version,
    /// numbered) in lessons/backups/.
    Reset { lesson: u32 },
    /// Time your limiter of lesson N against the reference (and governor for
    /// the token bucket and GCRA), optimised build, ns per decision; for
    /// lesson 07, your layer against the reference's and tower_governor's.
    Bench { lesson: u32 },
    /// Serve an API wearing your layer of lesson 07 on a loopback port, to
    /// try with curl; prints the URL and curl lines. Stop with Ctrl-C. With
    /// --servers N, your whole stack of lesson 10 (its layer over its
    /// limiter) as N app server processes on one Redis the runner starts
    /// (or one Redis Cluster, with --cluster).
    Serve {
        /// The reference's file instead of yours.
        #[arg(long)]
        reference: bool,
        /// The port on 127.0.0.1 (0 picks a free one); app servers pick
        /// free ports of their own.
        #[arg(long, default_value_t = 3000)]
        port: u16,
        /// Lesson 10's stack as this many app server processes (1 to 8).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..=8))]
        servers: Option<u8>,
        /// With --servers: on a Redis Cluster of three masters with a
        /// replica each, not one redis-server.
        #[arg(long, requires = "servers")]
        cluster: bool,
    },
    /// Validate a running server under load: one client's requests to a
    /// loopback URL at a steady rate for a few seconds, then per second how
    /// many were admitted against what the policy the server announces
    /// (`RateLimit-Policy`) allows, and a verdict. Exits 0 on PASS, 1 on FAIL.
    Load {
        /// The URL, on 127.0.0.1, ::1 or localhost (`cargo run -- serve` prints one).
        #[arg(required_unless_present = "targets", conflicts_with = "targets")]
        url: Option<String>,
        /// Several URLs, comma-separated, one service's app servers: the
        /// client's requests go to each in turn, and the verdict is the
        /// whole service's (`cargo run -- serve --servers N` prints them).
        #[arg(long, value_delimiter = ',', value_name = "URL,URL,…")]
        targets: Vec<String>,
        /// Requests per second (1 to 1000).
        #[arg(long, default_value_t = 20)]
        rate: u32,
        /// How long, in seconds (1 to 60).
        #[arg(long, default_value_t = 5)]
        seconds: u32,
    },
    /// A whole class at a glance, for instructors: from a folder of reports
    /// (`report --json` files), CI artifacts or learners' checkouts (run in a
    /// sandbox), or all three. Prints a table and writes a self-contained
    /// HTML page; with --points, each learner's points. The instructors'
    /// crate `kata-class`, built the first time (`class --help`: its options).
    #[command(disable_help_flag = true)]
    Class {
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "PATH AND OPTIONS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// One report's points, milestone by milestone of the catalog: what CI
    /// prints after `report --json`.
    Points {
        /// The report (`report --json` written to a file).
        report: PathBuf,
    },
    /// Every lesson's state and failing checks, for instructors. Exits 0
    /// when every lesson started passes, 1 otherwise.
    Report {
        /// As JSON (its schema: lessons/runner.md, "The report").
        #[arg(long)]
        json: bool,
        /// The learner's name (default: git's user.name).
        #[arg(long)]
        name: Option<String>,
    },
}

fn main() -> ExitCode {
    // Output piped into `head` and closed early ends the runner quietly, as
    // it does any Unix tool, instead of a panic about a broken pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default action of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let mut cli = Cli::parse();
    // `class` hands the rest of its line to the class view: a `--root` there
    // is still the runner's.
    if let Some(Command::Class { args }) = &mut cli.command {
        if let Some(root) = class_root(args) {
            cli.root = Some(root);
        }
    }
    // The kata is the folder above this crate (`runner/`), unless told.
    let root = cli
        .root
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let root = root.canonicalize().unwrap_or(root);
    let done = runner::lessons(&root)
        .map_err(Refusal)
        .and_then(|lessons| match cli.command {
            None => status(&root, &lessons),
            Some(Command::Watch { lesson, all }) => watch(&root, &lessons, lesson, all),
            Some(Command::Test {
                lesson,
                details,
                all,
                milestone,
            }) => find(&lessons, lesson).and_then(|entry| {
                let reach = reach(entry, all, milestone)?;
                Ok(summarize(&root, entry, details, reach))
            }),
            Some(Command::Hint { lesson, which }) => {
                find(&lessons, lesson).and_then(|e| hint(&root, e, which))
            }
            Some(Command::Compare { lesson, timeline }) => {
                find(&lessons, lesson).and_then(|e| compare(&root, e, timeline))
            }
            Some(Command::Reset { lesson }) => find(&lessons, lesson).and_then(|e| reset(&root, e)),
            Some(Command::Report { json, name }) => report(&root, &lessons, json, name),
            Some(Command::Class { args }) => class(&root, &args),
            Some(Command::Points { report }) => points(&lessons, &report),
            Some(Command::Bench { lesson }) => find(&lessons, lesson).and_then(|e| bench(&root, e)),
            Some(Command::Serve {
                reference,
                port,
                servers,
                cluster,
            }) => serve(
                &root,
                &lessons,
                reference,
                port,
                servers.map(|n| (n, cluster)),
            ),
            Some(Command::Load {
                url,
                targets,
                rate,
                seconds,
            }) => load(url.map_or(targets, |u| vec![u]), rate, seconds),
        });
    match done {
        Ok(code) => code,
        Err(Refusal(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}
