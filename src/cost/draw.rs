//! Lesson 13's drawings: a script, request by request, with each limit's
//! bucket before and after it (as the contract fills and charges them) and
//! the subject's answer, marked where it is not the contract's.

use super::drive::Answer;
use super::gen::Script;
use super::model::{tokens, Model};
use super::{CostError, Decision};

pub use super::when;

/// An answer in words: `allowed, 4 left`, `denied, retry after 100ms`,
/// `refused: ZeroCost`.
pub fn answer(a: &Answer) -> String {
    match a {
        Ok(Decision::Allowed { remaining }) => format!("allowed, {remaining} left"),
        Ok(Decision::Denied { retry_after }) => {
            format!("denied, retry after {}", when(retry_after.as_nanos()))
        }
        Err(e) => format!("refused: {}", short(e)),
    }
}

fn short(e: &CostError) -> String {
    match e {
        CostError::AboveCapacity {
            limit,
            cost,
            capacity,
        } => format!("AboveCapacity {{ limit: {limit}, cost: {cost}, capacity: {capacity} }}"),
        other => format!("{other:?}"),
    }
}

/// The script drawn with `answers` (one per request, or fewer when the
/// subject stopped), each beside the contract's buckets.
pub fn draw(script: &Script, answers: &[Answer]) -> String {
    let mut model: Model = script.model();
    let mut rows: Vec<([String; 4], String)> = Vec::new();
    for (i, (r, got)) in script.requests.iter().zip(answers).enumerate() {
        let keys = r.keys();
        let mut cells = Vec::new();
        if model.refuses(&keys, r.cost).is_none() {
            for (limit, part) in model.limits().iter().zip(model.parts(&keys, r.cost, r.at)) {
                let t = limit.refill_every.as_nanos();
                let before = tokens(part.level, t);
                let before = before
                    .trim_end_matches(" tokens")
                    .trim_end_matches(" token");
                let denied = model.parts(&keys, r.cost, r.at).iter().any(|p| p.short > 0);
                let after = tokens(part.level - part.level.min(u128::from(r.cost) * t), t);
                let after = after.trim_end_matches(" tokens").trim_end_matches(" token");
                // What the contract does to the bucket: charges it only when
                // every limit admits a check.
                let cell = if part.short > 0 {
                    format!("{before} short {}", when(part.short))
                } else if denied {
                    format!("{before} kept")
                } else if r.peek {
                    format!("{before} (→{after} if checked)")
                } else {
                    format!("{before}→{after}")
                };
                cells.push(format!("{}[{}] {cell}", limit.name, part.key));
            }
        }
        let contract = model.answer(&keys, r.cost, r.at, r.peek);
        let mut said = answer(got);
        if *got != contract {
            said = format!("{said}   ≠ the contract: {}", answer(&contract));
        }
        rows.push((
            [
                format!("#{}", i + 1),
                when(u128::from(r.at)),
                format!("{} ×{}", if r.peek { "peek " } else { "check" }, r.cost),
                if cells.is_empty() {
                    "—".to_string()
                } else {
                    cells.join("  ")
                },
            ],
            said,
        ));
    }
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            rows.iter()
                .map(|r| r.0[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let limits: Vec<String> = script.limits.iter().map(|l| l.describe()).collect();
    let mut out = format!("limits: {}\n", limits.join("; "));
    for (row, said) in &rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            line.push_str(cell);
            line.push_str(&" ".repeat(widths[c] - cell.chars().count() + 2));
        }
        line.push_str(said);
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if answers.len() < script.requests.len() {
        out.push_str(&format!("(stopped after request #{})\n", answers.len()));
    }
    out
}
