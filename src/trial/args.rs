//! The arguments a lesson's test binary takes: libtest's, those that mean
//! something for a list of trials.

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `test NAME ... ok`, a line per check.
    Pretty,
    /// A character per check (`-q`, `--quiet`).
    Terse,
}

/// What `cargo test --test lesson_NN -- ARGS` asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Args {
    /// Checks whose name contains one of these (or is one, with `exact`).
    pub filters: Vec<String>,
    pub skip: Vec<String>,
    pub exact: bool,
    pub list: bool,
    /// Only the ignored checks (`--ignored`), or every one
    /// (`--include-ignored`).
    pub ignored: bool,
    pub include_ignored: bool,
    pub nocapture: bool,
    pub show_output: bool,
    pub threads: Option<usize>,
    pub format: Format,
    pub color: Option<bool>,
}

const USAGE: &str = "Usage: lesson_NN [OPTIONS] [FILTERS...]

Options:
        --include-ignored  Run ignored and not ignored tests
        --ignored          Run only ignored tests
        --test-threads n_threads
                           Number of threads used for running tests in parallel
        --skip FILTER      Skip tests whose names contain FILTER (this flag can
                           be used multiple times)
        --list             List all tests and benchmarks
        --exact            Exactly match filters rather than by substring
        --nocapture        don't capture stdout/stderr of each task, allow
                           printing directly
        --show-output      Show captured stdout of successful tests
        --format pretty|terse
                           Configure formatting of output
    -q, --quiet            Display one character per test instead of one line
        --color auto|always|never
                           Configure coloring of output
    -h, --help             Display this message
";

impl Args {
    /// Reads `args` (without the program's name). `Err` is what to print
    /// and the exit code: the usage for `--help` (0), a sentence for an
    /// argument that is not understood (101, as libtest).
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, (String, u8)> {
        let mut parsed = Args {
            filters: vec![],
            skip: vec![],
            exact: false,
            list: false,
            ignored: false,
            include_ignored: false,
            nocapture: std::env::var_os("RUST_TEST_NOCAPTURE").is_some_and(|v| v != "0"),
            show_output: false,
            threads: None,
            format: Format::Pretty,
            color: None,
        };
        let mut args = args.into_iter();
        let refused = |what: String| Err((format!("error: {what}\n\n{USAGE}"), 101));
        while let Some(arg) = args.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
                _ => (arg.clone(), None),
            };
            let mut value = |name: &str| -> Result<String, (String, u8)> {
                inline
                    .clone()
                    .or_else(|| args.next())
                    .ok_or_else(|| (format!("error: {name} needs a value\n\n{USAGE}"), 101))
            };
            match flag.as_str() {
                "-h" | "--help" => return Err((USAGE.to_string(), 0)),
                // What IDEs pass to ask for libtest's unstable options; the
                // options themselves are refused one by one.
                "-Z" => {
                    value("-Z")?;
                }
                "--exact" => parsed.exact = true,
                "--list" => parsed.list = true,
                "--ignored" => parsed.ignored = true,
                "--include-ignored" => parsed.include_ignored = true,
                "--nocapture" | "--no-capture" => parsed.nocapture = true,
                "--show-output" => parsed.show_output = true,
                "-q" | "--quiet" => parsed.format = Format::Terse,
                "--skip" => parsed.skip.push(value("--skip")?),
                "--test-threads" => {
                    let n = value("--test-threads")?;
                    match n.parse::<usize>() {
                        Ok(n) if n > 0 => parsed.threads = Some(n),
                        _ => {
                            return refused(format!(
                                "argument for --test-threads must be a number > 0 (error: {n})"
                            ))
                        }
                    }
                }
                "--format" => match value("--format")?.as_str() {
                    "pretty" => parsed.format = Format::Pretty,
                    "terse" => parsed.format = Format::Terse,
                    other => {
                        return refused(format!(
                            "argument for --format must be pretty or terse (was {other}); \
                             the results as JSON lines go to the file KATA_RESULTS names"
                        ))
                    }
                },
                "--color" => {
                    parsed.color = match value("--color")?.as_str() {
                        "auto" => None,
                        "always" => Some(true),
                        "never" => Some(false),
                        other => {
                            return refused(format!(
                                "argument for --color must be auto, always, or never (was {other})"
                            ))
                        }
                    }
                }
                // What cargo passes to every test binary, meaning nothing here.
                "--bench" | "--test" => {}
                _ if flag.starts_with('-') => {
                    return refused(format!(
                        "Unrecognized option: '{}'",
                        flag.trim_start_matches('-')
                    ))
                }
                _ => parsed.filters.push(arg),
            }
        }
        Ok(parsed)
    }

    /// Whether a check of this name is selected by the filters and not
    /// skipped.
    pub fn selects(&self, name: &str) -> bool {
        let matches = |filter: &String| match self.exact {
            true => name == filter,
            false => name.contains(filter.as_str()),
        };
        (self.filters.is_empty() || self.filters.iter().any(matches))
            && !self.skip.iter().any(matches)
    }

    /// The number of checks to run at once: `--test-threads`, then
    /// `RUST_TEST_THREADS`, then the cores.
    pub fn threads(&self) -> usize {
        self.threads
            .or_else(|| {
                std::env::var("RUST_TEST_THREADS")
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n > 0)
            })
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}
