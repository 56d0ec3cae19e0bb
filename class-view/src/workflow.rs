//! The CI files that grade a class, where it pushes: GitHub Classroom's
//! autograding workflow, written from the catalog (one grader step per
//! milestone, a point each; a lesson without milestones is one), and the
//! GitLab job beside it, written by hand. Both run the report, keep it as an
//! artifact and print the points with the runner's `points`, so both print the
//! same table. `cargo run -p kata-class --bin autograding -- --write`
//! writes the workflow again when the milestones change; a test fails
//! while the file on disk is not what it would write.

use std::fmt::Write as _;

use kata_runner::runner::Entry;

/// The workflow's place: the name GitHub Classroom gives its own, so that
/// tests added in Classroom's page replace this file rather than run beside
/// it.
pub const GITHUB: &str = ".github/workflows/classroom.yml";

/// The GitLab job's place: the file GitLab runs without being told.
pub const GITLAB: &str = ".gitlab-ci.yml";

/// How CI makes the report; `$LEARNER` names the learner's repository.
pub const REPORT: &str =
    "cargo run --locked --quiet -- report --json --name \"$LEARNER\" > report.json";

/// How CI prints the points.
pub const POINTS: &str = "cargo run --locked --quiet -- points report.json";

/// The shell lines that say whether any lesson file differs from its stub
/// (`started=true`): in the kata's own repository, and in a learner's that
/// has started nothing, every file is its stub and nothing is graded.
pub const STARTED: &str = "started=false
for stub in lessons/stubs/lesson_*.rs; do
  cmp -s \"$stub\" \"lessons/${stub##*/}\" || started=true
done";

/// A YAML scalar in double quotes (a JSON string is one).
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// One grader: its step id, its name (`07.2 The client's key`) and the
/// command that passes when the milestone is reached.
struct Grader {
    id: String,
    name: String,
    command: String,
}

fn graders(lessons: &[Entry]) -> Vec<Grader> {
    let mut out = Vec::new();
    for entry in lessons {
        let n = entry.number;
        if entry.milestones.is_empty() {
            out.push(Grader {
                id: format!("lesson{n:02}"),
                name: format!("{n:02} {}", entry.title),
                command: format!("cargo run --locked --quiet -- test {n}"),
            });
        }
        for m in &entry.milestones {
            let k = m.number;
            out.push(Grader {
                id: format!("lesson{n:02}m{k}"),
                name: format!("{n:02}.{k} {}", m.title),
                command: format!("cargo run --locked --quiet -- test {n} --milestone {k}"),
            });
        }
    }
    out
}

/// The GitHub Classroom workflow for these lessons.
pub fn github(lessons: &[Entry]) -> String {
    let graders = graders(lessons);
    let mut y = String::new();
    let started = "steps.started.outputs.started == 'true'";
    let indented = |text: &str, by: usize| -> String {
        text.lines()
            .map(|l| format!("{}{l}\n", " ".repeat(by)))
            .collect()
    };
    let _ = write!(
        y,
        "# GitHub Classroom's autograding for this kata, written by
# `cargo run -p kata-class --bin autograding -- --write` from
# lessons/lessons.toml (a test fails while this file is not what it writes).
# On each push to a learner's repository: the report (`cargo run -- report
# --json`) as an artifact, the points per milestone printed, and a grader
# per milestone, a point each (a lesson without milestones is one), which
# Classroom adds up. In the kata's own repository, and in a learner's that
# has started no lesson, every lesson file is its stub: nothing is built.
# Setting up a class: lessons/instructors.md.
#
# Classroom reads the results of a workflow named \"Autograding Tests\" with
# one job, \"run-autograding-tests\": keep both names.
name: Autograding Tests

on:
  push:
  workflow_dispatch:
  repository_dispatch:

permissions:
  actions: read
  contents: read

# A newer push supersedes a run still going.
concurrency:
  group: ${{{{ github.workflow }}}}-${{{{ github.ref }}}}
  cancel-in-progress: true

jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    # Not the commit Classroom makes when it creates the repository.
    if: github.actor != 'github-classroom[bot]'
    timeout-minutes: 90
    steps:
      - name: Checkout code
        uses: actions/checkout@v7
        with:
          # The learner's code runs in this job: it gets no token.
          persist-credentials: false

      - name: Has a lesson started?
        id: started
        run: |
{started_lines}          echo \"started=$started\" >> \"$GITHUB_OUTPUT\"
          if [ \"$started\" = false ]; then
            echo \"::notice title=Nothing to grade::every lesson file is still its stub\"
          fi

      - name: Install redis-server (lesson 08 starts its own)
        if: {started}
        run: sudo apt-get update -qq && sudo apt-get install -y -qq redis-server

      - name: Report
        if: {started}
        env:
          LEARNER: ${{{{ github.event.repository.name }}}}
        run: |
          set +e
          {REPORT}
          status=$?
          set -e
          # 0: every lesson started passes; 1: some fail. Anything else is the
          # runner's own failure.
          [ \"$status\" -le 1 ]

      - name: Upload the report
        if: always() && {started}
        uses: actions/upload-artifact@v7
        with:
          name: report-${{{{ github.event.repository.name }}}}
          path: report.json
          if-no-files-found: error
          retention-days: 90

      - name: Points per milestone
        if: {started}
        run: {POINTS}
",
        started_lines = indented(STARTED, 10),
    );
    for g in &graders {
        let _ = write!(
            y,
            "
      - name: {name}
        id: {id}
        if: {started}
        uses: classroom-resources/autograding-command-grader@v1
        with:
          test-name: {name}
          command: {command}
          timeout: 15
          max-score: 1
",
            name = quoted(&g.name),
            id = g.id,
            command = g.command,
        );
    }
    let _ = write!(
        y,
        "
      - name: Autograding Reporter
        if: {started}
        uses: classroom-resources/autograding-grading-reporter@v1
        env:
"
    );
    for g in &graders {
        let _ = writeln!(
            y,
            "          {}_RESULTS: \"${{{{ steps.{}.outputs.result }}}}\"",
            g.id.to_uppercase(),
            g.id
        );
    }
    let ids: Vec<&str> = graders.iter().map(|g| g.id.as_str()).collect();
    let _ = write!(y, "        with:\n          runners: {}\n", ids.join(","));
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kata() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    #[test]
    fn the_workflow_on_disk_is_the_one_the_catalog_gives() {
        let lessons = kata_runner::runner::lessons(&kata()).unwrap();
        let written = github(&lessons);
        let on_disk = std::fs::read_to_string(kata().join(GITHUB)).unwrap_or_default();
        assert!(
            on_disk == written,
            "{GITHUB} is not what the catalog gives: run \
             `cargo run -p kata-class --bin autograding -- --write`"
        );
    }

    #[test]
    fn a_grader_per_milestone_and_the_reporter_reads_them_all() {
        let lessons = kata_runner::runner::lessons(&kata()).unwrap();
        let graders = graders(&lessons);
        let expected: usize = lessons.iter().map(|l| l.milestones.len().max(1)).sum();
        assert_eq!(graders.len(), expected);
        let text = github(&lessons);
        for g in &graders {
            assert!(
                text.contains(&format!("        id: {}\n", g.id)),
                "{}",
                g.id
            );
            assert!(
                text.contains(&format!(
                    "{}_RESULTS: \"${{{{ steps.{}.outputs.result }}}}\"",
                    g.id.to_uppercase(),
                    g.id
                )),
                "{}",
                g.id
            );
            // The reporter's runners are letters and digits.
            assert!(g.id.chars().all(|c| c.is_ascii_alphanumeric()), "{}", g.id);
        }
        let runners: Vec<String> = graders.iter().map(|g| g.id.clone()).collect();
        assert!(text.contains(&format!("runners: {}\n", runners.join(","))));
        // Lesson 07's milestones, and a lesson without, as their commands.
        assert!(text.contains("command: cargo run --locked --quiet -- test 7 --milestone 2\n"));
        assert!(text.contains("command: cargo run --locked --quiet -- test 1\n"));
        assert!(text.contains("name: \"07.2 The client's key\""), "{text}");
    }

    #[test]
    fn the_points_ci_prints_are_the_graders_whatever_the_report_lists() {
        let lessons = kata_runner::runner::lessons(&kata()).unwrap();
        let graders: Vec<String> = graders(&lessons).into_iter().map(|g| g.name).collect();
        // A report that lists nothing, and one that lists a lesson twice and
        // one the catalog does not hold: `points` prints a line per
        // grader, in order, and its total is the graders' maximum.
        let empty = kata_runner::report::Report {
            schema: kata_runner::report::SCHEMA.into(),
            learner: Some("ada".into()),
            when: "2026-12-01T10:00:00Z".into(),
            commit: None,
            lessons: Vec::new(),
        };
        let mut odd = empty.clone();
        let lesson = |n: u32| -> kata_runner::report::LessonReport {
            serde_json::from_value(serde_json::json!({
                "number": n, "name": format!("lesson_{n:02}"), "title": "x", "state": "passed",
                "file": "", "hints_shown": 0, "checks": 1, "failed": 0, "first_failure": null,
                "compiler_error": null, "failing": []
            }))
            .unwrap()
        };
        odd.lessons = vec![lesson(1), lesson(1), lesson(42)];
        for report in [&empty, &odd] {
            let points = kata_runner::points::points(&lessons, report);
            let lines: Vec<String> = points
                .iter()
                .map(|p| format!("{} {}", p.label(), p.title))
                .collect();
            assert_eq!(lines, graders);
            let table = kata_runner::points::table(&lessons, "ada", report);
            assert!(
                table.contains(&format!(" of {}\n", graders.len())),
                "{table}"
            );
        }
    }

    #[test]
    fn the_gitlab_job_makes_the_same_report_and_prints_the_same_points() {
        let job = std::fs::read_to_string(kata().join(GITLAB)).unwrap();
        for line in [REPORT, POINTS] {
            assert!(job.contains(line), "{GITLAB} lacks `{line}`");
        }
        for line in STARTED.lines() {
            assert!(job.contains(line.trim()), "{GITLAB} lacks `{line}`");
        }
        assert!(
            job.contains("- report.json"),
            "{GITLAB} keeps no report.json"
        );
    }
}
