//! File names as learners see them. The lesson files are compiled in by
//! absolute path (the build script writes them so); every message names
//! them relative to the kata's root instead.

/// The kata's root, as the compiler names the lesson files (which are
/// compiled in by absolute path): set once by the lesson being tested.
static ROOT: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the folder [`tidy_path`] takes off the front of file names.
pub fn set_root(root: &str) {
    let _ = ROOT.set(format!("{}/", root.trim_end_matches('/')));
}

/// `/home/me/kata/lessons/lesson_02.rs` → `lessons/lesson_02.rs`: file names
/// as learners see them, relative to the kata's root.
pub fn tidy_path(file: &str) -> String {
    match ROOT.get() {
        Some(root) => file.replace(root.as_str(), ""),
        None => file.to_string(),
    }
}
