//! Sizes the kata keeps to, checked so that they cannot drift: no Rust
//! file of its crates past [`MOST_LINES`], and at most
//! [`MOST_MACRO_LINES`] lines of `macro_rules!` in the harness outside the
//! std/loom facade (checks are data, `kata::trial`; only what compiles a
//! subject's file is a macro).

use std::path::Path;

/// What the layers' check reports of sizes, for the crates whose source
/// folders are `crates`.
pub fn problems(root: &Path, crates: &[&str]) -> Vec<String> {
    let mut found = long_files(root, crates);
    found.extend(macro_lines(root));
    found
}

/// The most lines a Rust file of the kata's crates may have (a file's own
/// tests counted when they are in it): past it, a file holds more than one
/// thing, and its reader loses the thread.
pub const MOST_LINES: usize = 700;

/// The files of the kata's crates (each crate's folder, its tests
/// included) past [`MOST_LINES`].
fn long_files(root: &Path, crates: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    for krate in crates {
        let folder = krate.strip_suffix("/src").unwrap_or(krate);
        crate::problems::walk(&root.join(folder), &mut files);
    }
    files.sort();
    files.dedup();
    files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter_map(|file| {
            let lines = std::fs::read_to_string(file).ok()?.lines().count();
            let name = file.strip_prefix(root).unwrap_or(file).display();
            (lines > MOST_LINES).then(|| {
                format!(
                    "{name}: {lines} lines, past the {MOST_LINES} a file may have; split what \
                     it holds into modules (its tests into a tests.rs of its own)"
                )
            })
        })
        .collect()
}

/// The most lines of `macro_rules!` the harness (`src/`) may have outside
/// the facade (`src/sync/facade.rs`, the std and loom primitives, written
/// once for both).
pub const MOST_MACRO_LINES: usize = 400;

/// The facade, whose macros are what it is.
const FACADE: &str = "src/sync/facade.rs";

/// The lines of the harness's `macro_rules!` outside the facade, if past
/// [`MOST_MACRO_LINES`], with each file's share.
fn macro_lines(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    crate::problems::walk(&root.join("src"), &mut files);
    files.sort();
    let mut shares: Vec<(String, usize)> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter(|f| !f.ends_with(FACADE))
        .filter_map(|file| {
            let lines = macro_lines_of(&std::fs::read_to_string(file).ok()?);
            let name = file
                .strip_prefix(root)
                .unwrap_or(file)
                .display()
                .to_string();
            (lines > 0).then_some((name, lines))
        })
        .collect();
    let total: usize = shares.iter().map(|(_, n)| n).sum();
    if total <= MOST_MACRO_LINES {
        return vec![];
    }
    shares.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let each: Vec<String> = shares.iter().map(|(f, n)| format!("{f} {n}")).collect();
    vec![format!(
        "src/: {total} lines of macro_rules! outside {FACADE}, past the {MOST_MACRO_LINES} the \
         harness may have ({}); make checks trials (kata::trial) and shared code functions",
        each.join(", ")
    )]
}

/// The lines of the `macro_rules!` definitions in a file's text, each from
/// its `macro_rules!` line to the line that closes it.
fn macro_lines_of(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let mut count = 0;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        if line.starts_with("macro_rules!") || line.starts_with("pub macro_rules!") {
            let start = i;
            let mut depth = 0i64;
            let mut opened = false;
            while i < lines.len() {
                depth += lines[i].matches('{').count() as i64;
                depth -= lines[i].matches('}').count() as i64;
                opened |= lines[i].contains('{');
                if opened && depth <= 0 {
                    break;
                }
                i += 1;
            }
            count += i.min(lines.len() - 1) - start + 1;
        }
        i += 1;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_a_file_past_the_most_lines() {
        let root = std::env::temp_dir().join(format!("kata-long-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("runner/tests")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(
            root.join("runner/tests/long.rs"),
            "//\n".repeat(MOST_LINES + 1),
        )
        .unwrap();
        std::fs::write(root.join("src/fits.rs"), "//\n".repeat(MOST_LINES)).unwrap();
        let found = long_files(&root, &["src", "runner/src"]);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("runner/tests/long.rs: 701 lines, past the 700"),
            "{found:?}"
        );
    }

    #[test]
    fn counts_the_lines_of_each_macro() {
        let text = "fn a() {}\n\
                    macro_rules! m {\n    () => {\n        1\n    };\n}\n\
                    // macro_rules! in a comment\n\
                    #[macro_export]\nmacro_rules! n { () => {} }\n";
        assert_eq!(macro_lines_of(text), 6);
    }

    #[test]
    fn names_macros_past_the_most_and_leaves_the_facade_out() {
        let root = std::env::temp_dir().join(format!("kata-macros-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("src/sync")).unwrap();
        let big = format!("macro_rules! m {{\n{}}}\n", "//\n".repeat(MOST_MACRO_LINES));
        std::fs::write(root.join("src/sync/facade.rs"), &big).unwrap();
        assert!(macro_lines(&root).is_empty());
        std::fs::write(root.join("src/suites.rs"), &big).unwrap();
        let found = macro_lines(&root);
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].contains("402 lines of macro_rules!"), "{found:?}");
        assert!(found[0].contains("src/suites.rs 402"), "{found:?}");
    }
}
