//! The going-further GCRA over loom's facade, for `growth`'s model: the
//! file compiled again, its `super::sync` the kata's loom backend.

#[allow(unused_imports)]
pub mod sync {
    pub use kata::sync::loom_backend::*;
}

// The same file as `crate::lesson_06_further`, on purpose: over loom here,
// over std there, as each lesson's test binary compiles a file twice.
#[path = "../../solutions/lesson_06_further.rs"]
#[allow(dead_code, clippy::duplicate_mod)]
pub mod lesson_06_further;
