//! `cargo run -- class PATH` (which runs this binary through cargo):
//! a whole class at a glance, or, with `--points`, each learner's points as
//! CI prints them. Exits 1 when a checkout could not run, 2 on a refusal.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use kata_class::{self as class, Limits, Options};
use kata_runner::progress::spinner;
use kata_runner::report;
use kata_runner::runner::{self, Entry};

/// The class view's arguments.
#[derive(Parser)]
#[command(
    name = "cargo run -- class",
    about = "A whole class at a glance: from a folder of reports (`report --json` files), \
             CI artifacts or learners' checkouts (run in a sandbox), or all three. Prints \
             a table and writes a self-contained HTML page; with --points, each learner's points."
)]
struct ClassArgs {
    /// The kata's folder (default: the one this crate is in).
    #[arg(long, env = "KATA_ROOT", hide_env = true)]
    root: Option<PathBuf>,
    /// A folder of reports (`report --json` files), CI artifacts (zip
    /// archives, or folders with a report.json) and learners' checkouts;
    /// or one report or artifact.
    #[arg(required_unless_present = "report_of")]
    path: Option<PathBuf>,
    /// Where to write the page (default: class.html in the folder).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Print each learner's points, milestone by milestone (what CI prints),
    /// and write no page.
    #[arg(long)]
    points: bool,
    /// How long one learner's checkout may run, build included, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 1800,
          value_parser = clap::value_parser!(u64).range(1..))]
    time_limit: u64,
    /// How much memory (data) each process of a checkout's run may take, in MiB.
    #[arg(long, value_name = "MIB", default_value_t = 4096,
          value_parser = clap::value_parser!(u64).range(256..))]
    memory_limit: u64,
    /// Where no sandbox works: run the checkouts anyway, without one. Their
    /// code then runs with your rights and can read, change and send
    /// anything you can.
    #[arg(long)]
    run_untrusted_code_as_me: bool,
    /// What a checkout's run does in its sandbox: the kata's report as JSON,
    /// under the learner's name; exit code 1 when a started lesson fails.
    #[arg(long, hide = true, value_name = "NAME")]
    report_of: Option<String>,
}

/// A failure of the command itself: a message and exit code 2.
struct Refusal(String);

fn main() -> ExitCode {
    // Piped into a reader that stops (`| head`): end quietly, as the runner
    // does, rather than panic on a closed pipe.
    #[cfg(unix)]
    // SAFETY: restoring the default action of a signal, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let args = ClassArgs::parse();
    let root = args
        .root
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let root = root.canonicalize().unwrap_or(root);
    let done = runner::lessons(&root).map_err(Refusal).and_then(|lessons| {
        match (args.report_of.clone(), args.path.clone()) {
            (Some(name), _) => report_of(&root, &lessons, name),
            (None, Some(path)) => class(&root, &lessons, &path, args),
            (None, None) => Err(Refusal("give the class's folder (PATH)".into())),
        }
    });
    match done {
        Ok(code) => code,
        Err(Refusal(message)) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

/// One checkout's report, as JSON on standard output: what each checkout's
/// run prints, read back by [`class::collect`].
fn report_of(root: &Path, lessons: &[Entry], name: String) -> Result<ExitCode, Refusal> {
    let report = report::make(
        root,
        lessons,
        report::learner_name(root, Some(name)),
        |_| {},
    );
    let text = serde_json::to_string_pretty(&report)
        .map_err(|e| Refusal(format!("cannot write the report: {e}")))?;
    println!("{text}");
    Ok(if report::all_started_pass(&report) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The class view, for instructors. Exits 1 when a checkout could not run.
fn class(
    root: &Path,
    lessons: &[Entry],
    path: &Path,
    args: ClassArgs,
) -> Result<ExitCode, Refusal> {
    let options = Options {
        limits: Limits {
            time: Duration::from_secs(args.time_limit),
            memory_mib: args.memory_limit,
        },
        unsandboxed: args.run_untrusted_code_as_me,
    };
    let bar = spinner("reading the class".into());
    let found = class::collect(root, lessons, path, &options, |what| {
        bar.set_message(what.to_string())
    });
    bar.finish_and_clear();
    let found = found.map_err(Refusal)?;
    for note in &found.left_out {
        eprintln!("{}", class::printable(note));
    }
    for warning in &found.warnings {
        eprintln!("warning: {}", class::printable(warning));
    }
    let code = if found.not_run.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    };
    if args.points {
        print!("{}", class::points_tables(lessons, &found));
        return Ok(code);
    }
    print!("{}", class::table(lessons, &found));
    let folder = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ".".into())
    };
    let page = args.html.unwrap_or_else(|| folder.join("class.html"));
    std::fs::write(&page, class::html(lessons, &found))
        .map_err(|e| Refusal(format!("cannot write {}: {e}", page.display())))?;
    println!("\nthe page for a projector: {}", page.display());
    Ok(code)
}
