//! `lesson!`: a lesson's test file includes what the build script wrote
//! for it.

/// Defines this lesson in its test file: `kata::lesson!();` in
/// `tests/lesson_NN.rs`.
///
/// It includes what the lessons' build script wrote for `lesson_NN` from
/// `lessons/lessons.toml` (`kata_catalog::generate::generate`): every
/// implementation of the lesson compiled in as a subject (the learner
/// file, the stub, the reference, each file of `mistakes/lesson_NN/` and
/// the alternatives), `fn lesson()`, and `fn main()`, which runs the checks
/// of the lesson's kind and those the test file's `fn examples(t: &mut
/// kata::trial::Trials)` adds.
#[macro_export]
macro_rules! lesson {
    () => {
        include!(concat!(
            env!("OUT_DIR"),
            "/",
            env!("CARGO_CRATE_NAME"),
            ".rs"
        ));
    };
}
