//! Source checks of a learner file, run before anything executes it.

/// Blanks out comments and string literals, keeping line breaks, so that a
/// path mentioned in a comment or a message is not taken for an import.
fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut depth = 1;
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    match (prev, c) {
                        ('*', '/') => {
                            depth -= 1;
                            prev = ' ';
                            if depth == 0 {
                                break;
                            }
                            continue;
                        }
                        ('/', '*') => {
                            depth += 1;
                            prev = ' ';
                            continue;
                        }
                        _ => {}
                    }
                    prev = c;
                }
            }
            '"' => {
                out.push(' ');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Paths that bring in sync primitives loom cannot see.
const FORBIDDEN: &[&str] = &[
    "std::sync",
    "core::sync",
    "alloc::sync",
    "parking_lot",
    "loom::",
    "kata::sync",
    "crossbeam",
    "spin::",
];

/// Names under `std::sync` that are plain data, the same type in both
/// backends (the facade re-exports them): using them from std hides nothing
/// from loom.
const HARMLESS: &[&str] = &[
    "atomic::Ordering",
    "LockResult",
    "PoisonError",
    "TryLockError",
    "TryLockResult",
];

/// True when every path on the line that goes through `std::sync` or
/// `core::sync` ends in a harmless name.
fn only_harmless(line: &str) -> bool {
    let mut rest = line;
    while let Some(i) = rest.find("::sync::") {
        let after = &rest[i + "::sync::".len()..];
        let Some(name) = HARMLESS.iter().find(|h| after.starts_with(*h)) else {
            return false;
        };
        rest = &after[name.len()..];
    }
    true
}

/// Fails, naming the line, if a learner file takes sync primitives from
/// anywhere but its parent's `sync` module (`use super::sync::...`).
pub fn check_sync_imports(file: &str, source: &str) -> Result<(), String> {
    let code = code_only(source);
    let squeezed: Vec<String> = code
        .lines()
        .map(|l| l.chars().filter(|c| !c.is_whitespace()).collect())
        .collect();
    for (n, line) in squeezed.iter().enumerate() {
        let hit = FORBIDDEN
            .iter()
            .find(|p| line.contains(*p) && !(p.ends_with("::sync") && only_harmless(line)))
            .copied()
            .or_else(|| {
                // `use std::{collections::HashMap, sync::Mutex};`, possibly over several lines.
                let start = line.find("std::{")?;
                let mut group = line[start..].to_string();
                for next in squeezed.iter().skip(n + 1).take(20) {
                    if group.contains('}') {
                        break;
                    }
                    group.push_str(next);
                }
                let group = &group[..group.find('}').map_or(group.len(), |i| i + 1)];
                ["{sync", ",sync"]
                    .iter()
                    .any(|p| group.contains(p))
                    .then_some("std::{.., sync}")
            });
        if let Some(path) = hit {
            let original = source.lines().nth(n).unwrap_or("").trim();
            return Err(format!(
                "{file}:{}: `{original}` takes a sync primitive from `{path}`. Take it from the \
                 lesson's facade instead: `use super::sync::{{Arc, Mutex, RwLock, AtomicU64, Ordering}};` \
                 (the names you need). The tests build your file twice, once over std's primitives \
                 and once over loom's, and loom can only explore the thread interleavings of \
                 primitives it provides.",
                n + 1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_facade_and_mentions_in_comments() {
        let ok = "use super::sync::{Arc, Mutex};\n// not std::sync::Mutex\nlet s = \"std::sync\";\n/* std::sync */";
        assert_eq!(check_sync_imports("f.rs", ok), Ok(()));
    }

    #[test]
    fn names_the_line_of_a_direct_import() {
        let bad = "use std::collections::HashMap;\n\nuse std::sync::Mutex;\n";
        let e = check_sync_imports("lessons/lesson_02.rs", bad).unwrap_err();
        assert!(
            e.starts_with("lessons/lesson_02.rs:3: `use std::sync::Mutex;`"),
            "{e}"
        );
        let nested = "use std::{\n    collections::HashMap,\n    sync::RwLock,\n};";
        let e = check_sync_imports("f.rs", nested).unwrap_err();
        assert!(e.starts_with("f.rs:1:"), "{e}");
        let inline = "fn f() { let m = std :: sync :: Mutex::new(1); }";
        assert!(check_sync_imports("f.rs", inline).is_err());
        let parking = "use parking_lot::Mutex;";
        assert!(check_sync_imports("f.rs", parking).is_err());
        let mixed = "use std::sync::{atomic::Ordering, Mutex};";
        assert!(check_sync_imports("f.rs", mixed).is_err());
        let arc = "use std::sync::Arc;";
        assert!(check_sync_imports("f.rs", arc).is_err());
    }

    #[test]
    fn accepts_plain_data_types_from_std() {
        let ok = "use std::sync::atomic::Ordering;\nfn f(o: core::sync::atomic::Ordering) -> std::sync::LockResult<()> { Ok(()) }";
        assert_eq!(check_sync_imports("f.rs", ok), Ok(()));
    }
}
