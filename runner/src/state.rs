//! What the runner remembers of a learner, all of it in `.kata/` at the
//! kata's root (ignored by git, left out of every copy the class view
//! makes), and this module its one owner:
//!
//! - `hints/lesson_NN`: how many of the lesson's hints were shown;
//! - `milestones/lesson_NN`: the milestone the last `test` or `watch` run
//!   stopped at;
//! - `cache/lesson_NN/KEY.json`: a lesson's outcome for one fingerprint of
//!   its files, so that `report` does not run an unchanged lesson again.

use std::path::{Path, PathBuf};

/// The folder's name, at the kata's root.
pub const DIR: &str = ".kata";

/// The folder of the hints shown, relative to the kata's root.
pub const HINTS: &str = ".kata/hints";

/// The file that keeps how many hints of `lesson` were shown, relative to
/// the kata's root, `/` between its parts (the class view reads it in a
/// learner's checkout).
pub fn hints_file(lesson: &str) -> String {
    format!("{HINTS}/{lesson}")
}

/// How many hints of a lesson were shown (0 when none is known).
pub fn hints_shown(root: &Path, lesson: &str) -> usize {
    read_number(&root.join(hints_file(lesson))).unwrap_or(0)
}

pub fn remember_hints_shown(root: &Path, lesson: &str, shown: usize) -> std::io::Result<()> {
    write_number(&root.join(hints_file(lesson)), shown)
}

/// The milestone a learner is at in a lesson (the first not reached by
/// the last `test` or `watch` run), 1 when no run is known.
pub fn current_milestone(root: &Path, lesson: &str) -> usize {
    read_number(&milestone_file(root, lesson)).unwrap_or(1)
}

pub fn remember_milestone(root: &Path, lesson: &str, milestone: usize) -> std::io::Result<()> {
    write_number(&milestone_file(root, lesson), milestone)
}

/// The folder of a lesson's cached outcomes.
pub fn cache_dir(root: &Path, lesson: &str) -> PathBuf {
    root.join(DIR).join("cache").join(lesson)
}

fn milestone_file(root: &Path, lesson: &str) -> PathBuf {
    root.join(DIR).join("milestones").join(lesson)
}

fn read_number(file: &Path) -> Option<usize> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

fn write_number(file: &Path, n: usize) -> std::io::Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(file, n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_kept_per_lesson_and_default_when_unknown() {
        let root = std::env::temp_dir().join(format!("kata-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        assert_eq!(hints_shown(&root, "lesson_02"), 0);
        assert_eq!(current_milestone(&root, "lesson_02"), 1);
        remember_hints_shown(&root, "lesson_02", 2).unwrap();
        remember_milestone(&root, "lesson_02", 3).unwrap();
        assert_eq!(hints_shown(&root, "lesson_02"), 2);
        assert_eq!(hints_shown(&root, "lesson_03"), 0);
        assert_eq!(current_milestone(&root, "lesson_02"), 3);
        assert!(root.join(".kata/hints/lesson_02").is_file());
        assert_eq!(Path::new(HINTS).parent(), Some(Path::new(DIR)));
        assert!(cache_dir(&root, "lesson_02").starts_with(root.join(".kata")));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
