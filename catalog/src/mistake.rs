//! A mistake as it is kept: its explanation and a unified diff against its
//! lesson's reference.
//!
//! `mistakes/lesson_NN/<name>.diff` starts with the mistake's `//!` lines
//! (what it is, why learners write it, and the `//! Shows: <text>` lines its
//! failure must print), then a unified diff of `solutions/lesson_NN.rs`.
//! The file compiled as the mistake is the reference with the diff applied
//! and its own `//!` lines in place of the reference's. The hunks count
//! lines in the whole reference but never take its `//!` lines as context,
//! so `patch -o /tmp/mistake.rs solutions/lesson_NN.rs
//! mistakes/lesson_NN/<name>.diff` applies it too (patch skips the
//! explanation as text before the diff), and rewording the reference's
//! explanation never stops a mistake from applying.
//!
//! A hunk applies where its lines are, exactly: at the line it names, or,
//! when the reference grew or shrank above it, at the nearest place its
//! context and removed lines are found. Never with fuzz: a hunk whose lines
//! are nowhere is an error that names the mistake and the hunk.

use std::fmt::Write as _;

/// Lines of context around each change in a written diff.
const CONTEXT: usize = 3;

/// A mistake's file, read: its explanation and its hunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mistake {
    /// Its leading `//!` lines, as written.
    pub explanation: Vec<String>,
    hunks: Vec<Hunk>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Hunk {
    /// The first line it changes in the reference, counted from 1.
    old_start: usize,
    /// Its line in the mistake's file (`@@ -a,b +c,d @@` line), counted from 1.
    at: usize,
    lines: Vec<Line>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Line {
    Same(String),
    Removed(String),
    Added(String),
}

impl Mistake {
    /// Reads a mistake's file. An error is a sentence with the line to fix.
    pub fn parse(text: &str) -> Result<Mistake, String> {
        let lines: Vec<&str> = text.lines().collect();
        let explanation: Vec<String> = lines
            .iter()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| l.to_string())
            .collect();
        if explanation.is_empty() {
            return Err(
                "line 1: a mistake starts with its explanation, as `//!` lines (what the bug is, \
                 why learners write it, and the `//! Shows:` lines its failure prints)"
                    .into(),
            );
        }
        let mut hunks: Vec<Hunk> = Vec::new();
        // The lines the current hunk's header says are still to come: of
        // the reference (context and removed) and of the mistake (context
        // and added).
        let (mut old_left, mut new_left) = (0usize, 0usize);
        for (i, line) in lines.iter().enumerate().skip(explanation.len()) {
            let number = i + 1;
            if let Some(header) = line.strip_prefix("@@ ") {
                if old_left + new_left > 0 {
                    return Err(short_hunk(&hunks, old_left, new_left));
                }
                let (old_start, old_count, new_count) = hunk_header(header).ok_or_else(|| {
                    format!("line {number}: {line:?} is not a hunk header (`@@ -a,b +c,d @@`)")
                })?;
                (old_left, new_left) = (old_count, new_count);
                hunks.push(Hunk {
                    old_start,
                    at: number,
                    lines: Vec::new(),
                });
                continue;
            }
            let Some(hunk) = hunks.last_mut() else {
                // Before the first hunk: the `---`/`+++` lines and blank lines.
                if line.starts_with("---") || line.starts_with("+++") || line.trim().is_empty() {
                    continue;
                }
                return Err(format!(
                    "line {number}: {line:?} comes before the first hunk (`@@ -a,b +c,d @@`)"
                ));
            };
            if line.starts_with('\\') {
                continue; // "\ No newline at end of file"
            }
            let (tag, rest) = line.split_at(line.len().min(1));
            let parsed = match tag {
                // A context line whose space an editor trimmed is still one.
                " " | "" => Line::Same(rest.to_string()),
                "-" => Line::Removed(rest.to_string()),
                "+" => Line::Added(rest.to_string()),
                _ => {
                    return Err(format!(
                        "line {number}: {line:?} is not a line of a hunk (it must start with ' ', \
                         '-' or '+')"
                    ))
                }
            };
            let (old, new) = match parsed {
                Line::Same(_) => (1, 1),
                Line::Removed(_) => (1, 0),
                Line::Added(_) => (0, 1),
            };
            if old > old_left || new > new_left {
                return Err(format!(
                    "line {number}: {line:?} is past the end of the hunk at line {}, whose header \
                     counts its lines",
                    hunk.at
                ));
            }
            (old_left, new_left) = (old_left - old, new_left - new);
            hunk.lines.push(parsed);
        }
        if old_left + new_left > 0 {
            return Err(short_hunk(&hunks, old_left, new_left));
        }
        if hunks.is_empty() {
            return Err("the file has no hunk: a mistake changes the reference somewhere".into());
        }
        Ok(Mistake { explanation, hunks })
    }

    /// The mistake's own file: `reference` with every hunk applied, and the
    /// explanation in place of the reference's leading `//!` lines. An error
    /// names the hunk that no longer applies.
    pub fn apply(&self, reference: &str) -> Result<String, String> {
        let mut lines: Vec<String> = reference.lines().map(str::to_string).collect();
        // How far the hunks applied so far moved the lines below them.
        let mut shift: isize = 0;
        let mut floor = 0;
        for hunk in &self.hunks {
            let old: Vec<&str> = hunk
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Same(t) | Line::Removed(t) => Some(t.as_str()),
                    Line::Added(_) => None,
                })
                .collect();
            let new: Vec<String> = hunk
                .lines
                .iter()
                .filter_map(|l| match l {
                    Line::Same(t) | Line::Added(t) => Some(t.clone()),
                    Line::Removed(_) => None,
                })
                .collect();
            // A hunk that only adds lines names the line after which they go.
            let stated = if old.is_empty() {
                hunk.old_start
            } else {
                hunk.old_start.saturating_sub(1)
            };
            let wanted = (stated as isize + shift).max(floor as isize) as usize;
            let found = nearest_match(&lines, &old, wanted, floor).ok_or_else(|| {
                format!(
                    "the hunk at line {} (`@@ -{}`) no longer applies: the reference has no \
                     longer the lines it changes. Rebase the mistake onto the reference (apply it \
                     by hand to a copy of the reference, then `cargo run -p kata-catalog --bin \
                     mistake -- save`)",
                    hunk.at, hunk.old_start
                )
            })?;
            lines.splice(found..found + old.len(), new.iter().cloned());
            shift += new.len() as isize - old.len() as isize;
            shift += found as isize - wanted as isize;
            floor = found + new.len();
        }
        let body = lines
            .iter()
            .skip_while(|l| l.starts_with("//!"))
            .map(String::as_str);
        let mut text = String::new();
        for line in self.explanation.iter().map(String::as_str).chain(body) {
            text.push_str(line);
            text.push('\n');
        }
        Ok(text)
    }
}

/// The `//! Shows: <text>` lines of a mistake's text.
pub fn shows(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("//! Shows: "))
        .map(|t| t.trim().to_string())
        .collect()
}

/// `-a,b +c,d @@` → `a`.
/// The error for a hunk that ends before its header's counts.
fn short_hunk(hunks: &[Hunk], old_left: usize, new_left: usize) -> String {
    let at = hunks.last().map_or(0, |h| h.at);
    format!(
        "the hunk at line {at} ends {old_left} line(s) of the reference and {new_left} of the \
         mistake short of what its header counts"
    )
}

/// `-a,b +c,d @@` → `(a, b, d)` (a missing count is 1).
fn hunk_header(header: &str) -> Option<(usize, usize, usize)> {
    let mut parts = header.split_whitespace();
    let range = |part: &str| -> Option<(usize, usize)> {
        let (start, count) = part.split_once(',').unwrap_or((part, "1"));
        Some((start.parse().ok()?, count.parse().ok()?))
    };
    let (a, b) = range(parts.next()?.strip_prefix('-')?)?;
    let (_, d) = range(parts.next()?.strip_prefix('+')?)?;
    (parts.next()? == "@@").then_some((a, b, d))
}

/// Where `old` occurs in `lines` at or after `floor`, nearest to `wanted`.
fn nearest_match(lines: &[String], old: &[&str], wanted: usize, floor: usize) -> Option<usize> {
    let fits = |at: usize| {
        at >= floor
            && at + old.len() <= lines.len()
            && lines[at..at + old.len()]
                .iter()
                .zip(old)
                .all(|(a, b)| a == b)
    };
    (0..=lines.len()).find_map(|distance| {
        let later = wanted + distance;
        let earlier = wanted.checked_sub(distance);
        if fits(later) {
            Some(later)
        } else {
            earlier.filter(|&e| fits(e))
        }
    })
}

/// Writes a mistake's file: `edited` is a copy of `reference` with the bug
/// in it and, as its leading `//!` lines, the mistake's explanation. The
/// diff names its two files as `reference_path` and `applied_path` (where
/// the build writes the mistake whole).
pub fn write(
    reference: &str,
    edited: &str,
    reference_path: &str,
    applied_path: &str,
) -> Result<String, String> {
    let explanation: Vec<&str> = edited
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .collect();
    if explanation.is_empty() {
        return Err(
            "the edited file has no `//!` lines at its top: they are the mistake's explanation"
                .into(),
        );
    }
    let lines: Vec<&str> = reference.lines().collect();
    let header = lines.iter().take_while(|l| l.starts_with("//!")).count();
    if explanation == lines[..header] {
        return Err(
            "the edited file's `//!` lines are the reference's: write the mistake's explanation \
             there (what the bug is, why learners write it, its `//! Shows:` lines)"
                .into(),
        );
    }
    // The diff is of the code: neither explanation is context, so that
    // rewording the reference's never stops a mistake from applying. Its
    // lines are counted in the whole reference, as `patch` counts them.
    let old = &lines[header..];
    let new: Vec<&str> = edited.lines().skip(explanation.len()).collect();
    let hunks = unified(old, &new, header);
    if hunks.is_empty() {
        return Err("the edited file's code is the reference's: there is no bug in it".into());
    }
    let mut text = String::new();
    for line in &explanation {
        let _ = writeln!(text, "{line}");
    }
    let _ = writeln!(text, "--- {reference_path}");
    let _ = writeln!(text, "+++ {applied_path}");
    text.push_str(&hunks);
    Ok(text)
}

/// The hunks of a unified diff from `old` to `new`, with [`CONTEXT`] lines
/// of context, from a longest common subsequence; both counted from line
/// `skipped + 1` of their files.
fn unified(old: &[&str], new: &[&str], skipped: usize) -> String {
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0u32; new.len() + 1]; old.len() + 1];
    for i in (0..old.len()).rev() {
        for j in (0..new.len()).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // The edit script: (tag, old line index, new line index).
    let mut script: Vec<(char, usize, usize)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        if i < old.len() && j < new.len() && old[i] == new[j] {
            script.push((' ', i, j));
            i += 1;
            j += 1;
        } else if i < old.len() && (j == new.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            script.push(('-', i, j));
            i += 1;
        } else {
            script.push(('+', i, j));
            j += 1;
        }
    }
    let changes: Vec<usize> = (0..script.len()).filter(|&k| script[k].0 != ' ').collect();
    let mut text = String::new();
    let mut k = 0;
    while k < changes.len() {
        // One hunk: changes closer than twice the context join it.
        let first = changes[k];
        let mut last = first;
        while k + 1 < changes.len() && changes[k + 1] - last <= 2 * CONTEXT + 1 {
            k += 1;
            last = changes[k];
        }
        k += 1;
        let start = first.saturating_sub(CONTEXT);
        let end = (last + CONTEXT + 1).min(script.len());
        let part = &script[start..end];
        let old_count = part.iter().filter(|s| s.0 != '+').count();
        let new_count = part.iter().filter(|s| s.0 != '-').count();
        let (old_at, new_at) = (part[0].1, part[0].2);
        // An empty side is named by the line before it, as diff(1) does.
        let old_start = skipped + if old_count == 0 { old_at } else { old_at + 1 };
        let new_start = skipped + if new_count == 0 { new_at } else { new_at + 1 };
        let _ = writeln!(
            text,
            "@@ -{old_start},{old_count} +{new_start},{new_count} @@"
        );
        for &(tag, i, j) in part {
            let line = if tag == '+' { new[j] } else { old[i] };
            let _ = writeln!(text, "{tag}{line}");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: &str = "//! The reference.\n\nfn a() {}\n\nfn a1() {}\n\nfn a2() {}\n\nfn check() {\n    if x < y {\n        allow();\n    }\n}\n\nfn b() {}\n";

    fn edited(body_change: (&str, &str)) -> String {
        let body = REFERENCE
            .replace("//! The reference.\n", "")
            .replace(body_change.0, body_change.1);
        format!("//! MISTAKE: <= where < belongs.\n//!\n//! Shows: at request #2\n{body}")
    }

    #[test]
    fn a_written_mistake_applies_back_to_its_file() {
        let mistake = edited(("x < y", "x <= y"));
        let text = write(REFERENCE, &mistake, "solutions/l.rs", "mistakes/l/m.diff").unwrap();
        assert!(text.starts_with("//! MISTAKE"), "{text}");
        assert!(
            text.contains("-    if x < y {\n+    if x <= y {\n"),
            "{text}"
        );
        let parsed = Mistake::parse(&text).unwrap();
        assert_eq!(parsed.apply(REFERENCE).unwrap(), mistake);
        assert_eq!(shows(&text), ["at request #2"]);
    }

    #[test]
    fn a_hunk_follows_its_lines_when_the_reference_grows_above_them() {
        let mistake = edited(("x < y", "x <= y"));
        let text = write(REFERENCE, &mistake, "a", "b").unwrap();
        let grown = REFERENCE.replace("fn a() {}\n", "fn a() {}\n\nfn a0() {}\n");
        let applied = Mistake::parse(&text).unwrap().apply(&grown).unwrap();
        assert!(
            applied.contains("fn a0() {}") && applied.contains("x <= y"),
            "{applied}"
        );
        let shrunk = REFERENCE.replace("fn a() {}\n\n", "");
        let applied = Mistake::parse(&text).unwrap().apply(&shrunk).unwrap();
        assert!(
            !applied.contains("fn a()") && applied.contains("x <= y"),
            "{applied}"
        );
    }

    #[test]
    fn a_hunk_whose_lines_are_gone_is_an_error_naming_it() {
        let mistake = edited(("x < y", "x <= y"));
        let text = write(REFERENCE, &mistake, "a", "b").unwrap();
        let changed = REFERENCE.replace("x < y", "y > x");
        let e = Mistake::parse(&text).unwrap().apply(&changed).unwrap_err();
        assert!(
            e.contains("no longer applies") && e.contains("line 6") && e.contains("@@ -7"),
            "{e}"
        );
    }

    #[test]
    fn added_and_removed_lines_at_the_edges_round_trip() {
        for (from, to) in [
            ("fn a() {}\n", ""),
            ("fn b() {}\n", "fn b() {}\n\nfn c() {}\n"),
            ("\nfn a() {}", "\nuse x;\n\nfn a() {}"),
            ("        allow();\n", ""),
        ] {
            let mistake = edited((from, to));
            let text = write(REFERENCE, &mistake, "a", "b").unwrap();
            let applied = Mistake::parse(&text).unwrap().apply(REFERENCE).unwrap();
            assert_eq!(applied, mistake, "{text}");
        }
    }

    #[test]
    fn the_reference_s_explanation_is_never_context() {
        // A bug on the first line of code: its context stops at the code.
        let mistake = edited(("\nfn a() {}", "\nfn a() { b() }"));
        let text = write(REFERENCE, &mistake, "a", "b").unwrap();
        assert!(!text.contains(" //! The reference."), "{text}");
        assert!(text.contains("@@ -2,"), "{text}");
        let reworded = REFERENCE.replace(
            "//! The reference.\n",
            "//! The reference,\n//! reworded.\n",
        );
        let applied = Mistake::parse(&text).unwrap().apply(&reworded).unwrap();
        assert_eq!(applied, mistake);
        let own = format!("//! The reference.{}", mistake.split_once('\n').unwrap().1);
        let own = own.replace("//!\n//! Shows: at request #2\n", "");
        assert!(write(REFERENCE, &own, "a", "b")
            .unwrap_err()
            .contains("are the reference's"));
    }

    #[test]
    fn a_hunk_holds_the_lines_its_header_counts() {
        let text = write(REFERENCE, &edited(("x < y", "x <= y")), "a", "b").unwrap();
        let long = format!("{text}+    stray();\n");
        let e = Mistake::parse(&long).unwrap_err();
        assert!(e.contains("past the end of the hunk"), "{e}");
        let blank = format!("{text}\n");
        assert!(Mistake::parse(&blank).unwrap_err().contains("past the end"));
        let short = text.trim_end().rsplit_once('\n').unwrap().0.to_string();
        let e = Mistake::parse(&short).unwrap_err();
        assert!(e.contains("short of what its header counts"), "{e}");
    }

    #[test]
    fn refuses_a_mistake_without_explanation_or_change() {
        assert!(Mistake::parse("@@ -1,1 +1,1 @@\n-a\n+b\n")
            .unwrap_err()
            .contains("explanation"));
        assert!(Mistake::parse("//! x\n").unwrap_err().contains("no hunk"));
        assert!(Mistake::parse("//! x\n@@ -1,1 +1,1 @@\n*a\n")
            .unwrap_err()
            .contains("line 3"));
        let same = format!("//! x\n{}", REFERENCE.replace("//! The reference.\n", ""));
        assert!(write(REFERENCE, &same, "a", "b")
            .unwrap_err()
            .contains("no bug"));
    }
}
