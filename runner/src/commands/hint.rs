//! `cargo run -- hint N [K]`: a lesson's next hint, or hint K again. In a
//! lesson with milestones, the hints are those of the milestone the last
//! `test` or `watch` run stopped at.

use std::path::Path;
use std::process::ExitCode;

use kata_runner::runner::{self, Entry};
use kata_runner::state;

use super::{Done, Refusal};

pub fn hint(root: &Path, entry: &Entry, which: Option<usize>) -> Done {
    let text = std::fs::read_to_string(entry.text(root))
        .map_err(|e| Refusal(format!("cannot read lessons/{}.md: {e}", entry.name)))?;
    let milestone =
        state::current_milestone(root, &entry.name).clamp(1, entry.milestones.len().max(1));
    let all = runner::hints_for(runner::hints(&text), milestone);
    if all.is_empty() {
        return Err(Refusal(format!(
            "lessons/{}.md has no hints{}",
            entry.name,
            if entry.milestones.is_empty() {
                String::new()
            } else {
                format!(" for milestone {milestone}")
            }
        )));
    }
    // Which hints were shown is kept per milestone.
    let kept = if entry.milestones.is_empty() {
        entry.name.clone()
    } else {
        println!(
            "{} (the milestone your last run stopped at)\n",
            runner::milestone_line(entry, milestone - 1).unwrap_or_default()
        );
        format!("{}.{milestone}", entry.name)
    };
    let shown = state::hints_shown(root, &kept);
    let next = match which {
        Some(k) if (1..=all.len()).contains(&k) && k > shown + 1 => {
            return Err(Refusal(format!(
                "you have seen {} of lesson {}'s hints; the next one is `cargo run -- hint {}`",
                if shown == 0 {
                    "none".to_string()
                } else {
                    format!("hints 1 to {shown}")
                },
                entry.number,
                entry.number
            )))
        }
        Some(k) if (1..=all.len()).contains(&k) => k - 1,
        Some(k) => {
            return Err(Refusal(format!(
                "lesson {} has hints 1 to {}, not {k}",
                entry.number,
                all.len()
            )))
        }
        None => shown.min(all.len() - 1),
    };
    let hint = &all[next];
    println!(
        "{} ({} of {})\n\n{}",
        hint.title,
        next + 1,
        all.len(),
        hint.text
    );
    if next + 1 < all.len() {
        println!(
            "\n(run `cargo run -- hint {}` again for the next hint; `cargo run -- hint {} K` shows hint K again)",
            entry.number, entry.number
        );
    } else {
        println!("\n(that was the last hint)");
    }
    state::remember_hints_shown(root, &kept, shown.max(next + 1))
        .map_err(|e| Refusal(format!("cannot remember the hints shown: {e}")))?;
    Ok(ExitCode::SUCCESS)
}
