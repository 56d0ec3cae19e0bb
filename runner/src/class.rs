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
mod points;
mod sandbox;
mod view;
pub mod workflow;
pub mod zip;

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

pub use points::Point;
pub use sandbox::Limits;
pub use view::{html, points_tables, table};

use crate::report::{self, LessonReport, Report};
use crate::runner::Entry;

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

/// A report's text, read: a sentence when it is not a report this kata
/// reads.
pub fn parse(text: &str) -> Result<Report, String> {
    match serde_json::from_str::<Report>(text) {
        Ok(r) if r.schema == report::SCHEMA => Ok(r),
        Ok(r) => Err(format!(
            "a report of schema {:?}; this kata reads {:?}",
            r.schema,
            report::SCHEMA
        )),
        Err(e) => Err(format!(
            "not a report of `cargo run -- report --json` ({e})"
        )),
    }
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

fn lesson(report: &Report, number: u32) -> Option<&LessonReport> {
    report.lessons.iter().find(|l| l.number == number)
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

/// A text from a report, fit for a terminal: its control characters (a
/// report comes from a learner's machine or CI, and escape sequences could
/// rewrite the instructor's screen) shown as `�`.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lessons of a catalog of `count` lessons, read as the runner reads
    /// the kata's.
    fn lessons(count: u32) -> Vec<Entry> {
        lessons_with(count, 0)
    }

    /// The same, lesson 2 cut into `milestones` milestones, `Step 1`, ….
    fn lessons_with(count: u32, milestones: usize) -> Vec<Entry> {
        // A folder of its own for each call: the tests run at once.
        static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("kata-class-{}-{call}", std::process::id()));
        std::fs::create_dir_all(dir.join("lessons")).unwrap();
        let toml: String = (1..=count)
            .map(|n| {
                format!(
                    "[[lesson]]\nnumber = {n}\ntitle = \"Lesson {n}\"\nkind = \"shared-limiter\"\n\
                     type = \"X\"\nalgorithm = \"FixedWindow\"\n\n"
                )
            })
            .chain((1..=milestones).map(|k| {
                format!(
                    "[[milestone]]\nlesson = 2\ntitle = \"Step {k}\"\nchecks = \"step_{k}\"\n\n"
                )
            }))
            .collect();
        std::fs::write(dir.join("lessons/lessons.toml"), toml).unwrap();
        let found = crate::runner::lessons(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        found
    }

    fn lesson_report(n: u32, state: &str, hints: usize, failure: Option<&str>) -> LessonReport {
        let failing = if state == "failing" {
            serde_json::json!([{ "name": "keeps_the_limit", "kind": "property" }])
        } else {
            serde_json::json!([])
        };
        serde_json::from_value(serde_json::json!({
            "number": n,
            "name": format!("lesson_{n:02}"),
            "title": format!("Lesson {n}"),
            "state": state,
            "file": "fnv1a64:0",
            "hints_shown": hints,
            "checks": 3,
            "failed": usize::from(state == "failing"),
            "first_failure": failure,
            "compiler_error": null,
            "failing": failing,
        }))
        .unwrap()
    }

    fn report(who: &str, when: &str, lessons: Vec<LessonReport>) -> Report {
        Report {
            schema: report::SCHEMA.into(),
            learner: Some(who.into()),
            when: when.into(),
            commit: None,
            lessons,
        }
    }

    fn learner(name: &str, reports: Vec<Report>) -> Learner {
        Learner {
            name: name.into(),
            reports,
        }
    }

    #[test]
    fn tallies_common_failures_and_who_is_stuck() {
        let lessons = lessons(2);
        let ada = learner(
            "ada",
            vec![
                report(
                    "ada",
                    "2026-12-01T10:00:00Z",
                    vec![
                        lesson_report(1, "passed", 0, None),
                        lesson_report(2, "failing", 0, Some("x: boom")),
                    ],
                ),
                report(
                    "ada",
                    "2026-12-01T10:30:00Z",
                    vec![
                        lesson_report(1, "passed", 0, None),
                        lesson_report(2, "failing", 0, Some("x: boom")),
                    ],
                ),
            ],
        );
        let bob = learner(
            "bob",
            vec![report(
                "bob",
                "2026-12-01T10:30:00Z",
                vec![
                    lesson_report(1, "failing", 2, Some("y")),
                    lesson_report(2, "not_started", 0, None),
                ],
            )],
        );
        // Failed otherwise at first, then the same way for the last 20 minutes.
        let cal = learner(
            "cal",
            vec![
                report(
                    "cal",
                    "2026-12-01T09:00:00Z",
                    vec![lesson_report(1, "failing", 0, Some("a"))],
                ),
                report(
                    "cal",
                    "2026-12-01T10:10:00Z",
                    vec![lesson_report(1, "failing", 0, Some("b"))],
                ),
                report(
                    "cal",
                    "2026-12-01T10:30:00Z",
                    vec![lesson_report(1, "failing", 0, Some("b"))],
                ),
            ],
        );
        assert_eq!(
            stuck(&[cal]),
            vec![(
                "cal".to_string(),
                1,
                "the same failure for 20 min".to_string()
            )]
        );
        let learners = vec![ada, bob];
        let t = tallies(&lessons, &learners);
        assert_eq!(
            t[0],
            Tally {
                passed: 1,
                failing: 1,
                not_started: 0
            }
        );
        assert_eq!(
            t[1],
            Tally {
                passed: 0,
                failing: 1,
                not_started: 1
            }
        );
        let common = common_failures(&learners);
        assert_eq!(common[0].2.len(), 1);
        let stuck = stuck(&learners);
        assert!(
            stuck.contains(&("ada".into(), 2, "the same failure for 30 min".into())),
            "{stuck:?}"
        );
        assert!(
            stuck.contains(&("bob".into(), 1, "2 hints".into())),
            "{stuck:?}"
        );
        let class = Class {
            learners,
            ..Class::default()
        };
        let page = html(&lessons, &class);
        assert!(page.contains("<td class=\"cell passed\"") && page.ends_with("</html>\n"));
        assert!(table(&lessons, &class).contains("ada  +x  1/2 points"));
    }

    #[test]
    fn milestones_show_as_digits_and_points_and_refusals_are_named() {
        let lessons = lessons_with(2, 3);
        let text = |who: &str, reached: [bool; 3], failure: &str| {
            serde_json::json!({
                "schema": report::SCHEMA, "learner": who, "when": "2026-12-01T10:00:00Z",
                "commit": null,
                "lessons": [
                    serde_json::to_value(lesson_report(1, "failing", 0, Some(failure))).unwrap(),
                    {
                        "number": 2, "name": "lesson_02", "title": "Lesson 2",
                        "state": if reached == [true; 3] { "passed" } else { "failing" },
                        "file": "", "hints_shown": 0, "checks": 3, "failed": 1,
                        "first_failure": "y", "compiler_error": null, "failing": [],
                        "milestones": (1..=3).map(|k| serde_json::json!({
                            "number": k, "title": format!("Step {k}"), "reached": reached[k - 1]
                        })).collect::<Vec<_>>()
                    }
                ]
            })
            .to_string()
        };
        let read = |t: String| {
            let r = parse(&t).unwrap();
            learner(&r.learner.clone().unwrap(), vec![r])
        };
        let class = Class {
            learners: vec![
                read(text(
                    "ada",
                    [true, true, false],
                    "examples::a: could not write /kata/x: Read-only file system (os error 30)",
                )),
                read(text(
                    "bo\u{1b}[2J",
                    [true, true, true],
                    "examples::a: wrong",
                )),
            ],
            how: Some("ran in a sandbox".into()),
            not_run: vec![("cy".into(), "stopped after 1800 s".into())],
            ..Class::default()
        };
        assert_eq!(
            milestones_reached(&lessons[1], &class.learners),
            [
                (1, "Step 1".into(), 2),
                (2, "Step 2".into(), 2),
                (3, "Step 3".into(), 1)
            ]
        );
        let shown = table(&lessons, &class);
        // Two milestones of three reached shows as 2; all of them as passed.
        assert!(shown.contains("ada     x2  2/4 points"), "{shown}");
        assert!(shown.contains("bo\u{fffd}[2J  x+  3/4 points"), "{shown}");
        assert!(shown.contains("1: 2, 2: 2, 3: 1"), "{shown}");
        assert!(shown.contains("checkouts: ran in a sandbox"), "{shown}");
        assert!(shown.contains("cy: stopped after 1800 s"), "{shown}");
        assert!(
            shown.contains("ada on lesson 01, a write outside its scratch folder: examples::a: could not write"),
            "{shown}"
        );
        let page = html(&lessons, &class);
        assert!(page.contains("Step 3") && page.contains("2/4"), "{page}");
        let points = points_tables(&lessons, &class);
        assert!(
            points.contains("points of ada (2026-12-01T10:00:00Z): 2 of 4"),
            "{points}"
        );
        assert!(points.contains("  02.3    Step 3     0/1"), "{points}");
    }

    fn options() -> Options {
        Options {
            limits: Limits {
                time: std::time::Duration::from_secs(1),
                memory_mib: 256,
            },
            unsandboxed: false,
        }
    }

    /// A folder of its own, emptied, for a test.
    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kata-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_zip_bomb_or_an_oversized_report_is_named_and_the_rest_is_shown() {
        let dir = folder("bombs");
        let one = serde_json::to_string(&report(
            "ada",
            "2026-12-01T10:00:00Z",
            vec![lesson_report(1, "passed", 0, None)],
        ))
        .unwrap();
        std::fs::write(dir.join("ada.json"), &one).unwrap();
        let zeros = vec![0u8; zip::MAX_ENTRY];
        // 40 entries of one 16 KB stream, 640 MiB inflated.
        std::fs::write(dir.join("bomb.zip"), zip::copies(40, &zeros, true)).unwrap();
        // Five entries of 16 MiB each, each its own stream: 80 MiB.
        std::fs::write(dir.join("wide.zip"), zip::copies(5, &zeros, false)).unwrap();
        // A report file of more than 16 MiB (a sparse file: no disk used).
        let huge = std::fs::File::create(dir.join("huge.json")).unwrap();
        huge.set_len(zip::MAX_ENTRY as u64 + 1).unwrap();
        drop(huge);
        let class = collect(Path::new("."), &lessons(1), &dir, &options(), |_| {}).unwrap();
        assert_eq!(class.learners.len(), 1);
        assert_eq!(class.learners[0].name, "ada");
        let said = class.left_out.join("\n");
        let path = |file: &str| dir.join(file).display().to_string();
        for line in [
            format!(
                "left out {}: its entries \"0.json\" and \"1.json\" share their bytes, as a \
                 zip bomb's do",
                path("bomb.zip")
            ),
            format!(
                "left out {}: a file of 16777217 bytes, more than a report ever holds",
                path("huge.json")
            ),
            format!(
                "left out {}: its reports would inflate to 83886080 bytes, more than an \
                 artifact of reports may (67108864 bytes",
                path("wide.zip")
            ),
        ] {
            assert!(said.contains(&line), "{line}\nnot in\n{said}");
        }
        assert_eq!(class.left_out.len(), 3, "{said}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_report_is_its_place_s_and_the_latest_is_the_last_downloaded() {
        let dir = folder("whose");
        let text = |who: &str, when: &str, state: &str| {
            serde_json::to_string(&report(
                who,
                when,
                vec![lesson_report(1, state, 0, Some("x"))],
            ))
            .unwrap()
        };
        let put = |file: &str, bytes: &[u8], minute: u64| {
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            let when = SystemTime::UNIX_EPOCH
                + std::time::Duration::from_secs(1_800_000_000 + minute * 60);
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(when)
                .unwrap();
        };
        put(
            "alice/report.json",
            text("alice", "2026-12-01T10:00:00Z", "failing").as_bytes(),
            0,
        );
        // Bob's artifact says it is Alice's, and newer: it stays Bob's.
        put(
            "report-bob.zip",
            &zip::write(&[(
                "report.json",
                text("alice", "2026-12-01T10:30:00Z", "passed").as_bytes(),
            )]),
            1,
        );
        // A report of Alice's that claims to come from the future.
        put(
            "alice/report (1).json",
            text("alice", "2099-01-01T00:00:00Z", "passed").as_bytes(),
            2,
        );
        // Cy's artifacts downloaded twice: the second download is the latest,
        // whatever time each claims.
        put(
            "cy/artifacts.zip",
            &zip::write(&[(
                "report.json",
                text("cy", "2026-12-01T10:30:00Z", "passed").as_bytes(),
            )]),
            3,
        );
        put(
            "cy/artifacts (1).zip",
            &zip::write(&[(
                "report.json",
                text("cy", "2026-12-01T10:00:00Z", "failing").as_bytes(),
            )]),
            4,
        );
        // GitLab names a learner by their project's path: no warning.
        put(
            "dee/report.json",
            text("class/dee", "2026-12-01T10:00:00Z", "passed").as_bytes(),
            5,
        );
        let class = collect(Path::new("."), &lessons(1), &dir, &options(), |_| {}).unwrap();
        let rows: Vec<(&str, usize, &str)> = class
            .learners
            .iter()
            .map(|l| {
                (
                    l.name.as_str(),
                    l.reports.len(),
                    l.latest().lessons[0].state.as_str(),
                )
            })
            .collect();
        assert_eq!(
            rows,
            [
                ("alice", 1, "failing"),
                ("bob", 1, "passed"),
                ("cy", 2, "failing"),
                ("dee", 1, "passed")
            ]
        );
        let path = |file: &str| dir.join(file).display().to_string();
        assert_eq!(
            class.warnings,
            [format!(
                "{} (report.json) says it is the report of \"alice\"; it is shown as \"bob\"'s, \
                 the name of where it was found",
                path("report-bob.zip")
            )]
        );
        assert_eq!(class.left_out.len(), 1, "{:?}", class.left_out);
        assert!(
            class.left_out[0].starts_with(&format!(
                "left out {}: it says it was made at 2099-01-01T00:00:00Z, in the future (it is ",
                path("alice/report (1).json")
            )),
            "{:?}",
            class.left_out
        );
        assert!(same_learner("ada-kata", "class/ada-kata"));
        assert!(same_learner("class-ada-kata", "class/ada-kata"));
        assert!(same_learner("Ada", "ada"));
        assert!(!same_learner("bob", "alice"));
        assert!(!same_learner("", "alice"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
