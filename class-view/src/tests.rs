use super::*;
use kata_runner::report::LessonReport;

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
            format!("[[milestone]]\nlesson = 2\ntitle = \"Step {k}\"\nchecks = \"step_{k}\"\n\n")
        }))
        .collect();
    std::fs::write(dir.join("lessons/lessons.toml"), toml).unwrap();
    let found = kata_runner::runner::lessons(&dir).unwrap();
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
        shown.contains(
            "ada on lesson 01, a write outside its scratch folder: examples::a: could not write"
        ),
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
        let when =
            SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000 + minute * 60);
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
