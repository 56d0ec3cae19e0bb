//! The runner (`cargo run`), driven as a learner would drive it, on a small
//! kata of fixture lessons: one passing, one failing, one that does not
//! compile, one that hangs, one not started. The fixture is its own package,
//! built in its own target directory (a nested cargo must not share ours).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// The kata's root (this crate is its `runner/`).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

/// One fixture lesson: its learner file and what it should show.
struct Fixture {
    number: u32,
    title: &'static str,
    learner: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).expect("a kata file")
}

/// A mistake of the gallery as its whole file: the reference with its diff.
fn mistake(lesson: u32, name: &str) -> String {
    let catalog = kata_catalog::Catalog::load(Path::new(ROOT)).expect("the kata's catalog");
    let lesson = catalog.lesson(lesson).expect("a lesson of the catalog");
    let file = lesson
        .mistakes
        .iter()
        .find(|m| m.name == name)
        .expect("a mistake of the gallery");
    catalog
        .mistake_source(lesson, file)
        .expect("its diff applies")
}

fn fixtures() -> Vec<Fixture> {
    let reference = read("solutions/lesson_01.rs");
    let stub = read("lessons/stubs/lesson_01.rs");
    let broken = reference.replace(
        "        state.latest = now;\n",
        "        state.latest = now;\n        let wrong: u32 = state;\n",
    );
    assert_ne!(broken, reference, "the compile error must land in the file");
    let hanging = reference.replace(
        "    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {\n",
        "    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {\n        let mut spins = 0u64;\n        while std::hint::black_box(spins) < u64::MAX {\n            spins += 1;\n        }\n",
    );
    assert_ne!(hanging, reference, "the endless loop must land in the file");
    vec![
        Fixture {
            number: 1,
            title: "Passing",
            learner: reference,
        },
        Fixture {
            number: 2,
            title: "Failing",
            learner: mistake(1, "full_window_retry"),
        },
        Fixture {
            number: 3,
            title: "Not compiling",
            learner: broken,
        },
        Fixture {
            number: 4,
            title: "Hanging",
            learner: hanging,
        },
        Fixture {
            number: 5,
            title: "Not started",
            learner: stub,
        },
    ]
}

/// Writes `text` to `path` unless it already holds it: a fixture written
/// again unchanged keeps its files' times, so cargo does not build its
/// lessons again on every run of these tests.
fn put(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// Forgets what earlier runs of the runner left in a fixture kata: its
/// state (`.kata/`) and the learner files' kept versions.
fn forget_state(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(".kata"));
    let _ = std::fs::remove_dir_all(dir.join("lessons/backups"));
}

/// A fixture kata's manifest (returned, for its caller to write last) and
/// its build script and lock file: the harness and the catalog from this
/// kata, rstest, and `dependencies` (manifest lines) besides.
fn package(dir: &Path, name: &str, dependencies: &str) -> String {
    put(&dir.join("Cargo.lock"), &read("Cargo.lock"));
    put(
        &dir.join("build.rs"),
        "fn main() {\n    kata_catalog::build_script();\n}\n",
    );
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [workspace]\n\n[dependencies]\nkata = {{ package = \"kata-harness\", path = {harness:?} }}\n\
         rstest = {{ version = \"0.29\", default-features = false }}\n{dependencies}\n\
         [build-dependencies]\nkata-catalog = {{ path = {catalog:?} }}\n",
        harness = format!("{ROOT}/src"),
        catalog = format!("{ROOT}/catalog"),
    )
}

/// Writes the fixture kata once per test run and returns its folder.
fn kata() -> &'static Path {
    static KATA: OnceLock<PathBuf> = OnceLock::new();
    KATA.get_or_init(|| {
        let dir = Path::new(ROOT).join("target").join("runner-fixture").join("kata");
        forget_state(&dir);
        for sub in ["lessons/stubs", "solutions", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let manifest = package(&dir, "runner-fixture", "");
        std::fs::create_dir_all(dir.join("tests/snapshots")).unwrap();
        let stub = read("lessons/stubs/lesson_01.rs");
        let mut catalog = String::new();
        for f in fixtures() {
            let name = format!("lesson_{:02}", f.number);
            catalog.push_str(&format!(
                "[[lesson]]\nnumber = {}\ntitle = \"{}\"\nkind = \"limiter\"\ntype = \"FixedWindow\"\nalgorithm = \"FixedWindow\"\n\n",
                f.number, f.title
            ));
            let write = |path: String, text: &str| put(&dir.join(path), text);
            write(format!("lessons/{name}.rs"), &f.learner);
            write(format!("lessons/stubs/{name}.rs"), &stub);
            write(format!("solutions/{name}.rs"), &read("solutions/lesson_01.rs"));
            // Every fixture is lesson 01 under another number: its drawings too.
            for entry in std::fs::read_dir(Path::new(ROOT).join("tests/snapshots")).unwrap() {
                let file = entry.unwrap().file_name().into_string().unwrap();
                if let Some(rest) = file.strip_prefix("lesson_01_") {
                    write(
                        format!("tests/snapshots/{name}_{rest}"),
                        &read(&format!("tests/snapshots/{file}")),
                    );
                }
            }
            write(
                format!("lessons/{name}.md"),
                &format!(
                    "# Lesson {:02} — {}\n\n<details><summary>Hint 1: first</summary>\n\nthe first hint\n\n</details>\n\n\
                     <details><summary>Hint 2: second</summary>\n\nthe second hint\n\n</details>\n",
                    f.number, f.title
                ),
            );
            write(
                format!("tests/{name}.rs"),
                "use rstest::rstest;\n\n\
                 kata::lesson!();\n\n\
                 #[rstest]\n#[case::counts_down(2, 1_000, \"a@0 a@0 a@0\", \"+1 +0 -1000\")]\n#[case::edge(1, 1_000, \"a@0 a@999 a@1000\", \"+0 -1 +0\")]\n\
                 fn examples(#[case] limit: u64, #[case] window: u64, #[case] requests: &str, #[case] expected: &str) {\n\
                 \x20   lesson().example(limit, window, requests, expected);\n}\n",
            );
        }
        put(&dir.join("lessons/lessons.toml"), &catalog);
        put(&dir.join("Cargo.toml"), &manifest);
        dir
    })
}

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
        .env("CARGO_TARGET_DIR", kata.parent().unwrap().join("target"))
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
fn test_sums_up_by_kind_and_exits_with_the_result() {
    let _one = serial();
    let passed = runner(&["test", "1"]);
    assert_eq!(passed.code, 0, "{}", passed.out);
    assert!(passed.out.contains("passed"), "{}", passed.out);

    let failing = runner(&["test", "2"]);
    assert_eq!(failing.code, 1, "{}", failing.out);
    assert!(failing.out.contains("FAIL  examples"), "{}", failing.out);
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
}

#[test]
fn class_shows_reports_and_checkouts_without_touching_them() {
    let _one = serial();
    let kata = kata();
    let folder = kata.parent().unwrap().join("class");
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    // Three reports: one learner twice, half an hour apart, stuck on the
    // same failure; one learner whose lessons all pass.
    let run = runner(&["report", "--json", "--name", "ada"]);
    let mut ada: serde_json::Value = serde_json::from_str(&run.out).expect("JSON");
    ada["when"] = "2026-12-01T10:00:00Z".into();
    std::fs::write(folder.join("ada-1000.json"), ada.to_string()).unwrap();
    ada["when"] = "2026-12-01T10:30:00Z".into();
    std::fs::write(folder.join("ada-1030.json"), ada.to_string()).unwrap();
    let mut cy = ada.clone();
    cy["learner"] = "cy".into();
    for lesson in cy["lessons"].as_array_mut().unwrap() {
        lesson["state"] = "passed".into();
        lesson["failing"] = serde_json::json!([]);
        lesson["first_failure"] = serde_json::Value::Null;
    }
    std::fs::write(folder.join("cy.json"), cy.to_string()).unwrap();
    // One checkout: lesson 01 as the stub, the others as the fixture has them.
    let bob = folder.join("bob");
    std::fs::create_dir_all(bob.join("lessons")).unwrap();
    for n in 1..=5 {
        let name = format!("lessons/lesson_{n:02}.rs");
        std::fs::copy(kata.join(&name), bob.join(&name)).unwrap();
    }
    std::fs::copy(
        kata.join("lessons/stubs/lesson_01.rs"),
        bob.join("lessons/lesson_01.rs"),
    )
    .unwrap();
    let before = std::fs::read(bob.join("lessons/lesson_02.rs")).unwrap();

    let class = runner(&["class", folder.to_str().unwrap()]);
    assert_eq!(class.code, 0, "{}{}", class.out, class.err);
    assert!(class.out.contains("class of 3 learners"), "{}", class.out);
    // ada: + x ! x .; bob: . x ! x .; cy: all passed.
    assert!(class.out.contains("ada  +x!x."), "{}", class.out);
    assert!(class.out.contains("bob  .x!x."), "{}", class.out);
    assert!(class.out.contains("cy   +++++"), "{}", class.out);
    assert!(
        class
            .out
            .contains("ada on lesson 02: the same failure for 30 min"),
        "{}",
        class.out
    );
    assert!(
        class.out.contains("checks that fail most often"),
        "{}",
        class.out
    );
    let page = std::fs::read_to_string(folder.join("class.html")).unwrap();
    assert!(
        page.starts_with("<!doctype html>") && page.contains("bob"),
        "{page}"
    );
    // The checkout is read, never written.
    assert_eq!(
        std::fs::read(bob.join("lessons/lesson_02.rs")).unwrap(),
        before
    );
    assert!(!bob.join(".kata").exists());

    let empty = folder.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let none = runner(&["class", empty.to_str().unwrap()]);
    assert_eq!(none.code, 2, "{}", none.err);
    assert!(none.err.contains("holds no report"), "{}", none.err);
}

#[test]
fn watch_reruns_on_enter_and_quits_on_q() {
    let _one = serial();
    let run = runner_with(&["watch", "1"], "\nq\n", &[]);
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    assert_eq!(
        run.out.matches("lesson 01, Passing: passed").count(),
        2,
        "{}",
        run.out
    );
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

/// A second fixture kata, of one lesson: lesson 07's layer (the reference,
/// as the learner's file), sharing the first fixture's target directory so
/// that only its own test crate is built.
fn layer_kata() -> &'static Path {
    static KATA: OnceLock<PathBuf> = OnceLock::new();
    KATA.get_or_init(|| {
        let dir = Path::new(ROOT).join("target").join("runner-fixture").join("layer");
        forget_state(&dir);
        for sub in ["lessons/stubs", "solutions", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let manifest = package(
            &dir,
            "runner-layer-fixture",
            "axum = { version = \"0.8\", default-features = false, features = [\"tokio\", \"http1\"] }\n\
             tower = { version = \"0.5\", default-features = false }\n\
             serde_json = \"1\"\npin-project-lite = \"0.2\"\n",
        );
        put(&dir.join("Cargo.toml"), &manifest);
        put(&dir.join("lessons/lessons.toml"), "[[lesson]]\nnumber = 7\ntitle = \"The layer\"\nkind = \"http-layer\"\ntype = \"RateLimitLayer\"\nalgorithm = \"FixedWindow\"\n",);
        let layer = read("solutions/lesson_07.rs");
        for path in ["lessons/lesson_07.rs", "lessons/stubs/lesson_07.rs", "solutions/lesson_07.rs"] {
            put(&dir.join(path), &layer);
        }
        put(&dir.join("lessons/lesson_07.md"), "# Lesson 07 — The layer\n");
        put(&dir.join("tests/lesson_07.rs"), "kata::lesson!();\n");
        dir
    })
}

/// Stops a served demo (the runner, and through it cargo and the server)
/// however the test ends.
struct Served(std::process::Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One HTTP/1.1 GET over a plain socket: the status line and the body.
fn http_get(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("the server accepts");
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).expect("an answer");
    text
}

/// A counter's value in Prometheus's text, whatever the order of its labels.
fn counter(text: &str, name: &str, labels: &[&str]) -> u64 {
    text.lines()
        .filter(|l| l.starts_with(name) && labels.iter().all(|label| l.contains(label)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

#[test]
fn load_validates_the_demo_server_and_its_metrics() {
    let _one = serial();
    let kata = layer_kata();
    let target = Path::new(ROOT)
        .join("target")
        .join("runner-fixture")
        .join("target");
    // The build's and the server's messages, shown if no URL comes.
    let errors = kata.join("serve.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ratelimit-kata"))
        .args(["serve", "--port", "0", "--root"])
        .arg(kata)
        .env("CARGO_TARGET_DIR", &target)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&errors).expect("a file for the server's errors"))
        .spawn()
        .expect("the runner starts");
    let out = child.stdout.take().expect("piped");
    let served = Served(child);
    // The URL, from the server's first line (the build comes first).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let mut seen = String::new();
    let mut addr = None;
    while !seen.contains("Stop with Ctrl-C") {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx.recv_timeout(left).unwrap_or_else(|_| {
            panic!(
                "`serve` printed no URL; it printed:\n{seen}\n{}",
                std::fs::read_to_string(&errors).unwrap_or_default()
            )
        });
        if line.contains("Serving") {
            addr = line
                .split("http://")
                .nth(1)
                .and_then(|rest| rest.split('/').next())
                .map(str::to_string);
        }
        seen.push_str(&line);
        seen.push('\n');
    }
    let addr = addr.unwrap_or_else(|| panic!("no URL in what `serve` printed:\n{seen}"));
    assert!(
        seen.contains("/metrics"),
        "the demo names its /metrics:\n{seen}"
    );

    // 40 requests a second of one client for 2 s, against 5 per 10 s.
    let url = format!("http://{addr}/");
    let load = runner(&["load", &url, "--rate", "40", "--seconds", "2"]);
    assert_eq!(load.code, 0, "{}{}", load.out, load.err);
    assert!(
        load.out
            .contains("the server's policy \"demo\": 5 per 10 s"),
        "{}",
        load.out
    );
    assert!(load.out.contains("verdict: PASS"), "{}", load.out);
    let column = |i: usize| -> u64 {
        load.out
            .lines()
            .filter_map(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                (cols.len() == 7 && cols[0].parse::<u32>().is_ok())
                    .then(|| cols[i].parse::<u64>().ok())?
            })
            .sum()
    };
    let (sent, admitted, denied) = (column(1), column(2), column(3));
    assert_eq!(sent, 80, "{}", load.out);
    // 5 within the demo's first window (10, should the run stall past it).
    assert!((5..=10).contains(&admitted), "{}", load.out);

    // The limiter's metrics counted the same requests as the load saw.
    let metrics = http_get(&addr, "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    let policy = "policy=\"demo\"";
    let allowed = "outcome=\"allowed\"";
    let refused = "outcome=\"denied\"";
    assert_eq!(
        counter(&metrics, "ratelimit_decisions_total", &[policy, allowed]),
        admitted,
        "{metrics}"
    );
    assert_eq!(
        counter(&metrics, "ratelimit_decisions_total", &[policy, refused]),
        denied,
        "{metrics}"
    );
    assert!(
        metrics.contains("ratelimit_keys{policy=\"demo\"}"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("127.0.0.1\""),
        "no label carries a client: {metrics}"
    );
    drop(served);

    // A server that lets everything through under the same policy fails.
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open_addr = open.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for stream in open.incoming() {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                let _ = s.write_all(
                    b"HTTP/1.1 200 OK\r\nRateLimit-Policy: \"demo\";q=5;w=10\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    let open_url = format!("http://{open_addr}/");
    let load = runner(&["load", &open_url, "--rate", "20", "--seconds", "1"]);
    assert_eq!(load.code, 1, "{}{}", load.out, load.err);
    assert!(load.out.contains("verdict: FAIL"), "{}", load.out);
    assert!(load.out.contains("too much through"), "{}", load.out);

    // Never a server elsewhere; never an unbounded load.
    let elsewhere = runner(&["load", "http://192.0.2.1/"]);
    assert_eq!(elsewhere.code, 2, "{}", elsewhere.err);
    assert!(elsewhere.err.contains("loopback"), "{}", elsewhere.err);
    let endless = runner(&["load", &url, "--seconds", "3600"]);
    assert_eq!(endless.code, 2, "{}", endless.err);
}
