//! What the runner (`cargo run`) knows: the lessons on disk, the state of a
//! lesson derived from a run of its tests, its hints, and how to say all that
//! briefly. A lesson's state always comes from its files and a run of its
//! tests; what is remembered between runs is which hints were shown and, in
//! `report`, the outcome of a run whose inputs did not change since.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::suite::{Check, Failure, Outcome};

/// One lesson as the runner shows it.
#[derive(Clone, Debug)]
pub struct Entry {
    pub number: u32,
    /// `lesson_02`
    pub name: String,
    /// From the catalog.
    pub title: String,
    /// How its tests drive the learner's type.
    pub kind: kata_catalog::Kind,
    /// Where a workshop can stop, in order; empty for a one-step lesson.
    pub milestones: Vec<kata_catalog::Milestone>,
}

impl Entry {
    pub fn text(&self, root: &Path) -> PathBuf {
        root.join("lessons").join(format!("{}.md", self.name))
    }

    pub fn file(&self, root: &Path) -> PathBuf {
        root.join("lessons").join(format!("{}.rs", self.name))
    }

    pub fn stub(&self, root: &Path) -> PathBuf {
        root.join("lessons")
            .join("stubs")
            .join(format!("{}.rs", self.name))
    }
}

/// Every lesson of the kata's catalog (`lessons/lessons.toml`), in order.
pub fn lessons(root: &Path) -> Result<Vec<Entry>, String> {
    let catalog = kata_catalog::Catalog::load(root)?;
    Ok(catalog
        .lessons
        .into_iter()
        .map(|l| Entry {
            number: l.number,
            name: l.name(),
            title: l.title,
            kind: l.kind,
            milestones: l.milestones,
        })
        .collect())
}

/// Whether the learner file is still byte for byte the stub.
pub fn untouched(root: &Path, entry: &Entry) -> bool {
    match (
        std::fs::read(entry.file(root)),
        std::fs::read(entry.stub(root)),
    ) {
        (Ok(mine), Ok(stub)) => mine == stub,
        _ => false,
    }
}

/// Where a learner stands in one lesson.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// The learner file is still the stub.
    NotStarted,
    /// The lesson's tests do not build; the compiler's errors, each once.
    DoesNotCompile(String),
    /// The run was stopped after its time limit.
    TimedOut,
    /// Some checks fail.
    Failing,
    Passed,
}

impl State {
    pub fn id(&self) -> &'static str {
        match self {
            State::NotStarted => "not_started",
            State::DoesNotCompile(_) => "does_not_compile",
            State::TimedOut => "timed_out",
            State::Failing => "failing",
            State::Passed => "passed",
        }
    }
}

/// The state a run shows. `untouched` is whether the learner file is still
/// byte for byte the stub.
pub fn assess(outcome: &Outcome, untouched: bool) -> State {
    if outcome.timed_out {
        State::TimedOut
    } else if !outcome.ran {
        State::DoesNotCompile(compiler_errors(&outcome.output))
    } else if untouched {
        State::NotStarted
    } else if outcome.failed().next().is_none() && !outcome.tests.is_empty() {
        State::Passed
    } else {
        State::Failing
    }
}

/// What learners call each kind of check.
pub fn kind_label(kind: Check) -> &'static str {
    match kind {
        Check::Example => "examples",
        Check::Config => "configuration",
        Check::Property => "properties",
        Check::Snapshot => "snapshots",
        Check::Loom => "races (loom)",
        Check::EndToEnd => "end to end",
        Check::Race => "races (Redis)",
        Check::Fault => "faults (Redis down)",
        Check::Source => "source checks",
    }
}

/// Per kind of check: how many failed, of how many.
pub fn by_kind(outcome: &Outcome) -> BTreeMap<Check, (usize, usize)> {
    let mut counts = BTreeMap::new();
    for (name, ok) in &outcome.tests {
        let entry = counts.entry(Check::of(name)).or_insert((0, 0));
        entry.1 += 1;
        if !ok {
            entry.0 += 1;
        }
    }
    counts
}

/// `failing 3 of 30: properties 2, races (loom) 1`
pub fn one_line(state: &State, outcome: &Outcome) -> String {
    match state {
        State::NotStarted => "not started".into(),
        State::DoesNotCompile(_) => "does not compile".into(),
        State::TimedOut => "did not finish in time".into(),
        State::Passed => format!("passed ({} checks)", outcome.tests.len()),
        State::Failing => {
            let parts: Vec<String> = by_kind(outcome)
                .into_iter()
                .filter(|(_, (failed, _))| *failed > 0)
                .map(|(kind, (failed, _))| format!("{} {failed}", kind_label(kind)))
                .collect();
            format!(
                "failing {} of {}: {}",
                outcome.failed().count(),
                outcome.tests.len(),
                parts.join(", ")
            )
        }
    }
}

/// The compiler's error messages, each once. The lesson file is compiled twice
/// (over std and over loom), so most errors come in pairs that differ only in
/// the backend's name.
pub fn compiler_errors(output: &str) -> String {
    let mut blocks: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    for line in output.lines() {
        let starts = line.starts_with("error") || line.starts_with("warning");
        if starts || line.is_empty() {
            if let Some(block) = current.take() {
                blocks.push(block);
            }
        }
        if starts {
            current = Some(String::new());
        }
        if let Some(block) = current.as_mut() {
            block.push_str(line);
            block.push('\n');
        }
    }
    blocks.extend(current);
    let mut seen: Vec<String> = Vec::new();
    let mut kept: Vec<&String> = Vec::new();
    for block in &blocks {
        let is_error = block.starts_with("error");
        let summary = block.starts_with("error: could not compile")
            || block.starts_with("error: aborting")
            || block.starts_with("warning: build failed");
        let same = block
            .replace("loom_backend", "std_backend")
            .replace("on_loom", "on_std");
        if is_error && !summary && !seen.contains(&same) {
            seen.push(same);
            kept.push(block);
        }
    }
    if kept.is_empty() {
        return output.trim().to_string();
    }
    let mut text: String = kept.iter().map(|b| format!("{b}\n")).collect();
    text.push_str(&format!(
        "{} error{} (each shown once, although the file is compiled twice: over std and over loom)",
        kept.len(),
        if kept.len() == 1 { "" } else { "s" }
    ));
    text
}

/// The failure messages of the failed tests, as libtest prints them: each
/// test's output under `---- NAME stdout ----`, in the order they failed.
pub fn failure_details(failures: &[Failure]) -> String {
    failures
        .iter()
        .map(|f| format!("---- {}", block(f)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// One failure as `NAME stdout ----` and its output, without the note on
/// backtraces.
fn block(failure: &Failure) -> String {
    let output: Vec<&str> = failure
        .output
        .lines()
        .filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE=1`"))
        .collect();
    format!("{} stdout ----\n{}", failure.name, output.join("\n"))
        .trim()
        .to_string()
}

/// The message of the most telling failed test, at most `lines` lines: a
/// named example first (its name states the rule that was broken), then a
/// configuration case, a snapshot, a property, a race, a source check.
pub fn first_failure(failures: &[Failure], lines: usize) -> Option<String> {
    let failures = ranked_failures(failures);
    let first = failures.first()?;
    let mut shown: Vec<&str> = vec![];
    let heading = format!("---- {}", first.lines().next().unwrap_or(""));
    shown.push(&heading);
    shown.extend(first.lines().skip(1).take(lines.saturating_sub(1)));
    let mut text = shown.join("\n");
    if first.lines().count() > lines {
        text.push_str("\n... (`cargo run -- test N --details` shows everything)");
    }
    Some(text)
}

/// The `cargo run -- compare` command of the most telling failed test (the
/// one [`first_failure`] shows), if its message has one. Another failure's
/// command is never offered for it: it would replay another check.
pub fn replay_command(failures: &[Failure]) -> Option<String> {
    ranked_failures(failures).first().and_then(|b| {
        b.lines()
            .map(str::trim)
            .find(|l| l.starts_with("cargo run -- compare "))
            .map(String::from)
    })
}

/// The `cargo run -- compare` command of the most telling failed test that
/// has one: a timeline some check failed on, whichever.
pub fn any_replay_command(failures: &[Failure]) -> Option<String> {
    ranked_failures(failures).iter().find_map(|b| {
        b.lines()
            .map(str::trim)
            .find(|l| l.starts_with("cargo run -- compare "))
            .map(String::from)
    })
}

/// Each failed test's message (`name stdout ----` and what follows), the most
/// telling first, then by name (the test file's order for examples), so
/// that the same failures are shown the same whichever ended first. A test
/// that did not run because an earlier call hung says nothing of its own:
/// the one that hung comes before it.
fn ranked_failures(failures: &[Failure]) -> Vec<String> {
    let mut ranked: Vec<(&Failure, String)> = failures.iter().map(|f| (f, block(f))).collect();
    ranked.sort_by_key(|(f, b)| {
        (
            b.contains(NOT_RUN),
            rank(Check::of(&f.name)),
            f.name.clone(),
        )
    });
    ranked.into_iter().map(|(_, b)| b).collect()
}

/// How the harness says a test was not run after an earlier call hung.
const NOT_RUN: &str = "was not run: earlier in this run";

/// Which kind of failure tells a learner most, first.
fn rank(kind: Check) -> u8 {
    match kind {
        Check::Example => 0,
        Check::Config => 1,
        Check::Snapshot => 2,
        Check::Property => 3,
        Check::Loom => 4,
        Check::Race => 5,
        Check::Fault => 6,
        Check::EndToEnd => 7,
        Check::Source => 8,
    }
}

/// What `cargo run -- compare N [TIMELINE]` asks a lesson of `kind` to
/// draw: the kind's own answer (TIMELINE, or its first drawing). A TIMELINE
/// the lesson's tests would not accept is refused here, before anything is
/// built, with their words.
pub fn comparison(kind: kata_catalog::Kind, timeline: Option<&str>) -> Result<String, String> {
    kata::kinds::comparison(kind.module(), timeline)
}

/// What cargo and libtest print around the comparison, which says nothing
/// to a learner: the run's bookkeeping, and that the comparison "failed"
/// (it panics when the answers differ, to exit 1).
pub fn libtest_noise(line: &str) -> bool {
    let trimmed = line.trim();
    line.starts_with("running ")
        || line.starts_with("test ")
        || line.starts_with("test result:")
        || trimmed == "."
        || trimmed == "failures:"
        || trimmed == "compare_with_reference"
        || line.starts_with("error: test failed, to rerun pass")
        || line.starts_with("note: run with `RUST_BACKTRACE=1`")
        || line.starts_with("thread 'compare_with_reference'")
}

/// A hint: its title and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hint {
    pub title: String,
    pub text: String,
}

impl Hint {
    /// The milestone a hint belongs to: M in a title `Hint M.K (…): …`;
    /// `None` for `Hint K (…): …`, a hint of a lesson without milestones.
    pub fn milestone(&self) -> Option<usize> {
        let number = self.title.strip_prefix("Hint ")?;
        let number = number.split([' ', ':']).next()?;
        let (milestone, _) = number.split_once('.')?;
        milestone.parse().ok()
    }
}

/// The hints a learner at `milestone` is given: that milestone's, or every
/// hint when the text has none by milestone.
pub fn hints_for(all: Vec<Hint>, milestone: usize) -> Vec<Hint> {
    if all.iter().all(|h| h.milestone().is_none()) {
        return all;
    }
    all.into_iter()
        .filter(|h| h.milestone() == Some(milestone))
        .collect()
}

/// The milestones a run reached: each one whose checks all ran and passed,
/// in order, up to the first that did not.
pub fn milestones_reached(entry: &Entry, outcome: &Outcome) -> usize {
    let mut reached = 0;
    for milestone in &entry.milestones {
        let mut ran = outcome.tests.iter().filter(|(name, _)| {
            kata_catalog::milestone_of(&entry.milestones, name)
                .map_or(entry.milestones.len(), |m| m.number)
                == milestone.number
        });
        let mut any = false;
        if !ran.all(|(_, ok)| {
            any = true;
            *ok
        }) || !any
        {
            break;
        }
        reached = milestone.number;
    }
    reached
}

/// What is wrong with a lesson's milestones, given its checks: a check no
/// milestone takes, and a pattern that takes no check (a typo, or a check
/// renamed), each named.
pub fn milestone_problems(milestones: &[kata_catalog::Milestone], tests: &[String]) -> Vec<String> {
    if milestones.is_empty() {
        return Vec::new();
    }
    let mut problems: Vec<String> = tests
        .iter()
        .filter(|t| kata_catalog::milestone_of(milestones, t).is_none())
        .map(|t| format!("the check {t} belongs to no milestone"))
        .collect();
    for milestone in milestones {
        for pattern in &milestone.checks {
            let takes_one = tests.iter().any(|t| {
                kata_catalog::milestone_of(milestones, t).is_some_and(|m| m == milestone)
                    && kata_catalog::matches(pattern, t)
            });
            if !takes_one {
                problems.push(format!(
                    "milestone {} ({}): the pattern {pattern} takes no check",
                    milestone.number, milestone.title
                ));
            }
        }
    }
    problems
}

/// `milestone 2 of 4: The token bucket`: where a learner stands in a lesson
/// with milestones, after reaching `reached` of them.
pub fn milestone_line(entry: &Entry, reached: usize) -> Option<String> {
    let total = entry.milestones.len();
    if total == 0 {
        return None;
    }
    Some(match entry.milestones.get(reached) {
        Some(next) => format!("milestone {} of {total}: {}", next.number, next.title),
        None => format!("every milestone reached ({total} of {total})"),
    })
}

/// The hints of a lesson text: its `<details><summary>Hint N: title</summary>`
/// blocks, in order. The lesson text is their only source.
pub fn hints(text: &str) -> Vec<Hint> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<details><summary>") {
        let after = &rest[open + "<details><summary>".len()..];
        let Some(title_end) = after.find("</summary>") else {
            break;
        };
        let title = after[..title_end].trim().to_string();
        let body = &after[title_end + "</summary>".len()..];
        let body_end = body.find("</details>").unwrap_or(body.len());
        found.push(Hint {
            title,
            text: body[..body_end].trim().to_string(),
        });
        rest = &body[body_end..];
    }
    found
}

/// Where `reset` keeps the next copy of a learner's file:
/// `lessons/backups/lesson_02.1.rs`, `.2.rs`, … (one past the highest, so
/// the numbers keep the order of the versions).
pub fn next_backup(root: &Path, lesson: &str) -> PathBuf {
    let dir = root.join("lessons").join("backups");
    let prefix = format!("{lesson}.");
    let highest = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_prefix(&prefix)?
                .strip_suffix(".rs")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    dir.join(format!("{lesson}.{}.rs", highest + 1))
}

#[cfg(test)]
mod tests;
