//! Milestones and points. A lesson cut into milestones (lessons 07, 08, 09
//! and 10) is worth a point for each milestone reached; a lesson without them
//! is one milestone, reached when the lesson passes. Every report is scored
//! against the catalog (`lessons/lessons.toml`), the one the graders of the
//! GitHub workflow come from: each of its lessons and milestones counts
//! once, whatever the report lists (a lesson listed twice counts once, as
//! the first listing says; one missing, or a milestone missing, is not
//! reached; what the catalog does not hold is ignored), so that every
//! learner is scored out of the same total. A milestone is reached when the
//! report says so of it and of every earlier one, or when the lesson
//! passed; the report's titles are not shown, the catalog's are. The table
//! CI prints and the class view agree, as they score alike.

use std::fmt::Write as _;

use crate::report::{LessonReport, Report};
use crate::runner::Entry;

/// One line of the points table: a milestone (or a whole lesson) and
/// whether it was reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Point {
    pub lesson: u32,
    /// `None` for a lesson without milestones.
    pub milestone: Option<usize>,
    pub title: String,
    pub reached: bool,
}

impl Point {
    /// `07.2`, or `01` for a whole lesson.
    pub fn label(&self) -> String {
        match self.milestone {
            Some(k) => format!("{:02}.{k}", self.lesson),
            None => format!("{:02}", self.lesson),
        }
    }
}

/// A point per milestone of each lesson of the catalog, `lessons`, in
/// order, each reached or not as the report says.
pub fn points(lessons: &[Entry], report: &Report) -> Vec<Point> {
    let mut out = Vec::new();
    for entry in lessons {
        let theirs = lesson(report, entry.number);
        let passed = theirs.is_some_and(|l| l.state == "passed");
        if entry.milestones.is_empty() {
            out.push(Point {
                lesson: entry.number,
                milestone: None,
                title: entry.title.clone(),
                reached: passed,
            });
        }
        let mut so_far = true;
        for m in &entry.milestones {
            let said = theirs.is_some_and(|l| {
                l.milestones
                    .iter()
                    .find(|r| r.number == m.number)
                    .is_some_and(|r| r.reached)
            });
            so_far &= passed || said;
            out.push(Point {
                lesson: entry.number,
                milestone: Some(m.number),
                title: m.title.clone(),
                reached: so_far,
            });
        }
    }
    out
}

/// `(reached, of)`.
pub fn score(points: &[Point]) -> (usize, usize) {
    (points.iter().filter(|p| p.reached).count(), points.len())
}

/// The points table CI prints (`cargo run -- points report.json`):
/// every milestone of the catalog, `lessons`, with its point, and the total.
pub fn table(lessons: &[Entry], who: &str, report: &Report) -> String {
    let points = points(lessons, report);
    let (reached, of) = score(&points);
    let mut out = String::new();
    let commit = report
        .commit
        .as_deref()
        .map(|c| format!(", commit {}", c.get(..12).unwrap_or(c)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "points of {} ({}{commit}): {reached} of {of}\n",
        printable(who),
        printable(&report.when)
    );
    let width = points
        .iter()
        .map(|p| p.title.chars().count())
        .max()
        .unwrap_or(0)
        .max("milestone".len());
    let _ = writeln!(out, "  {:<6}  {:<width$}  points", "lesson", "milestone");
    for p in &points {
        let _ = writeln!(
            out,
            "  {:<6}  {:<width$}  {}/1",
            p.label(),
            printable(&p.title),
            u8::from(p.reached)
        );
    }
    let _ = writeln!(out, "  {:<6}  {:<width$}  {reached}/{of}", "total", "");
    out
}

/// A lesson of a report, the first listing of its number.
pub fn lesson(report: &Report, number: u32) -> Option<&LessonReport> {
    report.lessons.iter().find(|l| l.number == number)
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

    /// The kata's own catalog: 37 points.
    fn catalog() -> Vec<Entry> {
        let kata = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        crate::runner::lessons(&kata).unwrap()
    }

    /// A lesson as a report lists it: `(number, state, milestones reached
    /// or not)`.
    type Listed<'a> = (u32, &'a str, &'a [(usize, bool)]);

    /// A report of these lessons.
    fn report(lessons: &[Listed]) -> Report {
        let lessons: Vec<serde_json::Value> = lessons
            .iter()
            .map(|(n, state, milestones)| {
                serde_json::json!({
                    "number": n, "name": format!("lesson_{n:02}"), "title": "Its own title",
                    "state": state, "file": "", "hints_shown": 0, "checks": 3, "failed": 0,
                    "first_failure": null, "compiler_error": null, "failing": [],
                    "milestones": milestones.iter().map(|(k, reached)| serde_json::json!({
                        "number": k, "title": "A title of its own", "reached": reached
                    })).collect::<Vec<_>>()
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "schema": crate::report::SCHEMA, "learner": "ada", "when": "2026-12-01T10:00:00Z",
            "commit": "0123456789abcdef0123", "lessons": lessons
        }))
        .unwrap()
    }

    #[test]
    fn a_point_per_milestone_of_the_catalog_and_one_per_lesson_without() {
        let lessons = catalog();
        let report = report(&[
            (1, "passed", &[]),
            (2, "failing", &[]),
            (7, "failing", &[(1, true), (2, false)]),
        ]);
        let points = points(&lessons, &report);
        let labels: Vec<String> = points.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "01", "02", "03", "04", "05", "06", "07.1", "07.2", "07.3", "08.1", "08.2", "08.3",
                "08.4", "08.5", "09.1", "09.2", "09.3", "09.4", "10.1", "10.2", "10.3", "10.4",
                "10.5", "11.1", "11.2", "11.3", "11.4", "12.1", "12.2", "12.3", "12.4", "12.5",
                "13.1", "13.2", "13.3", "13.4", "13.5"
            ]
        );
        assert_eq!(score(&points), (2, 37));
        let shown = table(&lessons, "ada", &report);
        assert!(
            shown.starts_with(
                "points of ada (2026-12-01T10:00:00Z, commit 0123456789ab): 2 of 37\n"
            ),
            "{shown}"
        );
        // The catalog's titles, not the report's.
        let width = points
            .iter()
            .map(|p| p.title.chars().count())
            .max()
            .unwrap();
        assert!(
            shown.contains(&format!("  07.2    {:<width$}  0/1\n", "The client's key")),
            "{shown}"
        );
        assert!(!shown.contains("title of its own"), "{shown}");
        assert!(
            shown.ends_with(&format!("  total   {:<width$}  2/37\n", "")),
            "{shown}"
        );
    }

    #[test]
    fn what_a_report_lists_twice_leaves_out_or_adds_changes_nothing() {
        let lessons = catalog();
        let score_of = |lessons_of: &[Listed]| score(&points(&lessons, &report(lessons_of)));
        // Lessons 01 to 06 passed and nothing else listed: out of 37, not 6.
        let six: Vec<Listed> = (1..=6).map(|n| (n, "passed", &[][..])).collect();
        assert_eq!(score_of(&six), (6, 37));
        // A lesson listed twice counts once; a milestone listed twice too.
        assert_eq!(
            score_of(&[
                (1, "passed", &[]),
                (1, "passed", &[]),
                (7, "failing", &[(1, true), (1, true)]),
            ]),
            (2, 37)
        );
        // Lessons and milestones the catalog does not hold count for nothing.
        assert_eq!(
            score_of(&[
                (1, "passed", &[(1, true), (2, true)]),
                (42, "passed", &[]),
                (7, "failing", &[(1, true), (9, true)]),
            ]),
            (2, 37)
        );
        // A milestone is reached with every earlier one, as the runner reaches
        // them.
        assert_eq!(
            score_of(&[(8, "failing", &[(2, true), (3, true)])]),
            (0, 37)
        );
        // A lesson with milestones reported without them (a report made
        // before milestones) reaches them all when it passed.
        assert_eq!(score_of(&[(9, "passed", &[])]), (4, 37));
        assert_eq!(score_of(&[(9, "failing", &[])]), (0, 37));
    }
}
