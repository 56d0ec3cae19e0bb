//! The class view (`cargo run -- class DIR`): a whole class at a glance,
//! from the learners' reports (`*.json`, from `cargo run -- report --json`)
//! or from their checkouts (folders with a `lessons/`), or both. A checkout is
//! never touched: its lesson files are copied into a scratch copy of this
//! kata, where its lessons run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::{self, LessonReport, Report};
use crate::runner::Entry;

/// A learner's reports, oldest first (several when the folder holds reports
/// collected over time).
#[derive(Debug, Clone)]
pub struct Learner {
    pub name: String,
    pub reports: Vec<Report>,
}

impl Learner {
    pub fn latest(&self) -> &Report {
        self.reports.last().expect("a learner has a report")
    }
}

/// Reads every report and runs every checkout in `dir`; `progress` is told
/// each checkout before it runs. An error is a sentence naming the file.
pub fn collect(
    kata: &Path,
    lessons: &[Entry],
    dir: &Path,
    mut progress: impl FnMut(&str),
) -> Result<Vec<Learner>, String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    let mut by_name: BTreeMap<String, Vec<Report>> = BTreeMap::new();
    for path in entries {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let report: Report = match serde_json::from_str::<Report>(&text) {
                Ok(r) if r.schema == report::SCHEMA => r,
                Ok(r) => {
                    eprintln!(
                        "left out {}: a report of schema {:?}; this kata reads {:?}",
                        path.display(),
                        r.schema,
                        report::SCHEMA
                    );
                    continue;
                }
                Err(e) => {
                    eprintln!(
                        "left out {}: not a report of `cargo run -- report --json` ({e})",
                        path.display()
                    );
                    continue;
                }
            };
            // Reports of one learner collected over time share a name.
            let name = report.learner.clone().unwrap_or(stem);
            by_name.entry(name).or_default().push(report);
        } else if path.join("lessons").is_dir() {
            progress(&stem);
            let report = run_checkout(kata, lessons, &path, &stem)?;
            by_name.entry(stem).or_default().push(report);
        }
    }
    if by_name.is_empty() {
        return Err(format!(
            "{} holds no report (*.json from `cargo run -- report --json`) and no checkout (a folder with lessons/)",
            dir.display()
        ));
    }
    Ok(by_name
        .into_iter()
        .map(|(name, mut reports)| {
            reports.sort_by_key(|r| report::parse_utc(&r.when).unwrap_or(0));
            Learner { name, reports }
        })
        .collect())
}

/// Runs a learner's checkout in this kata's scratch copy
/// (`target/class/kata`): their lesson files and hints are copied in, only
/// when they differ, so unchanged lessons are neither rebuilt nor rerun.
fn run_checkout(
    kata: &Path,
    lessons: &[Entry],
    checkout: &Path,
    name: &str,
) -> Result<Report, String> {
    let scratch = kata.join("target").join("class").join("kata");
    // The kata's sources as they are now (a fix pulled since the last class
    // view counts); only changed files are written, so nothing unchanged is
    // rebuilt.
    copy_kata(kata, &scratch)?;
    for entry in lessons {
        let theirs = std::fs::read(entry.file(checkout))
            .or_else(|_| std::fs::read(entry.stub(kata)))
            .map_err(|e| format!("cannot read {}: {e}", entry.file(checkout).display()))?;
        write_if_changed(&entry.file(&scratch), &theirs)?;
        let hints = format!(".kata/hints/{}", entry.name);
        let shown = std::fs::read(checkout.join(&hints)).unwrap_or_default();
        write_if_changed(&scratch.join(&hints), &shown)?;
    }
    let mut report = report::make(&scratch, lessons, Some(name.to_string()), |_| {});
    report.commit = report::commit(checkout);
    Ok(report)
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The kata's sources, without build output, learners' state or git;
/// files already there with the same bytes are left alone.
fn copy_kata(from: &Path, to: &Path) -> Result<(), String> {
    fn walk(from: &Path, to: &Path) -> Result<(), String> {
        let entries =
            std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            if [".git", "target", ".kata", "book"]
                .iter()
                .any(|n| name == *n)
            {
                continue;
            }
            let (src, dst) = (entry.path(), to.join(&name));
            // The instructor's own lesson files and backups: each learner's
            // are written in their place.
            let text = name.to_string_lossy();
            if from.ends_with("lessons")
                && (text == "backups" || (text.starts_with("lesson_") && text.ends_with(".rs")))
            {
                continue;
            }
            if src.is_dir() {
                walk(&src, &dst)?;
            } else {
                let bytes = std::fs::read(&src)
                    .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
                write_if_changed(&dst, &bytes)?;
            }
        }
        Ok(())
    }
    walk(from, to)
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

/// The checks that fail most often, with the learners they fail for, most
/// often first: `(lesson, check, learners)`.
pub fn common_failures(class: &[Learner]) -> Vec<(u32, String, Vec<String>)> {
    let mut seen: BTreeMap<(u32, String), Vec<String>> = BTreeMap::new();
    for learner in class {
        for lesson in &learner.latest().lessons {
            for check in &lesson.failing {
                seen.entry((lesson.number, check.name.clone()))
                    .or_default()
                    .push(learner.name.clone());
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
                why.push(format!("{} hints", lesson.hints_shown));
            }
            if !why.is_empty() {
                out.push((learner.name.clone(), lesson.number, why.join(", ")));
            }
        }
    }
    out
}

/// The class as a terminal table.
pub fn table(lessons: &[Entry], class: &[Learner]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "class of {} learners\n", class.len());
    let width = lessons.iter().map(|l| l.title.len()).max().unwrap_or(0);
    let _ = writeln!(
        out,
        "  {:<2}  {:<width$}  {:>6}  {:>7}  {:>11}",
        "#", "lesson", "passed", "failing", "not started"
    );
    for (entry, t) in lessons.iter().zip(tallies(lessons, class)) {
        let _ = writeln!(
            out,
            "  {:02}  {:<width$}  {:>6}  {:>7}  {:>11}",
            entry.number, entry.title, t.passed, t.failing, t.not_started
        );
    }
    let _ = writeln!(
        out,
        "\nwhere each learner stands (+ passed, x failing, ! does not compile, . not started)\n"
    );
    let name_width = class.iter().map(|l| l.name.len()).max().unwrap_or(0);
    for learner in class {
        let marks: String = lessons
            .iter()
            .map(
                |e| match lesson(learner.latest(), e.number).map(|l| l.state.as_str()) {
                    Some("passed") => '+',
                    Some("does_not_compile") => '!',
                    Some("failing") | Some("timed_out") => 'x',
                    _ => '.',
                },
            )
            .collect();
        let _ = writeln!(out, "  {:<name_width$}  {marks}", learner.name);
    }
    let common = common_failures(class);
    if !common.is_empty() {
        let _ = writeln!(out, "\nchecks that fail most often\n");
        for (lesson, check, who) in common.iter().take(10) {
            let _ = writeln!(
                out,
                "  {:>2} × lesson {lesson:02} {check}: {}",
                who.len(),
                who.join(", ")
            );
        }
    }
    let stuck = stuck(class);
    if !stuck.is_empty() {
        let _ = writeln!(out, "\nwho may be stuck\n");
        for (who, lesson, why) in &stuck {
            let _ = writeln!(out, "  {who} on lesson {lesson:02}: {why}");
        }
    }
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The class as one self-contained HTML page, for a projector.
pub fn html(lessons: &[Entry], class: &[Learner]) -> String {
    let mut page = String::from(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>ratelimit kata: the class</title>\n<style>\n\
         body{font:18px/1.4 system-ui,sans-serif;margin:2em;color:#222;background:#fff}\n\
         h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em}\n\
         table{border-collapse:collapse}td,th{padding:.3em .7em;text-align:left}\n\
         th{border-bottom:2px solid #999}\n\
         .bar{display:flex;width:24em;height:1.3em;border:1px solid #999}\n\
         .bar span{display:block;height:100%}\n\
         .passed{background:#3a9d5d;color:#fff}.failing{background:#d9534f;color:#fff}\n\
         .broken{background:#8e44ad;color:#fff}.not_started{background:#ddd;color:#555}\n\
         td.cell{text-align:center;font-weight:bold;min-width:2.2em}\n\
         .legend span{padding:.1em .5em;margin-right:.6em}\n\
         </style></head><body>\n<h1>ratelimit kata: the class</h1>\n",
    );
    let _ = writeln!(page, "<p>{} learners</p>", class.len());
    let _ = writeln!(page, "<h2>Per lesson</h2>\n<table><tr><th>#</th><th>lesson</th><th>passed</th><th>failing</th><th>not started</th><th></th></tr>");
    let total = class.len().max(1);
    for (entry, t) in lessons.iter().zip(tallies(lessons, class)) {
        let pct = |n: usize| 100.0 * n as f64 / total as f64;
        let _ = writeln!(
            page,
            "<tr><td>{:02}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><div class=\"bar\"><span class=\"passed\" style=\"width:{:.1}%\"></span><span class=\"failing\" style=\"width:{:.1}%\"></span><span class=\"not_started\" style=\"width:{:.1}%\"></span></div></td></tr>",
            entry.number,
            escape(&entry.title),
            t.passed,
            t.failing,
            t.not_started,
            pct(t.passed),
            pct(t.failing),
            pct(t.not_started)
        );
    }
    page.push_str("</table>\n<h2>Each learner</h2>\n<p class=\"legend\"><span class=\"passed\">passed</span><span class=\"failing\">failing</span><span class=\"broken\">does not compile</span><span class=\"not_started\">not started</span></p>\n<table><tr><th>learner</th>");
    for entry in lessons {
        let _ = write!(page, "<th>{:02}</th>", entry.number);
    }
    page.push_str("</tr>\n");
    for learner in class {
        let _ = write!(page, "<tr><td>{}</td>", escape(&learner.name));
        for entry in lessons {
            let l = lesson(learner.latest(), entry.number);
            let state = l.map_or("not_started", |l| l.state.as_str());
            let (class_name, mark) = match state {
                "passed" => ("passed", "✓".to_string()),
                "does_not_compile" => ("broken", "!".to_string()),
                "failing" | "timed_out" => ("failing", l.map_or(0, |l| l.failed).to_string()),
                _ => ("not_started", "·".to_string()),
            };
            let title = l
                .and_then(|l| l.first_failure.as_ref().or(l.compiler_error.as_ref()))
                .map(|t| escape(t))
                .unwrap_or_else(|| state.replace('_', " "));
            let _ = write!(
                page,
                "<td class=\"cell {class_name}\" title=\"{title}\">{mark}</td>"
            );
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
    let common = common_failures(class);
    if !common.is_empty() {
        page.push_str("<h2>Checks that fail most often</h2>\n<table><tr><th>learners</th><th>lesson</th><th>check</th><th>who</th></tr>\n");
        for (lesson, check, who) in common.iter().take(10) {
            let _ = writeln!(
                page,
                "<tr><td>{}</td><td>{lesson:02}</td><td><code>{}</code></td><td>{}</td></tr>",
                who.len(),
                escape(check),
                escape(&who.join(", "))
            );
        }
        page.push_str("</table>\n");
    }
    let stuck = stuck(class);
    if !stuck.is_empty() {
        page.push_str("<h2>Who may be stuck</h2>\n<ul>\n");
        for (who, lesson, why) in &stuck {
            let _ = writeln!(
                page,
                "<li><b>{}</b> on lesson {lesson:02}: {}</li>",
                escape(who),
                escape(why)
            );
        }
        page.push_str("</ul>\n");
    }
    page.push_str("</body></html>\n");
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::FailingCheck;

    fn entry(n: u32) -> Entry {
        Entry {
            number: n,
            name: format!("lesson_{n:02}"),
            title: format!("Lesson {n}"),
            kind: kata_catalog::Kind::SharedLimiter,
            milestones: Vec::new(),
        }
    }

    fn lesson_report(n: u32, state: &str, hints: usize, failure: Option<&str>) -> LessonReport {
        LessonReport {
            number: n,
            name: format!("lesson_{n:02}"),
            title: format!("Lesson {n}"),
            state: state.into(),
            file: "fnv1a64:0".into(),
            hints_shown: hints,
            checks: 3,
            failed: usize::from(state == "failing"),
            first_failure: failure.map(String::from),
            compiler_error: None,
            failing: if state == "failing" {
                vec![FailingCheck {
                    name: "keeps_the_limit".into(),
                    kind: "property".into(),
                }]
            } else {
                vec![]
            },
            milestones: Vec::new(),
        }
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

    #[test]
    fn tallies_common_failures_and_who_is_stuck() {
        let lessons = [entry(1), entry(2)];
        let ada = Learner {
            name: "ada".into(),
            reports: vec![
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
        };
        let bob = Learner {
            name: "bob".into(),
            reports: vec![report(
                "bob",
                "2026-12-01T10:30:00Z",
                vec![
                    lesson_report(1, "failing", 2, Some("y")),
                    lesson_report(2, "not_started", 0, None),
                ],
            )],
        };
        // Failed otherwise at first, then the same way for the last 20 minutes.
        let cal = Learner {
            name: "cal".into(),
            reports: vec![
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
        };
        assert_eq!(
            stuck(&[cal]),
            vec![(
                "cal".to_string(),
                1,
                "the same failure for 20 min".to_string()
            )]
        );
        let class = [ada, bob];
        let t = tallies(&lessons, &class);
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
        let common = common_failures(&class);
        assert_eq!(common[0].2.len(), 1);
        let stuck = stuck(&class);
        assert!(
            stuck.contains(&("ada".into(), 2, "the same failure for 30 min".into())),
            "{stuck:?}"
        );
        assert!(
            stuck.contains(&("bob".into(), 1, "2 hints".into())),
            "{stuck:?}"
        );
        let page = html(&lessons, &class);
        assert!(page.contains("<td class=\"cell passed\"") && page.ends_with("</html>\n"));
        assert!(table(&lessons, &class).contains("ada  +x"));
    }
}
