//! The instructors' report (`cargo run -- report --json`): who, when, and
//! where each lesson stands, in a form a class view can collect. A lesson
//! whose files did not change since the last run is not run again: its
//! outcome is kept in `.kata/cache/`, keyed by a hash of everything the run
//! depends on (the files, the compiler, the settings).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::runner::{self, Entry, State};
use crate::state;
use crate::suite::{self, Check, Failure, Outcome};

pub const SCHEMA: &str = "ratelimit-kata/report/2";

/// One learner's kata at one moment.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct Report {
    pub schema: String,
    /// `--name`, or git's `user.name`, or null.
    pub learner: Option<String>,
    /// When the report was made, UTC (`2026-12-01T12:34:56Z`).
    pub when: String,
    /// The checkout's commit, when it is a git checkout.
    pub commit: Option<String>,
    pub lessons: Vec<LessonReport>,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct LessonReport {
    pub number: u32,
    pub name: String,
    pub title: String,
    /// `not_started`, `does_not_compile`, `timed_out`, `failing` or `passed`.
    pub state: String,
    /// A hash of the learner's file (`fnv1a64:0123456789abcdef`).
    pub file: String,
    pub hints_shown: usize,
    pub checks: usize,
    pub failed: usize,
    /// The most telling failure, in one line (failing and timed-out lessons).
    pub first_failure: Option<String>,
    /// The compiler's first error (lessons that do not compile).
    pub compiler_error: Option<String>,
    /// Every failing check; empty for a lesson not started.
    pub failing: Vec<FailingCheck>,
    /// The lesson's milestones, in order, each reached or not; empty for a
    /// lesson without milestones (and in reports made before milestones).
    #[serde(default)]
    pub milestones: Vec<MilestoneReport>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct MilestoneReport {
    pub number: usize,
    pub title: String,
    /// Whether its checks, and every earlier milestone's, all passed.
    pub reached: bool,
}

#[derive(Serialize, Deserialize, Debug, Clone)]
pub struct FailingCheck {
    pub name: String,
    /// `example`, `config`, `property`, `snapshot`, `loom` or `source`.
    pub kind: String,
}

impl LessonReport {
    pub fn new(root: &Path, entry: &Entry, state: &State, outcome: &Outcome) -> LessonReport {
        let started = *state != State::NotStarted;
        LessonReport {
            number: entry.number,
            name: entry.name.clone(),
            title: entry.title.clone(),
            state: state.id().to_string(),
            file: format!(
                "fnv1a64:{:016x}",
                fnv1a64(&std::fs::read(entry.file(root)).unwrap_or_default())
            ),
            hints_shown: state::hints_shown(root, &entry.name),
            checks: outcome.tests.len(),
            // A lesson not started fails by design: nothing to count.
            failed: if started { outcome.failed().count() } else { 0 },
            first_failure: match state {
                State::Failing | State::TimedOut => one_line_failure(&outcome.failures),
                _ => None,
            },
            compiler_error: match state {
                State::DoesNotCompile(errors) => first_error(errors),
                _ => None,
            },
            milestones: {
                let reached = if started {
                    runner::milestones_reached(entry, outcome)
                } else {
                    0
                };
                entry
                    .milestones
                    .iter()
                    .map(|m| MilestoneReport {
                        number: m.number,
                        title: m.title.clone(),
                        reached: m.number <= reached,
                    })
                    .collect()
            },
            failing: if started {
                outcome
                    .failed()
                    .map(|name| FailingCheck {
                        name: name.to_string(),
                        kind: Check::of(name).name().to_string(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

/// The most telling failure as one line: `test name: first line of its message`.
pub fn one_line_failure(failures: &[Failure]) -> Option<String> {
    let text = runner::first_failure(failures, 200)?;
    let mut lines = text.lines();
    let name = lines
        .next()?
        .trim_start_matches("---- ")
        .trim_end_matches(" stdout ----")
        .to_string();
    let message = lines
        .map(str::trim)
        .find(|l| {
            !l.is_empty()
                && !l.starts_with("thread '")
                && !l.starts_with("loom explored")
                && !l.starts_with("note:")
        })
        .unwrap_or("");
    Some(format!("{name}: {message}"))
}

/// The first compiler error with its place: `error[E0308]: mismatched types
/// --> lessons/lesson_02.rs:3:5`.
pub fn first_error(errors: &str) -> Option<String> {
    let mut lines = errors.lines().skip_while(|l| !l.starts_with("error"));
    let first = lines.next()?.trim().to_string();
    match lines.find(|l| l.trim_start().starts_with("-->")) {
        Some(place) => Some(format!("{first} {}", place.trim())),
        None => Some(first),
    }
}

/// FNV-1a, 64 bits: a stable hash with no dependency, for telling files apart.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `2026-12-01T12:34:56Z`, from the system clock.
pub fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// Seconds since the epoch of a time written by [`now_utc`].
pub fn parse_utc(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let n = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (n(0..4)?, n(5..7)?, n(8..10)?);
    let (h, min, s) = (n(11..13)?, n(14..16)?, n(17..19)?);
    Some(days_from_civil(y, m, d) * 86_400 + h * 3_600 + min * 60 + s)
}

/// Howard Hinnant's days-to-civil: the calendar date of a day number.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The day number of a calendar date (the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `--name`, else git's `user.name` in the kata's folder.
pub fn learner_name(root: &Path, given: Option<String>) -> Option<String> {
    given.or_else(|| git(root, &["config", "user.name"]))
}

/// The checkout's commit, if it is one.
pub fn commit(root: &Path) -> Option<String> {
    git(root, &["rev-parse", "HEAD"])
}

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .current_dir(root)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

// ------------------------------------------------------------------ caching

/// What a cached run is valid for: the learner's file, the lesson's stub,
/// and every file of the kata that the lesson's tests are built from.
fn fingerprint(root: &Path, entry: &Entry) -> u64 {
    let mut files: Vec<PathBuf> = vec![
        entry.file(root),
        entry.stub(root),
        root.join("lessons/lessons.toml"),
        root.join("Cargo.lock"),
        root.join(format!("tests/{}.rs", entry.name)),
        root.join(format!("solutions/{}.rs", entry.name)),
    ];
    for dir in [
        "src".to_string(),
        "catalog/src".to_string(),
        "solutions".to_string(),
        "tests/snapshots".to_string(),
        format!("mistakes/{}", entry.name),
        format!("tests/alternatives/{}", entry.name),
    ] {
        files_under(&root.join(dir), &mut files);
    }
    let mut bytes = Vec::new();
    for file in files {
        bytes.extend(file.to_string_lossy().as_bytes());
        bytes.extend(std::fs::read(&file).unwrap_or_default());
        bytes.push(0);
    }
    fnv1a64(&bytes)
}

/// The files in `dir` and in its folders, each folder's in name order (the
/// harness keeps a concept of several files in a folder of its own).
fn files_under(dir: &Path, files: &mut Vec<PathBuf>) {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    found.sort();
    for path in found {
        if path.is_dir() {
            files_under(&path, files);
        } else {
            files.push(path);
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Cached {
    tests: Vec<(String, bool)>,
    failures: Vec<Failure>,
    ran: bool,
    timed_out: bool,
    output: String,
}

/// Outcomes kept per lesson, the newest; a class view keeps one per learner.
const KEPT: usize = 32;

/// Where the outcome for one fingerprint is kept.
fn cache_file(root: &Path, entry: &Entry, key: &str) -> PathBuf {
    state::cache_dir(root, &entry.name).join(format!("{key}.json"))
}

/// What else a run depends on: the compiler and the settings that change
/// what the tests do.
fn environment() -> &'static str {
    static ENVIRONMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        let rustc = std::process::Command::new("rustc")
            .arg("-V")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let settings: String = [
            "PROPTEST_CASES",
            "LOOM_MAX_PREEMPTIONS",
            "KATA_TIME_LIMIT_SECS",
        ]
        .iter()
        .map(|v| format!("{v}={}\n", std::env::var(v).unwrap_or_default()))
        .collect();
        format!("{rustc}{settings}")
    })
}

/// Whether an outcome says something about the learner's code alone: it
/// ran, and nothing in it depends on how busy the machine was.
fn worth_keeping(outcome: &Outcome) -> bool {
    // A file that does not compile does so every time; cargo failing for
    // another reason (offline, a registry) says nothing.
    (outcome.ran || outcome.output.contains("could not compile"))
        && !outcome.timed_out
        && !outcome.output.contains("did not return within")
        && !outcome.output.contains("too slow after an idle gap")
}

/// A lesson's outcome: from the cache when nothing it depends on changed,
/// else from a run of its tests (then kept, if it says something about the
/// code alone).
pub fn outcome(root: &Path, entry: &Entry) -> Outcome {
    let key = format!(
        "{:016x}",
        fingerprint(root, entry) ^ fnv1a64(environment().as_bytes()).rotate_left(1)
    );
    let file = cache_file(root, entry, &key);
    if let Some(cached) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| serde_json::from_str::<Cached>(&text).ok())
    {
        return Outcome {
            tests: cached.tests,
            failures: cached.failures,
            ran: cached.ran,
            timed_out: cached.timed_out,
            crash: None,
            output: cached.output,
            took: std::time::Duration::ZERO,
        };
    }
    let outcome = suite::run(root, &entry.name, "learner");
    if worth_keeping(&outcome) {
        let cached = Cached {
            tests: outcome.tests.clone(),
            failures: outcome.failures.clone(),
            ran: outcome.ran,
            timed_out: outcome.timed_out,
            output: outcome.output.clone(),
        };
        if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_string(&cached)) {
            let _ = std::fs::create_dir_all(dir);
            let _ = std::fs::write(&file, text);
            prune(dir);
        }
    }
    outcome
}

/// Keeps the newest [`KEPT`] outcomes of a lesson.
fn prune(dir: &Path) {
    let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if files.len() > KEPT {
        files.sort();
        for (_, old) in &files[..files.len() - KEPT] {
            let _ = std::fs::remove_file(old);
        }
    }
}

/// The report of the kata at `root`; `each` is told which lesson runs next.
pub fn make(
    root: &Path,
    lessons: &[Entry],
    learner: Option<String>,
    mut each: impl FnMut(&Entry),
) -> Report {
    Report {
        schema: SCHEMA.to_string(),
        learner,
        when: now_utc(),
        commit: commit(root),
        lessons: lessons
            .iter()
            .map(|entry| {
                each(entry);
                let outcome = outcome(root, entry);
                let state = runner::assess(&outcome, runner::untouched(root, entry));
                LessonReport::new(root, entry, &state, &outcome)
            })
            .collect(),
    }
}

/// A report's text, read: a sentence when it is not a report this kata
/// reads.
pub fn parse(text: &str) -> Result<Report, String> {
    match serde_json::from_str::<Report>(text) {
        Ok(r) if r.schema == SCHEMA => Ok(r),
        Ok(r) => Err(format!(
            "a report of schema {:?}; this kata reads {:?}",
            r.schema, SCHEMA
        )),
        Err(e) => Err(format!(
            "not a report of `cargo run -- report --json` ({e})"
        )),
    }
}

/// Whether every lesson that was started passes: the report's exit code.
pub fn all_started_pass(report: &Report) -> bool {
    report
        .lessons
        .iter()
        .all(|l| l.state == "passed" || l.state == "not_started")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_423), (2025, 12, 1));
        assert_eq!(parse_utc("1970-01-02T00:00:01Z"), Some(86_401));
        let now = now_utc();
        assert_eq!(now.len(), 20, "{now}");
        assert!(parse_utc(&now).is_some(), "{now}");
        assert_eq!(parse_utc("yesterday"), None);
    }

    #[test]
    fn first_errors_and_failures_in_one_line() {
        let errors = "error[E0308]: mismatched types\n --> lessons/lesson_02.rs:3:5\n  |\n";
        assert_eq!(
            first_error(errors).unwrap(),
            "error[E0308]: mismatched types --> lessons/lesson_02.rs:3:5"
        );
        let failures = [Failure {
            name: "keeps_the_limit".into(),
            output: "\nthread 'x' panicked at a.rs:1:1:\nlesson 01: too many\nmore\n".into(),
        }];
        assert_eq!(
            one_line_failure(&failures).unwrap(),
            "keeps_the_limit: lesson 01: too many"
        );
        assert_ne!(fnv1a64(b"a"), fnv1a64(b"b"));
    }
}
