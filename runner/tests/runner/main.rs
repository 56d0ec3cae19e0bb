//! The runner (`cargo run`), driven as a learner would drive it, on a small
//! kata of fixture lessons: one passing, one failing, one that does not
//! compile, one that hangs, one not started. The fixture is its own package,
//! built in its own target directory (a nested cargo must not share ours).

use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

/// The kata's root (this crate is its `runner/`).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

mod fixture;
mod serve;

use fixture::kata;

/// The runner's runs share the fixture and its target directory: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

struct Run {
    code: i32,
    out: String,
    err: String,
}

fn runner_with(args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Run {
    let kata = kata();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelimit-kata"))
        .args(args)
        .arg("--root")
        .arg(kata)
        .env("CARGO_TARGET_DIR", fixture::target())
        .env("KATA_TIME_LIMIT_SECS", "3")
        .env("NO_COLOR", "1")
        .env_remove("KATA_SUBJECT")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runner starts");
    {
        use std::io::Write;
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).unwrap();
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().unwrap();
    Run {
        code: status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&stdout).into_owned(),
        err: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

fn runner(args: &[&str]) -> Run {
    runner_with(args, "", &[])
}

#[test]
fn status_lists_every_lesson_and_the_next_step() {
    let _one = serial();
    let run = runner(&[]);
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    let line = |n: &str| {
        run.out
            .lines()
            .find(|l| l.trim_start().starts_with(n))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("01").contains("passed"), "{}", run.out);
    assert!(line("02").contains("failing"), "{}", run.out);
    assert!(line("03").contains("does not compile"), "{}", run.out);
    assert!(line("04").contains("failing"), "{}", run.out);
    assert!(line("05").contains("not started"), "{}", run.out);
    assert!(run.out.contains("1 of 5 lessons passed"), "{}", run.out);
    assert!(run.out.contains("Next: Continue lesson 02"), "{}", run.out);
    assert!(run.out.contains("cargo run -- watch 2"), "{}", run.out);
}

#[test]
fn test_runs_tier_by_tier_and_exits_with_the_result() {
    let _one = serial();
    let passed = runner(&["test", "1"]);
    assert_eq!(passed.code, 0, "{}", passed.out);
    assert!(passed.out.contains("passed"), "{}", passed.out);

    let failing = runner(&["test", "2"]);
    assert_eq!(failing.code, 1, "{}", failing.out);
    // The quick checks run first and fail; the run stops there and says
    // what it did not run, and how to run it anyway.
    assert!(
        failing.out.contains("FAIL  quick checks"),
        "{}",
        failing.out
    );
    assert!(
        failing.out.contains("not run: properties")
            && failing
                .out
                .contains("`cargo run -- test 2 --all` runs them anyway"),
        "{}",
        failing.out
    );
    let all = runner(&["test", "2", "--all"]);
    assert_eq!(all.code, 1, "{}", all.out);
    assert!(
        all.out.contains("  properties ") && !all.out.contains("not run:"),
        "{}",
        all.out
    );
    assert!(failing.out.contains("first failure:"), "{}", failing.out);
    // The failing named examples are listed by name: each states a rule.
    assert!(
        failing.out.contains("failing examples:\n  "),
        "{}",
        failing.out
    );
    // The named example whose name states the bug comes first.
    assert!(
        failing.out.contains("first failure:\n---- examples::"),
        "{}",
        failing.out
    );
    assert!(failing.out.contains("retry after"), "{}", failing.out);

    let details = runner(&["test", "2", "--details"]);
    assert!(details.out.matches("---- ").count() >= 2, "{}", details.out);
}

#[test]
fn a_file_that_does_not_compile_is_shown_once() {
    let _one = serial();
    let run = runner(&["test", "3"]);
    assert_eq!(run.code, 1, "{}", run.out);
    assert!(run.out.contains("does not compile"), "{}", run.out);
    assert!(run.out.contains("lessons/lesson_03.rs:"), "{}", run.out);
    assert_eq!(run.out.matches("error[E0308]").count(), 1, "{}", run.out);
}

#[test]
fn a_lesson_that_hangs_fails_with_a_message() {
    let _one = serial();
    let run = runner(&["test", "4"]);
    assert_eq!(run.code, 1, "{}", run.out);
    assert!(run.out.contains("did not return within 3 s"), "{}", run.out);

    // And a run that outlasts the runner's own limit is stopped whole.
    let stopped = runner_with(
        &["test", "4"],
        "",
        &[
            ("KATA_TIME_LIMIT_SECS", "600"),
            ("KATA_RUN_LIMIT_SECS", "5"),
        ],
    );
    assert_eq!(stopped.code, 1, "{}", stopped.out);
    assert!(stopped.out.contains("did not finish"), "{}", stopped.out);
}

#[test]
fn bad_input_gets_a_message_and_exit_code_2() {
    let _one = serial();
    let unknown = runner(&["test", "9"]);
    assert_eq!(unknown.code, 2);
    assert!(
        unknown
            .err
            .contains("there is no lesson 9; the lessons are 1, 2, 3, 4, 5"),
        "{}",
        unknown.err
    );
    let milestone = runner(&["test", "2", "--milestone", "2"]);
    assert_eq!(milestone.code, 2);
    assert!(
        milestone.err.contains("lesson 2 has no milestones"),
        "{}",
        milestone.err
    );
    let scenario = runner(&["compare", "2", "nosuch"]);
    assert_eq!(scenario.code, 2);
    assert!(
        scenario.err.contains("no timeline is named \"nosuch\""),
        "{}",
        scenario.err
    );
    let word = runner(&["hint", "two"]);
    assert_eq!(word.code, 2, "{}", word.err);
    // The fixture kata has no benchmark crate: said, not attempted.
    let bench = runner(&["bench", "1"]);
    assert_eq!(bench.code, 2, "{}", bench.err);
    assert!(bench.err.contains("no bench/ crate"), "{}", bench.err);
}

#[test]
fn hints_come_one_more_each_time() {
    let _one = serial();
    let _ = std::fs::remove_dir_all(kata().join(".kata"));
    // A hint not reached yet is not shown out of turn.
    let ahead = runner(&["hint", "5", "2"]);
    assert_eq!(ahead.code, 2, "{}", ahead.err);
    assert!(ahead.err.contains("you have seen none"), "{}", ahead.err);
    let first = runner(&["hint", "5"]);
    assert!(
        first.out.starts_with("Hint 1: first (1 of 2)"),
        "{}",
        first.out
    );
    let second = runner(&["hint", "5"]);
    assert!(
        second.out.starts_with("Hint 2: second (2 of 2)"),
        "{}",
        second.out
    );
    assert!(second.out.contains("the last hint"), "{}", second.out);
    let again = runner(&["hint", "5", "1"]);
    assert!(
        again.out.starts_with("Hint 1: first (1 of 2)"),
        "{}",
        again.out
    );
    let none = runner(&["hint", "5", "3"]);
    assert_eq!(none.code, 2, "{}", none.err);
    assert!(none.err.contains("hints 1 to 2"), "{}", none.err);
}

#[test]
fn output_piped_into_a_reader_that_stops_ends_quietly() {
    let _one = serial();
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelimit-kata"))
        .args(["hint", "5", "1", "--root"])
        .arg(kata())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the runner starts");
    // The reader goes away before the runner writes anything (`| head -0`).
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    assert_ne!(out.status.code(), Some(101), "{err}");
}

#[test]
fn compare_marks_the_first_difference() {
    let _one = serial();
    let differs = runner(&["compare", "2", "exact_edges"]);
    assert_eq!(differs.code, 1, "{}{}", differs.out, differs.err);
    assert_eq!(
        differs.out.matches("<-- first difference").count(),
        1,
        "{}",
        differs.out
    );
    // The default timeline tells this mistake (a whole window's wait) apart.
    let default = runner(&["compare", "2"]);
    assert_eq!(default.code, 1, "{}{}", default.out, default.err);
    assert!(default.out.starts_with("first_look:"), "{}", default.out);
    assert!(
        default.out.contains("<-- first difference"),
        "{}",
        default.out
    );
    let same = runner(&["compare", "1", "a@0 a@0 a@5"]);
    assert_eq!(same.code, 0, "{}{}", same.out, same.err);
    assert!(
        same.out.contains("no difference on this timeline"),
        "{}",
        same.out
    );
    assert!(
        same.out.contains("requests alone run with L=3 W=1_000ns"),
        "{}",
        same.out
    );
}

#[test]
fn compare_replays_what_a_failure_prints() {
    let _one = serial();
    // Exactly as a failure prints it: the configuration comes with it.
    let run = runner(&["compare", "1", "L=1 W=2ns: b@3 b@3 b@4"]);
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    assert!(run.out.contains("limit 1 per window of 2ns"), "{}", run.out);
    // A failing lesson's messages end with that command.
    let failing = runner(&["test", "2", "--details"]);
    assert!(
        failing
            .out
            .contains("replay it beside the reference's answers:\n  cargo run -- compare 2 'L="),
        "{}",
        failing.out
    );
}

#[test]
fn compare_says_when_the_timeline_shows_nothing_but_checks_fail() {
    let _one = serial();
    let run = runner(&["compare", "2", "a@0"]);
    assert_eq!(run.code, 1, "{}{}", run.out, run.err);
    assert!(
        run.out.contains("no difference on this timeline"),
        "{}",
        run.out
    );
    assert!(run.out.contains("checks of lesson 02 fail"), "{}", run.out);
    assert!(run.out.contains("cargo run -- compare 2 '"), "{}", run.out);
}

#[test]
fn compare_judges_late_requests_by_the_contracts_rules() {
    let _one = serial();
    // Request #2 is late (at 3 after 5): the contract does not fix its
    // answer, but the wait it gives must be the shortest, and a whole
    // window's wait is not.
    let run = runner(&["compare", "2", "L=1 W=10ns: a@5 a@3"]);
    assert!(
        !run.out.contains("no difference on this timeline"),
        "{}{}",
        run.out,
        run.err
    );
    assert!(
        run.out
            .contains("where it allows more than one (a late request"),
        "{}",
        run.out
    );
    assert!(run.out.contains("must be the shortest wait"), "{}", run.out);
}

#[test]
fn compare_fails_with_the_table_when_the_limiter_hangs() {
    let _one = serial();
    let run = runner(&["compare", "4", "a@0 a@1"]);
    assert_eq!(run.code, 1, "{}{}", run.out, run.err);
    assert!(run.out.contains("did not return within 3 s"), "{}", run.out);
    assert!(run.out.contains("#  time"), "{}", run.out);
}

#[test]
fn report_json_follows_its_schema() {
    let _one = serial();
    let _ = std::fs::remove_dir_all(kata().join(".kata"));
    let hint = runner(&["hint", "2"]);
    assert_eq!(hint.code, 0, "{}", hint.err);
    let run = runner(&["report", "--json", "--name", "Ada"]);
    // Not every lesson started passes: exit code 1.
    assert_eq!(run.code, 1, "{}", run.err);
    let report: serde_json::Value = serde_json::from_str(&run.out).expect("JSON");
    assert_eq!(report["schema"], "ratelimit-kata/report/2");
    assert_eq!(report["learner"], "Ada");
    assert_eq!(report["when"].as_str().unwrap().len(), 20, "{report}");
    let lessons = report["lessons"].as_array().unwrap();
    let states: Vec<&str> = lessons
        .iter()
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        [
            "passed",
            "failing",
            "does_not_compile",
            "failing",
            "not_started"
        ]
    );
    let failing = lessons[1]["failing"].as_array().unwrap();
    assert!(
        failing.iter().any(|c| c["kind"] == "example"),
        "{failing:?}"
    );
    assert!(failing.iter().all(|c| c["name"].is_string()));
    assert!(
        lessons[1]["first_failure"]
            .as_str()
            .unwrap()
            .starts_with("examples::"),
        "{}",
        lessons[1]
    );
    assert_eq!(lessons[1]["hints_shown"], 1);
    assert!(
        lessons[2]["compiler_error"]
            .as_str()
            .unwrap()
            .contains("lessons/lesson_03.rs:"),
        "{}",
        lessons[2]
    );
    assert!(lessons[4]["failing"].as_array().unwrap().is_empty());
    assert!(lessons[0]["file"].as_str().unwrap().starts_with("fnv1a64:"));

    // Nothing changed: every lesson comes from the cache, without cargo,
    // but for the one that hung: a hang depends on how busy the machine
    // was, and is never kept.
    let again = runner_with(&["report", "--json"], "", &[("CARGO", "/bin/false")]);
    let second: serde_json::Value = serde_json::from_str(&again.out).expect("JSON");
    let states_again: Vec<&str> = second["lessons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        [
            states_again[0],
            states_again[1],
            states_again[2],
            states_again[4]
        ],
        [states[0], states[1], states[2], states[4]],
        "{}",
        again.err
    );
    assert_ne!(states_again[3], "failing", "a hang was kept: {}", again.out);

    // What CI prints of the report it uploads: a point per lesson of the
    // catalog (the fixture's have no milestones), the passing one reached.
    let file = kata().parent().unwrap().join("report-ada.json");
    std::fs::write(&file, &run.out).unwrap();
    let points = runner(&["points", file.to_str().unwrap()]);
    assert_eq!(points.code, 0, "{}", points.err);
    assert!(points.out.starts_with("points of Ada ("), "{}", points.out);
    assert!(points.out.contains("): 1 of 5\n"), "{}", points.out);
    assert!(points.out.contains("  01      Passing"), "{}", points.out);
    std::fs::write(&file, "{}").unwrap();
    let refused = runner(&["points", file.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{}", refused.out);
    assert!(refused.err.contains("not a report of"), "{}", refused.err);
}

#[test]
fn class_hands_its_line_to_the_instructors_crate() {
    // The class view is the crate `kata-class` (its tests: class-view/tests);
    // the runner only starts it, through cargo, in the caller's folder (a
    // relative PATH is the caller's), with the kata it was given (a
    // `--root` among the class view's arguments is the runner's), and
    // exits as it does. Here "cargo" is a script: what the runner would run.
    let script = kata().parent().unwrap().join("fake-cargo.sh");
    std::fs::write(&script, "#!/bin/sh\necho \"$PWD\" \"$@\"\nexit 3\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let run = runner_with(
        &["class", "folder", "--points"],
        "",
        &[("CARGO", script.to_str().unwrap())],
    );
    assert_eq!(run.code, 3, "{}{}", run.out, run.err);
    let line: Vec<&str> = run.out.split_whitespace().collect();
    let kata = kata().canonicalize().unwrap();
    let manifest = std::path::Path::new(ROOT).join("class-view/Cargo.toml");
    let here = std::env::current_dir().unwrap();
    assert_eq!(
        line,
        [
            here.to_str().unwrap(),
            "run",
            "--quiet",
            "--manifest-path",
            manifest.to_str().unwrap(),
            "--bin",
            "kata-class",
            "--",
            "--root",
            kata.to_str().unwrap(),
            "folder",
            "--points",
        ],
        "{}",
        run.out
    );
}

#[test]
fn watch_reruns_on_enter_and_quits_on_q() {
    let _one = serial();
    let run = runner_with(&["watch", "1"], "\nq\n", &[]);
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    // Two runs, each to the end: the heading, then the verdict.
    assert_eq!(
        run.out.matches("lesson 01, Passing\n").count(),
        2,
        "{}",
        run.out
    );
    assert_eq!(run.out.matches("\npassed (").count(), 2, "{}", run.out);
}

#[test]
fn reset_restores_the_stub_and_keeps_every_version() {
    let _one = serial();
    let kata = kata();
    let file = kata.join("lessons/lesson_02.rs");
    let stub = std::fs::read_to_string(kata.join("lessons/stubs/lesson_02.rs")).unwrap();
    let before = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_dir_all(kata.join("lessons/backups"));
    let run = runner(&["reset", "2"]);
    assert_eq!(run.code, 0, "{}", run.err);
    assert!(
        run.out.contains("lessons/backups/lesson_02.1.rs"),
        "{}",
        run.out
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stub);
    // A second attempt, reset again: both versions are kept.
    std::fs::write(&file, "// attempt two\n").unwrap();
    let again = runner(&["reset", "2"]);
    assert_eq!(again.code, 0, "{}", again.err);
    // Resetting the stub itself keeps nothing more.
    let third = runner(&["reset", "2"]);
    assert_eq!(third.code, 0, "{}", third.err);
    assert!(third.out.contains("already the stub"), "{}", third.out);
    let read = |n: u32| {
        std::fs::read_to_string(kata.join(format!("lessons/backups/lesson_02.{n}.rs"))).ok()
    };
    assert_eq!(read(1).as_deref(), Some(before.as_str()));
    assert_eq!(read(2).as_deref(), Some("// attempt two\n"));
    assert_eq!(read(3), None);
    // Put the failing learner file back for the other tests.
    std::fs::write(&file, before).unwrap();
}
