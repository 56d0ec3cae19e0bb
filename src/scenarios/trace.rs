//! The operations of a failing execution as a learner reads them: one line
//! each, repeats collapsed.

use crate::files::tidy_path;
use crate::sync::Op;
use crate::text::count;

/// The operations of the failing execution, one line each.
pub(super) fn show_trace(ops: &[Op]) -> String {
    const MOST: usize = 80;
    let lines: Vec<String> = ops
        .iter()
        .map(|op| {
            let file = tidy_path(op.at.file());
            if file.contains("src/scenarios/") {
                format!("  thread {}  {}", op.thread, op.what)
            } else {
                format!(
                    "  thread {}      {}:{}  {}",
                    op.thread,
                    file,
                    op.at.line(),
                    op.what
                )
            }
        })
        .collect();
    let lines = collapse_repeats(lines);
    let skip = lines.len().saturating_sub(MOST);
    let mut out = String::new();
    if skip > 0 {
        out.push_str(&format!("  ... {} earlier\n", count(skip, "line")));
    }
    for line in &lines[skip..] {
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Writes a block of up to four lines that repeats three times or more in a
/// row once, followed by how many times it came: a loop that retries
/// without progress reads as one pass and a count.
pub(super) fn collapse_repeats(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    'next: while i < lines.len() {
        for size in 1..=4 {
            let block = &lines[i..(i + size).min(lines.len())];
            if block.len() < size {
                break;
            }
            let times = (1..)
                .take_while(|k| {
                    let start = i + k * size;
                    start + size <= lines.len() && lines[start..start + size] == *block
                })
                .count()
                + 1;
            if times >= 3 {
                out.extend(block.iter().cloned());
                out.push(format!(
                    "  ... the {} repeated × {times}",
                    if size == 1 {
                        "line above".to_string()
                    } else {
                        format!("{size} lines above")
                    }
                ));
                i += times * size;
                continue 'next;
            }
        }
        out.push(lines[i].clone());
        i += 1;
    }
    out
}
