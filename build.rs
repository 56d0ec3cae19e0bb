//! Writes, for every lesson of `lessons/lessons.toml`, the code its
//! `tests/lesson_NN.rs` includes through `kata::lesson!()`: its learner
//! file, stub, reference, mistakes and alternatives as subjects, and the
//! standard checks of its kind.
fn main() {
    kata_catalog::build_script();
}
