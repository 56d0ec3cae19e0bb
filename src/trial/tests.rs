use super::args::{Args, Format};
use super::*;

fn args(line: &str) -> Args {
    Args::parse(line.split_whitespace().map(String::from)).unwrap()
}

#[test]
fn names_are_module_paths_and_cases_are_numbered_as_rstest_numbers_them() {
    let mut t = Trials::new();
    t.group(group::CONFIG, |t| {
        t.cases("constructor", (1..=10).map(|i| ("case", i)), |_| {});
        t.test("every_pair_of_faults", || {});
    });
    t.module("gcra", |t| {
        t.group(group::LOOM, |t| {
            t.test("new_key", || {});
        });
    });
    t.ignored(
        "compare_with_reference",
        "run by `cargo run -- compare`",
        || {},
    );
    let trials = t.into_vec();
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names[0], "config::constructor::case_01_case");
    assert_eq!(names[9], "config::constructor::case_10_case");
    assert_eq!(names[10], "config::every_pair_of_faults");
    assert_eq!(names[11], "gcra::loom::new_key");
    assert_eq!(trials[11].check(), Check::Loom);
    assert_eq!(trials[11].tier(), Tier::Races);
    assert_eq!(trials[12].check(), Check::Property);
    assert!(trials[12].ignored.is_some() && trials[0].ignored.is_none());
    let mut few = Trials::new();
    few.examples(&[("a", 1), ("b", 2)], |_: i32| {});
    assert_eq!(few.into_vec()[1].name, "examples::case_2_b");
}

#[test]
fn another_kind_s_checks_nest_with_their_groups() {
    let mut inner = Trials::new();
    inner.group(group::SOURCE, |t| {
        t.test("uses_only_its_inputs", || {});
    });
    let mut t = Trials::new();
    t.module("layer", |t| {
        t.nest(inner);
    });
    let trials = t.into_vec();
    assert_eq!(trials[0].name, "layer::source::uses_only_its_inputs");
    assert_eq!(trials[0].check(), Check::Source);
}

#[test]
#[should_panic(expected = "two checks named config::x")]
fn two_checks_of_one_name_are_refused() {
    let mut t = Trials::new();
    t.group(group::CONFIG, |t| {
        t.test("x", || {});
        t.test("x", || {});
    });
}

#[test]
#[should_panic(expected = "must be made by `group`")]
fn a_module_named_like_a_group_is_refused() {
    Trials::new().module("loom", |t| {
        t.test("x", || {});
    });
}

#[test]
fn libtest_s_arguments_are_understood() {
    let a = args("--exact loom --skip slow --nocapture --test-threads 3 --format terse");
    assert_eq!(a.filters, ["loom"]);
    assert_eq!(a.skip, ["slow"]);
    assert!(a.exact && a.nocapture && !a.list);
    assert_eq!(a.threads, Some(3));
    assert_eq!(a.format, Format::Terse);
    assert!(a.selects("loom") && !a.selects("loom::new_key"));
    let a = args("loom --skip=race --test-threads=1 -q --list --ignored --include-ignored");
    assert!(a.selects("gcra::loom::new_key") && !a.selects("race::loom"));
    assert!(a.list && a.ignored && a.include_ignored && a.format == Format::Terse);
    assert_eq!(a.threads, Some(1));
    // What cargo and IDEs pass, and nothing at all.
    assert!(args("--test").filters.is_empty() && args("").selects("anything"));
    assert!(args("-Z unstable-options").filters.is_empty());
}

#[test]
fn a_wrong_argument_is_a_sentence_and_exit_code_101() {
    let refused = |line: &str| Args::parse(line.split_whitespace().map(String::from)).unwrap_err();
    let (text, code) = refused("--frobnicate");
    assert!(
        text.starts_with("error: Unrecognized option: 'frobnicate'"),
        "{text}"
    );
    assert_eq!(code, 101);
    assert!(refused("--test-threads 0")
        .0
        .contains("must be a number > 0"));
    assert!(refused("--format json").0.contains("KATA_RESULTS"));
    assert!(refused("--skip").0.contains("--skip needs a value"));
    assert_eq!(refused("--help").1, 0);
}

#[test]
fn a_backtrace_is_shortened_as_rust_shortens_it() {
    let trace = "   0: hook\n             at capture.rs:1:1\n   1: std::sys::backtrace::__rust_end_short_backtrace\n\
                 \x20  2: kata::checks::Lesson::unwrap\n             at ./src/checks/mod.rs:86:11\n\
                 \x20  3: lesson_03::examples\n   4: std::sys::backtrace::__rust_begin_short_backtrace\n\
                 \x20  5: start_thread\n";
    assert_eq!(
        super::capture::short(trace),
        "   0: kata::checks::Lesson::unwrap\n             at ./src/checks/mod.rs:86:11\n   1: lesson_03::examples\n"
    );
}
