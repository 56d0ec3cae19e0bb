//! What the runner hands to the crates it starts: `class` gives the rest of
//! its line to the class view (`kata-class`), but for the kata's `--root`,
//! which is the runner's.

use std::path::PathBuf;

/// Takes every `--root DIR` (or `--root=DIR`) out of the class view's
/// arguments; the last one is the kata, as clap would have it. A `--root`
/// without a value (none, empty, or an option) stays, for the class view
/// to refuse.
pub fn class_root(args: &mut Vec<std::ffi::OsString>) -> Option<PathBuf> {
    fn joined(a: &std::ffi::OsStr) -> Option<&str> {
        a.to_str()?.strip_prefix("--root=")
    }
    let mut root = None;
    let mut at = 0;
    while at < args.len() {
        let (value, taken) = match joined(&args[at]) {
            Some(value) => (Some(std::ffi::OsString::from(value)), 1),
            None if args[at] == "--root" => (args.get(at + 1).cloned(), 2),
            None => (None, 0),
        };
        match value.filter(|v| !v.is_empty() && !v.to_str().is_some_and(|v| v.starts_with('-'))) {
            Some(value) => {
                args.drain(at..at + taken);
                root = Some(PathBuf::from(value));
            }
            None => at += 1,
        }
    }
    root
}

#[cfg(test)]
mod tests {
    use super::class_root;
    use std::ffi::OsString;
    use std::path::PathBuf;

    fn taken(args: &[&str]) -> (Option<PathBuf>, Vec<OsString>) {
        let mut args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let root = class_root(&mut args);
        (root, args)
    }

    #[test]
    fn the_class_view_s_root_is_the_runner_s() {
        let words = |w: &[&str]| w.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            taken(&["folder", "--root", "/k", "--points"]),
            (Some("/k".into()), words(&["folder", "--points"]))
        );
        assert_eq!(
            taken(&["--root=/a", "folder", "--root", "/b"]),
            (Some("/b".into()), words(&["folder"]))
        );
        assert_eq!(taken(&["folder"]), (None, words(&["folder"])));
        // No value: left for the class view to refuse.
        assert_eq!(
            taken(&["folder", "--root", "--points"]),
            (None, words(&["folder", "--root", "--points"]))
        );
        assert_eq!(taken(&["--root="]), (None, words(&["--root="])));
        assert_eq!(taken(&["--root"]), (None, words(&["--root"])));
    }
}
