//! The class view (`cargo run -- class PATH`): a whole class at a glance,
//! from what a folder holds ([`found`]): learners' reports (`*.json`, from
//! `cargo run -- report --json`), the artifacts their CI uploaded (zip
//! archives, or the folders they unzip to, with a `report.json`), and
//! learners' checkouts (folders with a `lessons/`). Reports are read, never
//! run. A checkout is never written, and its lesson files, code a learner
//! wrote, run in a sandbox ([`sandbox`], [`checkouts`]), or not at all unless
//! the instructor says otherwise.

mod checkouts;
mod found;
mod pristine;
mod sandbox;
mod view;
pub mod workflow;
pub mod zip;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

pub use kata_runner::points::{self, lesson, printable, Point};
pub use kata_runner::report::parse;
pub use sandbox::Limits;
pub use view::{html, points_tables, table};

use kata_runner::report::{self, Report};
use kata_runner::runner::Entry;

/// How checkouts run.
#[derive(Clone, Debug)]
pub struct Options {
    pub limits: Limits,
    /// Run checkouts without a sandbox, with the instructor's rights
    /// (`--run-untrusted-code-as-me`).
    pub unsandboxed: bool,
}

/// A learner's reports, oldest first (several when the folder holds reports
/// collected over time), as they were downloaded: a report's own `when` is
/// the word of the machine that made it.
#[derive(Debug, Clone)]
pub struct Learner {
    pub name: String,
    pub reports: Vec<Report>,
}

impl Learner {
    pub fn latest(&self) -> &Report {
        self.reports.last().expect("a learner has a report")
    }

    /// Each milestone (or whole lesson) of the catalog, `lessons`, reached
    /// or not as the latest report says.
    pub fn points(&self, lessons: &[Entry]) -> Vec<Point> {
        points::points(lessons, self.latest())
    }
}

/// What the class view shows.
#[derive(Debug, Default)]
pub struct Class {
    pub learners: Vec<Learner>,
    /// Checkouts that were not run, each with why (a sentence).
    pub not_run: Vec<(String, String)>,
    /// What was left out of the folder, each a sentence.
    pub left_out: Vec<String>,
    /// What the instructor should know of what was read, each a sentence: a
    /// report that names another learner than the place it was found in.
    pub warnings: Vec<String>,
    /// How the checkouts ran, when there were any: a sentence.
    pub how: Option<String>,
}

/// How far in the future a report's time may be, for a clock a little
/// fast, in seconds.
const SKEW: i64 = 3_600;

/// Whether a report that names its learner `claimed`, found where the name is
/// `place`, names the same learner: the same name as a download writes it
/// (`ada`, `Ada`), or a path that ends in it, as GitLab's projects name
/// theirs (`class/ada-kata` for a folder `ada-kata`, or the artifact
/// `class-ada-kata`).
pub fn same_learner(place: &str, claimed: &str) -> bool {
    let plain = |name: &str| -> String {
        name.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("-")
    };
    let (place, claimed) = (plain(place), plain(claimed));
    claimed == place || (!place.is_empty() && claimed.ends_with(&format!("-{place}")))
}

/// Reads every report and artifact in `path` (a folder, one report or one
/// archive) and runs every checkout in it as `options` say; `progress` is
/// told what happens next. An error is a sentence naming the folder.
///
/// A report belongs to the learner its place names (the folder or file the
/// instructor downloaded it as), never to the one it names itself, which the
/// learner wrote: a report that names someone else is shown as the place's,
/// with a warning. A learner's reports are ordered as they were downloaded
/// (by when their file was written), never by the time they claim, and one
/// that claims a time in the future is left out.
pub fn collect(
    kata: &Path,
    lessons: &[Entry],
    path: &Path,
    options: &Options,
    mut progress: impl FnMut(&str),
) -> Result<Class, String> {
    let mut class = Class::default();
    // Each learner's reports, with when their file was written and the
    // order they were found in.
    type Kept = (Option<SystemTime>, usize, Report);
    let mut by_name: BTreeMap<String, Vec<Kept>> = BTreeMap::new();
    let mut checkouts = Vec::new();
    let now = SystemTime::now();
    let now_secs = report::parse_utc(&report::now_utc()).unwrap_or(i64::MAX);
    let mut order = 0;
    // Each report is read as it is found, and its text dropped.
    found::search(path, |thing| match thing {
        found::Found::Report {
            origin,
            name,
            modified,
            text,
        } => match parse(&text) {
            Ok(report) => {
                if report::parse_utc(&report.when)
                    .is_some_and(|when| when > now_secs.saturating_add(SKEW))
                {
                    class.left_out.push(format!(
                        "left out {origin}: it says it was made at {}, in the future (it is {} \
                         here)",
                        report.when,
                        report::now_utc()
                    ));
                    return;
                }
                if let Some(claimed) = &report.learner {
                    if !same_learner(&name, claimed) {
                        class.warnings.push(format!(
                            "{origin} says it is the report of {claimed:?}; it is shown as \
                             {name:?}'s, the name of where it was found"
                        ));
                    }
                }
                // Reports of one learner collected over time share a name.
                order += 1;
                by_name
                    .entry(name)
                    .or_default()
                    .push((modified, order, report));
            }
            Err(why) => class.left_out.push(format!("left out {origin}: {why}")),
        },
        found::Found::Checkout { name, path } => checkouts.push((name, path)),
        found::Found::LeftOut(why) => class.left_out.push(why),
    })?;
    // A folder of reports alone runs nothing.
    if !checkouts.is_empty() {
        let ran = checkouts::run(kata, lessons, path, &checkouts, options, &mut progress)?;
        // What a checkout's run reports is its learner's newest.
        for (name, report) in ran.reports {
            order += 1;
            by_name
                .entry(name)
                .or_default()
                .push((Some(now), order, report));
        }
        class.not_run = ran.not_run;
        class.left_out.extend(ran.left_out);
        class.how = Some(ran.how);
    }
    if by_name.is_empty() {
        return Err(match (class.not_run.first(), &class.how) {
            (Some(_), Some(how)) => format!(
                "{} holds {} checkout{} and no report, and none ran: {how}",
                path.display(),
                class.not_run.len(),
                if class.not_run.len() == 1 { "" } else { "s" },
            ),
            _ => format!(
                "{} holds no report (*.json from `cargo run -- report --json`, or a CI \
                 artifact with one) and no checkout (a folder with lessons/)",
                path.display()
            ),
        });
    }
    class.learners = by_name
        .into_iter()
        .map(|(name, mut kept)| {
            // As downloaded; in the order found when two were at once.
            kept.sort_by_key(|(modified, order, _)| (*modified, *order));
            // The same report found twice (an archive and the folder it
            // unzips to) counts once, where it was first.
            let mut seen = HashSet::new();
            let reports = kept
                .into_iter()
                .map(|(_, _, report)| report)
                .filter(|r| seen.insert(serde_json::to_string(r).unwrap_or_default()))
                .collect();
            Learner { name, reports }
        })
        .collect();
    Ok(class)
}

/// Per lesson: how many learners passed, are failing, have not started.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct Tally {
    pub passed: usize,
    pub failing: usize,
    pub not_started: usize,
}

pub fn tallies(lessons: &[Entry], class: &[Learner]) -> Vec<Tally> {
    lessons
        .iter()
        .map(|entry| {
            let mut t = Tally::default();
            for learner in class {
                match lesson(learner.latest(), entry.number).map(|l| l.state.as_str()) {
                    Some("passed") => t.passed += 1,
                    Some("not_started") | None => t.not_started += 1,
                    Some(_) => t.failing += 1,
                }
            }
            t
        })
        .collect()
}

/// A lesson's milestones as the class reached them: `(number, title, how
/// many learners reached it)`, the catalog's milestones scored as the
/// points are; empty for a lesson without.
pub fn milestones_reached(entry: &Entry, class: &[Learner]) -> Vec<(usize, String, usize)> {
    let lessons = std::slice::from_ref(entry);
    let mut out: Vec<(usize, String, usize)> = entry
        .milestones
        .iter()
        .map(|m| (m.number, m.title.clone(), 0))
        .collect();
    for learner in class {
        for (point, seen) in learner.points(lessons).iter().zip(&mut out) {
            seen.2 += usize::from(point.reached);
        }
    }
    out
}

/// The checks that fail most often, with the learners they fail for, most
/// often first: `(lesson, check, learners)`.
pub fn common_failures(class: &[Learner]) -> Vec<(u32, String, Vec<String>)> {
    let mut seen: BTreeMap<(u32, String), Vec<String>> = BTreeMap::new();
    for learner in class {
        for lesson in &learner.latest().lessons {
            for check in &lesson.failing {
                let who = seen.entry((lesson.number, check.name.clone())).or_default();
                // A check listed twice fails once for its learner.
                if who.last() != Some(&learner.name) {
                    who.push(learner.name.clone());
                }
            }
        }
    }
    let mut list: Vec<(u32, String, Vec<String>)> =
        seen.into_iter().map(|((n, c), who)| (n, c, who)).collect();
    list.sort_by(|a, b| {
        b.2.len()
            .cmp(&a.2.len())
            .then(a.0.cmp(&b.0))
            .then(a.1.cmp(&b.1))
    });
    list
}

/// Who is stuck where, and why: the same first failure across reports at
/// least 15 minutes apart, or two hints or more on a lesson not yet passed.
pub fn stuck(class: &[Learner]) -> Vec<(String, u32, String)> {
    let mut out = Vec::new();
    for learner in class {
        let latest = learner.latest();
        for lesson in &latest.lessons {
            if lesson.state == "passed" || lesson.state == "not_started" {
                continue;
            }
            let now_failure = lesson
                .first_failure
                .as_ref()
                .or(lesson.compiler_error.as_ref());
            // The earliest report of the unbroken run of reports, back from
            // the latest, that failed the same way.
            let since = learner
                .reports
                .iter()
                .rev()
                .take_while(|r| {
                    self::lesson(r, lesson.number)
                        .and_then(|l| l.first_failure.as_ref().or(l.compiler_error.as_ref()))
                        == now_failure
                })
                .last();
            let minutes = since
                .and_then(|first| {
                    Some((report::parse_utc(&latest.when)? - report::parse_utc(&first.when)?) / 60)
                })
                .unwrap_or(0);
            let mut why = Vec::new();
            if minutes >= 15 {
                why.push(format!("the same failure for {minutes} min"));
            }
            if lesson.hints_shown >= 2 {
                why.push(kata::text::count(lesson.hints_shown, "hint"));
            }
            if !why.is_empty() {
                out.push((learner.name.clone(), lesson.number, why.join(", ")));
            }
        }
    }
    out
}

/// What a sandbox refused, as the failures it caused say: a write where
/// nothing may be written (a read-only file system) and a connection beyond
/// the sandbox's loopback (a network unreachable), as an error displays
/// itself or as `{:?}` shows it. `(learner, lesson, what, the failure)`. A
/// refusal a lesson's code swallowed says nothing here.
pub fn refused(class: &[Learner]) -> Vec<(String, u32, &'static str, String)> {
    const SIGNS: [(&str, &str); 2] = [
        (
            "Read-only file system",
            "a write outside its scratch folder",
        ),
        ("Network is unreachable", "a connection beyond its loopback"),
    ];
    let mut out = Vec::new();
    for learner in class {
        for lesson in &learner.latest().lessons {
            let said = lesson
                .first_failure
                .iter()
                .chain(&lesson.compiler_error)
                .cloned()
                .collect::<Vec<_>>()
                .join(" ");
            if let Some((_, what)) = SIGNS.iter().find(|(sign, _)| said.contains(sign)) {
                out.push((learner.name.clone(), lesson.number, *what, said));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
