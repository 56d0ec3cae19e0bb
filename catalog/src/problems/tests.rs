//! The problems' own checks: each finds what it is for, on made-up text.

use super::*;

fn kata_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("catalog/ is inside the kata")
}

#[test]
fn names_a_link_that_points_at_no_file() {
    let root = kata_root();
    let page = "[front door](README.md), [the costs](bench/README.md#x), \
                [a script](scripts/nowhere.sh), [out](https://example.org), [here](#top)";
    assert_eq!(
        links_to_nowhere(root, "CONTRIBUTING.md", page),
        vec!["CONTRIBUTING.md: the link (scripts/nowhere.sh) points at no file"]
    );
    // Relative to the page's own folder.
    let page = "[up](../README.md) [script](../scripts/bench.sh) [wrong](scripts/bench.sh)";
    assert_eq!(
        links_to_nowhere(root, "bench/README.md", page),
        vec!["bench/README.md: the link (scripts/bench.sh) points at no file"]
    );
}

#[test]
fn names_a_kind_that_a_list_leaves_out() {
    let all: String = Kind::ALL
        .iter()
        .map(|k| format!("- `{}`: …\n", k.id()))
        .collect();
    assert!(unlisted_kinds("ARCHITECTURE.md", &all).is_empty());
    // As rows of a table too.
    let rows: String = Kind::ALL
        .iter()
        .map(|k| format!("| `{}` | x |\n", k.id()))
        .collect();
    assert!(unlisted_kinds("ARCHITECTURE.md", &rows).is_empty());
    let without = all.replace("- `redis-limiter`: …\n", "");
    let found = unlisted_kinds("ARCHITECTURE.md", &without);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("ARCHITECTURE.md: ") && found[0].contains("`redis-limiter`"),
        "{found:?}"
    );
    // `shared-limiter` does not name `limiter`, nor a mention in prose.
    let found = unlisted_kinds(
        "ARCHITECTURE.md",
        &all.replace("- `limiter`: …\n", "a `limiter` is mentioned\n"),
    );
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("ARCHITECTURE.md: ") && found[0].contains("out `limiter`"),
        "{found:?}"
    );
}

#[test]
fn names_a_page_whose_heading_is_not_its_title() {
    let source = "GUIDES in catalog/src/lib.rs";
    assert_eq!(
        wrong_heading(
            "lessons/runner.md",
            "# The runner\n\ntext\n",
            "# The runner",
            source
        ),
        None
    );
    let found = wrong_heading("lessons/runner.md", "# Runner\n", "# The runner", source);
    assert_eq!(
        found.as_deref(),
        Some(
            "lessons/runner.md: the first heading is \"# Runner\", but \
             GUIDES in catalog/src/lib.rs gives \"# The runner\""
        )
    );
}

/// A page that names the lessons with milestones, or the kata's points,
/// is held to the catalog's; a sentence that names no number is not.
#[test]
fn names_a_sentence_whose_milestones_or_points_are_not_the_catalogs() {
    let cut = ["07".to_string(), "10".to_string()];
    let right = "Intro. Lessons 07 and 10 are cut into milestones: 9 points for the whole \
                 kata, out of the same 9; out of the same total.";
    assert_eq!(
        wrong_milestone_counts("lessons/runner.md", right, &cut, 9),
        Vec::<String>::new()
    );
    let wrong = "Lessons 07 to 09 are cut into milestones. 18 points for the whole kata, \
                 out of the same 18.";
    assert_eq!(
        wrong_milestone_counts("lessons/runner.md", wrong, &cut, 9),
        [
            "lessons/runner.md: says lessons 07, 09 are cut into milestones, where lessons/lessons.toml cuts 07, 10",
            "lessons/runner.md: says the kata is worth 18 points, where lessons/lessons.toml makes it 9 \
             (a point per milestone, one per lesson without milestones)",
            "lessons/runner.md: says the kata is worth 18 points, where lessons/lessons.toml makes it 9 \
             (a point per milestone, one per lesson without milestones)",
        ]
    );
}

#[test]
fn finds_link_targets_outside_code() {
    let text = "see [a](CONTRACT.md) and [b](../y.rs#L3)\n```\n[c](nope)\n```\n`[d](z)`";
    assert_eq!(link_targets(text), vec!["CONTRACT.md", "../y.rs#L3", "z"]);
}

#[test]
fn a_lesson_s_test_target_runs_its_own_main() {
    let manifest = "[package]\nname = \"k\"\n\n[[test]]\nname = \"lesson_01\"\nharness = false\n\n\
                    [[test]]\nname = \"lesson_02\"\n\n[dependencies]\nharness = false\n";
    assert!(runs_its_own_main(manifest, "lesson_01"));
    assert!(!runs_its_own_main(manifest, "lesson_02"));
    assert!(!runs_its_own_main(manifest, "lesson_03"));
}
