use super::*;
use std::time::Duration;

fn outcome(tests: &[(&str, bool)], ran: bool, output: &str) -> Outcome {
    Outcome {
        tests: tests.iter().map(|(n, ok)| (n.to_string(), *ok)).collect(),
        failures: vec![],
        ran,
        timed_out: false,
        crash: None,
        output: output.into(),
        took: Duration::ZERO,
    }
}

#[test]
fn states_from_runs() {
    let passed = outcome(&[("examples::case_1", true)], true, "");
    assert_eq!(assess(&passed, false), State::Passed);
    assert_eq!(assess(&passed, true), State::NotStarted);
    let failing = outcome(
        &[
            ("examples::case_1", false),
            ("loom::new_key", false),
            ("keeps_the_limit", true),
        ],
        true,
        "",
    );
    assert_eq!(assess(&failing, false), State::Failing);
    assert_eq!(
        one_line(&State::Failing, &failing),
        "failing 2 of 3: examples 1, races (loom) 1"
    );
    let broken = outcome(
        &[],
        false,
        "error[E0308]: mismatched types\n --> lessons/lesson_02.rs:3:5\n",
    );
    assert!(
        matches!(assess(&broken, false), State::DoesNotCompile(e) if e.contains("lesson_02.rs:3"))
    );
}

#[test]
fn compiler_errors_are_shown_once() {
    let output = "error[E0308]: mismatched types\n --> lessons/lesson_02.rs:9:5\n  | expected `std_backend::Mutex<u64>`\n\n\
                  error[E0308]: mismatched types\n --> lessons/lesson_02.rs:9:5\n  | expected `loom_backend::Mutex<u64>`\n\n\
                  error[E0425]: cannot find value `x`\n --> lessons/lesson_02.rs:12:1\n\n\
                  error: could not compile `ratelimit-kata` (test \"lesson_02\") due to 3 previous errors\n";
    let shown = compiler_errors(output);
    assert_eq!(shown.matches("E0308").count(), 1, "{shown}");
    assert_eq!(shown.matches("E0425").count(), 1, "{shown}");
    assert!(!shown.contains("could not compile"), "{shown}");
    assert!(shown.contains("2 errors"), "{shown}");
}

#[test]
fn hints_belong_to_their_milestone() {
    let text = "<details><summary>Hint 1.1 (concept): a</summary>x</details>\n\
                <details><summary>Hint 1.2 (approach): b</summary>y</details>\n\
                <details><summary>Hint 2.1 (concept): c</summary>z</details>\n";
    let all = hints(text);
    let of: Vec<Option<usize>> = all.iter().map(Hint::milestone).collect();
    assert_eq!(of, [Some(1), Some(1), Some(2)]);
    let second: Vec<String> = hints_for(all.clone(), 2)
        .into_iter()
        .map(|h| h.text)
        .collect();
    assert_eq!(second, ["z"]);
    let plain = hints("<details><summary>Hint 3 (sketch): d</summary>w</details>");
    assert_eq!(plain[0].milestone(), None);
    assert_eq!(hints_for(plain, 4).len(), 1);
}

#[test]
fn milestones_are_reached_in_order() {
    let entry = Entry {
        number: 9,
        name: "lesson_09".into(),
        title: "B".into(),
        kind: kata_catalog::Kind::BoundedLimiter,
        milestones: ["a::*", "b::*", "c::*"]
            .iter()
            .enumerate()
            .map(|(i, p)| kata_catalog::Milestone {
                number: i + 1,
                title: format!("M{}", i + 1),
                checks: vec![p.to_string()],
            })
            .collect(),
    };
    let run = |tests: &[(&str, bool)]| milestones_reached(&entry, &outcome(tests, true, ""));
    assert_eq!(run(&[("a::x", true), ("b::x", false), ("c::x", true)]), 1);
    assert_eq!(run(&[("a::x", true), ("b::x", true), ("c::x", true)]), 3);
    assert_eq!(run(&[("a::x", false), ("b::x", true)]), 0);
    // A milestone none of whose checks ran is not reached.
    assert_eq!(run(&[("a::x", true), ("c::x", true)]), 1);
    assert_eq!(
        milestone_line(&entry, 1).as_deref(),
        Some("milestone 2 of 3: M2")
    );
    assert_eq!(
        milestone_line(&entry, 3).as_deref(),
        Some("every milestone reached (3 of 3)")
    );
}

#[test]
fn milestone_problems_name_the_check_and_the_pattern() {
    let milestones: Vec<kata_catalog::Milestone> = [("One", "a::* b::x"), ("Two", "c::* a::y")]
        .iter()
        .enumerate()
        .map(|(i, (t, c))| kata_catalog::Milestone {
            number: i + 1,
            title: t.to_string(),
            checks: c.split_whitespace().map(String::from).collect(),
        })
        .collect();
    let tests: Vec<String> = ["a::x", "a::y", "c::z", "d::w"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(
        milestone_problems(&milestones, &tests),
        [
            "the check d::w belongs to no milestone",
            "milestone 1 (One): the pattern b::x takes no check",
        ]
    );
    assert!(milestone_problems(&milestones[..0], &tests).is_empty());
}

/// Every kind of the catalog answers what `compare` draws for it (the
/// harness's `kinds` lists it), by default and for a timeline its tests
/// refuse; what each kind draws is the harness's test.
#[test]
fn compare_asks_every_kind_of_the_catalog() {
    for kind in kata_catalog::Kind::ALL {
        assert!(comparison(kind, None).is_ok(), "{kind:?}");
        assert!(
            comparison(kind, Some("no such timeline")).is_err(),
            "{kind:?}"
        );
    }
}

#[test]
fn cargo_s_and_libtest_s_bookkeeping_is_not_shown() {
    let output = "running 1 test\nyours:\n#  time  key\nfailures:\n    compare_with_reference\n\
                  test result: FAILED. 0 passed; 1 failed\n\
                  error: test failed, to rerun pass `-p ratelimit-kata --test lesson_08`";
    let kept: Vec<&str> = output.lines().filter(|l| !libtest_noise(l)).collect();
    assert_eq!(kept, ["yours:", "#  time  key"]);
}

#[test]
fn hints_come_from_details_blocks() {
    let text = "# Lesson 09 — X\n\n<details><summary>Hint 1: a</summary>\n\nfirst\n\n</details>\n\n<details><summary>Hint 2: b</summary>\nsecond\n</details>\n";
    let found = hints(text);
    assert_eq!(found.len(), 2);
    assert_eq!(
        found[0],
        Hint {
            title: "Hint 1: a".into(),
            text: "first".into()
        }
    );
    assert_eq!(found[1].text, "second");
}

fn failure(name: &str, output: &str) -> Failure {
    Failure {
        name: name.into(),
        output: output.into(),
    }
}

#[test]
fn failure_details_are_each_failure_s_output_under_its_name() {
    let failures = [failure(
        "a",
        "boom at x.rs:3\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
    )];
    let details = failure_details(&failures);
    assert!(details.starts_with("---- a stdout ----"), "{details}");
    assert!(details.contains("boom at x.rs:3"));
    assert!(!details.contains("RUST_BACKTRACE"));
    assert!(first_failure(&failures, 5).unwrap().contains("boom"));
    assert_eq!(failure_details(&[]), "");
}

/// The replay command shown under the first failure is that failure's
/// own: a property's command is never offered for a failing example.
#[test]
fn the_replay_command_belongs_to_the_first_failure() {
    let property = failure(
        "property::keeps_the_limit",
        "request #2 wrong\nreplay it beside the reference's answers:\n  \
         cargo run -- compare 2 'L=1 W=2ns: a@3 a@3'\n",
    );
    let failures = [
        property.clone(),
        failure("examples::case_1_x", "the example fails\n"),
    ];
    let first = first_failure(&failures, 30).unwrap();
    assert!(first.starts_with("---- examples::case_1_x"), "{first}");
    assert_eq!(replay_command(&failures), None);
    assert_eq!(
        any_replay_command(&failures).as_deref(),
        Some("cargo run -- compare 2 'L=1 W=2ns: a@3 a@3'")
    );
    let own = [
        property,
        failure(
            "examples::case_1_x",
            "the example fails\n  cargo run -- compare 2 first_look\n",
        ),
    ];
    assert_eq!(
        replay_command(&own).as_deref(),
        Some("cargo run -- compare 2 first_look")
    );
}

#[test]
fn this_kata_s_lessons_have_titles_and_hints() {
    let root = &Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let found = lessons(root).unwrap();
    assert!(found.len() >= 3);
    assert_eq!(found[0].title, "The naive counter");
    for entry in &found {
        let text = std::fs::read_to_string(entry.text(root)).unwrap();
        assert!(hints(&text).len() >= 3, "{} has too few hints", entry.name);
    }
}
