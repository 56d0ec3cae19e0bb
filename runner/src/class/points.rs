//! Milestones and points. A lesson cut into milestones (lessons 07, 08 and
//! 09) is worth a point for each milestone reached; a lesson without them
//! is one milestone, reached when the lesson passes. The points come from a
//! report alone (`report --json` lists each lesson's milestones and whether
//! each is reached), so the table CI prints and the class view agree; a
//! report made before milestones has a point per lesson.

use std::fmt::Write as _;

use crate::report::Report;

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

/// A point per milestone of each lesson of the report, in order.
pub fn points(report: &Report) -> Vec<Point> {
    let mut out = Vec::new();
    for lesson in &report.lessons {
        if lesson.milestones.is_empty() {
            out.push(Point {
                lesson: lesson.number,
                milestone: None,
                title: lesson.title.clone(),
                reached: lesson.state == "passed",
            });
        }
        out.extend(lesson.milestones.iter().map(|m| Point {
            lesson: lesson.number,
            milestone: Some(m.number),
            title: m.title.clone(),
            reached: m.reached,
        }));
    }
    out
}

/// `(reached, of)`.
pub fn score(points: &[Point]) -> (usize, usize) {
    (points.iter().filter(|p| p.reached).count(), points.len())
}

/// The points table CI prints (`cargo run -- class report.json --points`):
/// every milestone with its point, and the total.
pub fn table(who: &str, report: &Report) -> String {
    let points = points(report);
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
        super::printable(who),
        super::printable(&report.when)
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
            super::printable(&p.title),
            u8::from(p.reached)
        );
    }
    let _ = writeln!(out, "  {:<6}  {:<width$}  {reached}/{of}", "total", "");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_per_milestone_and_one_per_lesson_without() {
        let text = r#"{"schema":"ratelimit-kata/report/2","learner":"ada","when":"2026-12-01T10:00:00Z","commit":"0123456789abcdef0123",
            "lessons":[
              {"number":1,"name":"lesson_01","title":"The naive counter","state":"passed","file":"","hints_shown":0,"checks":3,"failed":0,"first_failure":null,"compiler_error":null,"failing":[]},
              {"number":2,"name":"lesson_02","title":"The concurrent fixed window","state":"failing","file":"","hints_shown":0,"checks":3,"failed":1,"first_failure":"x","compiler_error":null,"failing":[],"milestones":[]},
              {"number":7,"name":"lesson_07","title":"The layer","state":"failing","file":"","hints_shown":0,"checks":3,"failed":1,"first_failure":"x","compiler_error":null,"failing":[],
               "milestones":[{"number":1,"title":"The policy and the 429","reached":true},{"number":2,"title":"The client's key","reached":false}]}]}"#;
        let report: Report = serde_json::from_str(text).unwrap();
        let points = points(&report);
        let labels: Vec<String> = points.iter().map(Point::label).collect();
        assert_eq!(labels, ["01", "02", "07.1", "07.2"]);
        assert_eq!(score(&points), (2, 4));
        let shown = table("ada", &report);
        assert!(
            shown
                .starts_with("points of ada (2026-12-01T10:00:00Z, commit 0123456789ab): 2 of 4\n"),
            "{shown}"
        );
        assert!(
            shown.contains("  07.2    The client's key             0/1\n"),
            "{shown}"
        );
        assert!(
            shown.ends_with("  total                                2/4\n"),
            "{shown}"
        );
    }
}
