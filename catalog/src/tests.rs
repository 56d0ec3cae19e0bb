use super::*;

fn kata_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("catalog/ is inside the kata")
        .to_path_buf()
}

/// Every file of the kata agrees with the catalog; each problem names
/// the file to fix.
#[test]
fn the_kata_agrees_with_its_catalog() {
    let catalog = Catalog::load(&kata_root()).unwrap_or_else(|e| panic!("{e}"));
    assert!(catalog.lessons.len() >= 6, "{:?}", catalog.lessons);
    let found = problems(&catalog);
    assert!(found.is_empty(), "\n{}", found.join("\n"));
}

#[test]
fn finds_mistakes_and_alternatives_on_disk() {
    let catalog = Catalog::load(&kata_root()).unwrap();
    let six = catalog.lesson(6).unwrap();
    assert_eq!(six.baseline, Some(5));
    assert!(six
        .alternatives
        .iter()
        .any(|a| a.name == "further" && a.path == "solutions/lesson_06_further.rs"));
    assert!(six
        .mistakes
        .iter()
        .all(|m| m.path.starts_with("mistakes/lesson_06/") && m.path.ends_with(".diff")));
    let code = generate(&catalog, six, &kata_root().join("target/mistakes"));
    assert!(
        code.contains("kata::shared_limiter::trials(lesson)"),
        "{code}"
    );
    let first = &six.mistakes[0].name;
    assert!(
        code.contains(&format!(
            "kata::shared_limiter::variant!({first}, \"target/mistakes/lesson_06/{first}.rs\", "
        )),
        "{code}"
    );
    assert!(
        code.contains("decides_like_the_lesson_05_reference"),
        "{code}"
    );
}

#[test]
fn patterns_match_whole_names() {
    assert!(matches(
        "examples::case_1_*",
        "examples::case_1_quota_then_429"
    ));
    assert!(!matches("examples::case_1_*", "examples::case_10_x"));
    assert!(matches("*::loom::*", "fixed_window::loom::new_key"));
    assert!(!matches("*::loom::*", "loom::new_key"));
    assert!(matches("snapshot::first_look", "snapshot::first_look"));
    assert!(!matches("snapshot::first_look", "snapshot::first_look_2"));
    assert!(!matches("fixed_window::*", "x::fixed_window::y"));
    assert!(matches("a*b*c", "abc") && matches("a*b*c", "a-b-b-c"));
    assert!(!matches("a*bc", "abc-bc-x") && !matches("ab*ba", "aba"));
}

/// Milestones come from `[[milestone]]` tables after their lesson, and a
/// check belongs to the milestone of its most specific pattern.
#[test]
fn milestones_take_each_check_by_the_most_specific_pattern() {
    let text = "[[lesson]]\nnumber = 9\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n\n\
                [[milestone]]\nlesson = 9\ntitle = \"One\"\nchecks = \"config::* fixed_window::property::*\"\n\n\
                [[milestone]]\nlesson = 9\ntitle = \"Two\"\nchecks = \"*::property::under_a_bound  *::loom::*\"\n";
    let lessons = parse::lessons(text).unwrap();
    let lesson = &lessons[0];
    let titles: Vec<(usize, &str)> = lesson
        .milestones
        .iter()
        .map(|m| (m.number, m.title.as_str()))
        .collect();
    assert_eq!(titles, [(1, "One"), (2, "Two")]);
    assert_eq!(
        lesson.milestones[1].checks,
        ["*::property::under_a_bound", "*::loom::*"]
    );
    let of = |test: &str| lesson.milestone_of(test).map(|m| m.number);
    assert_eq!(of("config::zero_keys"), Some(1));
    assert_eq!(of("fixed_window::property::agrees_with_model"), Some(1));
    assert_eq!(of("fixed_window::property::under_a_bound"), Some(2));
    assert_eq!(of("fixed_window::loom::new_key"), Some(2));
    assert_eq!(of("snapshot::x"), None);
    for (bad, says) in [
        ("[[milestone]]\nlesson = 3\ntitle = \"x\"\nchecks = \"a\"\n", "lesson 3 is not described"),
        ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 3\ntitle = \"x\"\nchecks = \"a\"\n", "lesson 3 is not described"),
        ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 1\ntitle = \"x\"\nchecks = \" \"\n", "test-name patterns"),
        ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 1\nchecks = \"a\"\n", "has no `title`"),
    ] {
        let error = match parse::lessons(bad) {
            Ok(_) => panic!("accepted: {bad}"),
            Err(e) => e,
        };
        assert!(error.contains(says), "{error}");
    }
}

/// A mistake whose diff no longer applies, and a whole file among the
/// diffs, are each named.
#[test]
fn names_a_mistake_that_no_longer_applies() {
    let root = std::env::temp_dir().join(format!("kata-catalog-{}", std::process::id()));
    let put = |path: &str, text: &str| {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    put(
        FILE,
        "[[lesson]]\nnumber = 1\ntitle = \"T\"\nkind = \"limiter\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n",
    );
    put("solutions/lesson_01.rs", "//! R\n\nfn f() {\n    a();\n}\n");
    put(
        "mistakes/lesson_01/gone.diff",
        "//! MISTAKE: b\n--- a\n+++ b\n@@ -3,3 +3,3 @@\n fn f() {\n-    b();\n+    c();\n }\n",
    );
    put(
        "mistakes/lesson_01/fine.diff",
        "//! MISTAKE: c\n@@ -3,3 +3,3 @@\n fn f() {\n-    a();\n+    c();\n }\n",
    );
    put("mistakes/lesson_01/whole.rs", "//! MISTAKE\n");
    put(
        "lessons/lesson_01.md",
        "# Lesson 01 — T\n\n`mistakes/lesson_01/fine.rs` and `target/mistakes/lesson_01/fine.rs`\n",
    );
    let catalog = Catalog::load(&root).unwrap();
    let lesson = catalog.lesson(1).unwrap();
    assert_eq!(
        catalog.mistake_source(lesson, &lesson.mistakes[0]).unwrap(),
        "//! MISTAKE: c\n\nfn f() {\n    c();\n}\n"
    );
    let found = problems(&catalog);
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        found.iter().any(
            |p| p.starts_with("mistakes/lesson_01/gone.diff: the hunk at line 4")
                && p.contains("no longer applies")
        ),
        "{found:#?}"
    );
    assert!(
        !found
            .iter()
            .any(|p| p.starts_with("mistakes/lesson_01/fine.diff:")),
        "{found:#?}"
    );
    assert!(
        found
            .iter()
            .any(|p| p.starts_with("mistakes/lesson_01/whole.rs is not a mistake")),
        "{found:#?}"
    );
    let cited: Vec<_> = found
        .iter()
        .filter(|p| p.contains(": cites mistakes/"))
        .collect();
    assert_eq!(cited.len(), 1, "{found:#?}");
    assert!(cited[0].starts_with("lessons/lesson_01.md: cites mistakes/lesson_01/fine.rs"));
}

/// What would fail later as a compile error in a lesson's generated
/// code is refused when the catalog is read, with a sentence.
#[test]
fn refuses_a_reserved_name_and_a_baseline_that_is_no_limiter() {
    let root = std::env::temp_dir().join(format!("kata-catalog-names-{}", std::process::id()));
    let put = |path: &str, text: &str| {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    let lesson = |n: u32, kind: &str, extra: &str| {
        format!("[[lesson]]\nnumber = {n}\ntitle = \"T\"\nkind = \"{kind}\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n{extra}\n")
    };
    put(FILE, &lesson(1, "limiter", ""));
    put("mistakes/lesson_01/config.diff", "//! MISTAKE\n");
    let e = Catalog::load(&root).unwrap_err();
    assert!(
        e.contains("\"config\" cannot name a subject") && e.contains("property"),
        "{e}"
    );
    std::fs::remove_file(root.join("mistakes/lesson_01/config.diff")).unwrap();
    put(
        FILE,
        &format!(
            "{}{}",
            lesson(7, "http-layer", ""),
            lesson(8, "limiter", "baseline = 7")
        ),
    );
    let e = Catalog::load(&root).unwrap_err();
    let _ = std::fs::remove_dir_all(&root);
    assert!(e.contains("baseline 7 is a http-layer lesson"), "{e}");
}

#[test]
fn rejects_a_bad_catalog_with_its_line() {
    let e = parse::lessons("[[lesson]]\nnumber = 1\ntitle = \"x\"\nkind = \"http\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n")
        .unwrap_err();
    assert!(e.contains("line 4") && e.contains("\"limiter\""), "{e}");
    let e = parse::lessons("[[lesson]]\nnumber = 1\n").unwrap_err();
    assert!(e.contains("title"), "{e}");
    let e = parse::lessons("[[lesson]]\nnumber = one\n").unwrap_err();
    assert!(e.contains("line 2"), "{e}");
    let e = parse::lessons("[[lesson]]\nnumber = 1\ntitle = \"x\"\nkind = \"limiter\"\ntype = \"X\"\nalgorithm = \"Gcra\"\n")
        .unwrap_err();
    assert!(
        e.contains("line 6") && e.contains("FixedWindow, SlidingLog"),
        "{e}"
    );
    let e = parse::lessons("number = 1\n").unwrap_err();
    assert!(e.contains("[[lesson]]"), "{e}");
}
