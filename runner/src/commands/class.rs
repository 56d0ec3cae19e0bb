//! `cargo run -- class PATH`: a whole class at a glance, or, with
//! `--points`, each learner's points as CI prints them.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use kata_runner::class::{self, Limits, Options};
use kata_runner::runner::Entry;

use super::{spinner, Done, Refusal};

/// The class command's arguments.
#[derive(clap::Args)]
pub struct ClassArgs {
    /// A folder of reports (`report --json` files), CI artifacts (zip
    /// archives, or folders with a report.json) and learners' checkouts;
    /// or one report or artifact.
    path: PathBuf,
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
}

/// The class view, for instructors. Exits 1 when a checkout could not run.
pub fn class(root: &Path, lessons: &[Entry], args: ClassArgs) -> Done {
    let options = Options {
        limits: Limits {
            time: Duration::from_secs(args.time_limit),
            memory_mib: args.memory_limit,
        },
        unsandboxed: args.run_untrusted_code_as_me,
    };
    let bar = spinner("reading the class".into());
    let found = class::collect(root, lessons, &args.path, &options, |what| {
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
    let folder = if args.path.is_dir() {
        args.path.clone()
    } else {
        args.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| ".".into())
    };
    let page = args.html.unwrap_or_else(|| folder.join("class.html"));
    std::fs::write(&page, class::html(lessons, &found))
        .map_err(|e| Refusal(format!("cannot write {}: {e}", page.display())))?;
    println!("\nthe page for a projector: {}", page.display());
    Ok(code)
}
