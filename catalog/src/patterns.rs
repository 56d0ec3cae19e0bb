//! Which checks a milestone's patterns name.

use crate::Milestone;

/// Whether `pattern` (where `*` stands for any text) matches the whole of
/// `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split gives one part at least");
    let Some(mut left) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// The milestone a check (a test's name) belongs to: the one with the most
/// specific pattern that matches it (the most characters other than `*`;
/// the earlier milestone on a tie), so that a general pattern
/// (`fixed_window::property::*`) and an exception to it
/// (`*::property::agrees_with_model_under_a_bound`) can sit in two
/// milestones. `None` when there are no milestones or no pattern matches.
pub fn milestone_of<'m>(milestones: &'m [Milestone], test: &str) -> Option<&'m Milestone> {
    let mut best: Option<(&Milestone, usize)> = None;
    for milestone in milestones {
        for pattern in &milestone.checks {
            let score = specificity(pattern);
            if matches(pattern, test) && best.is_none_or(|(_, s)| score > s) {
                best = Some((milestone, score));
            }
        }
    }
    best.map(|(m, _)| m)
}

/// How specific a pattern is: its characters other than `*`.
fn specificity(pattern: &str) -> usize {
    pattern.chars().filter(|c| *c != '*').count()
}
