//! The edges of forgetting: thousands of keys forgotten at once, by a sweep
//! and by a full store, and fresh instants past the end of `u64` time, which
//! are exact (in `u128`): a key whose fresh instant lies past `u64::MAX` is
//! never forgettable, since no clock reaches it.

use std::time::Duration;

use super::case::{model_run, Case, Step};
use super::BoundedLesson;
use crate::memory::drive::RuleKind;
use crate::memory::{Bounds, Overflow};
use crate::time::Timestamp;
use crate::timeline::Request;

/// How many keys become forgettable at once.
const AT_ONCE: usize = 5_000;

impl BoundedLesson {
    /// [`AT_ONCE`] keys, each fresh at 1_000: one sweep at 1_000 forgets
    /// them all (a sweep that forgets a batch at a time leaves some).
    pub fn forgets_thousands_at_once(&self, kind: RuleKind) {
        let at = Timestamp::from_nanos(1_000);
        let steps: Vec<Step> = thousands()
            .chain([Step::Sweep(at), Step::Check(Request::new("new", 1_000))])
            .collect();
        self.thousands_forgotten(kind, "a sweep", 2 * AT_ONCE, steps);
    }

    /// A store of exactly [`AT_ONCE`] keys, full of them, each fresh at
    /// 1_000, takes a new key at 1_000 after forgetting every one.
    pub fn forgets_thousands_to_make_room(&self, kind: RuleKind) {
        let steps: Vec<Step> = thousands()
            .chain([Step::Check(Request::new("new", 1_000))])
            .collect();
        self.thousands_forgotten(kind, "a full store", AT_ONCE, steps);
    }

    fn thousands_forgotten(&self, kind: RuleKind, by: &str, max_keys: usize, steps: Vec<Step>) {
        self.edge(
            &format!("{AT_ONCE} keys forgotten at once, by {by}"),
            Case {
                rule: kind.rule(1, Duration::from_nanos(1_000)),
                bounds: Bounds::new("edge", max_keys, Overflow::Deny),
                shadow: false,
                steps,
            },
        );
    }

    /// Keys whose fresh instant is just past `u64::MAX`, or exactly on it,
    /// swept at `u64::MAX` and asked again there: the first kind is kept
    /// (its state still matters: a fresh quota would be too many), the
    /// second forgotten.
    pub fn forgets_exactly_at_the_end_of_time(&self, kind: RuleKind) {
        const MAX: u64 = u64::MAX;
        let half = 1u64 << 63;
        // (limit, period, steps): each key's fresh instant in a comment.
        let cases: [(u64, u64, Vec<Step>); 3] = [
            // Window [2^63, 2^64), or a bucket full again at 2^64: past the end.
            (1, half, steps(&[("a", half), ("sweep", MAX), ("a", MAX)])),
            // One window of u64::MAX, or a full bucket at u64::MAX: on it.
            (1, MAX, steps(&[("a", 0), ("sweep", MAX), ("a", MAX)])),
            // A key used near the end, another at the start: the sweep at
            // the end forgets only the one whose instant came.
            (
                2,
                half / 2,
                steps(&[
                    ("b", 1),
                    ("a", MAX - 1),
                    ("a", MAX),
                    ("sweep", MAX),
                    ("b", MAX),
                    ("a", MAX),
                ]),
            ),
        ];
        for (limit, period, steps) in cases {
            self.end_of_time(kind, limit, period, 4, steps);
        }
    }

    /// A full store at the end of time: the held key's fresh instant is
    /// past it, so a new key gets the overflow answer.
    pub fn is_full_at_the_end_of_time(&self, kind: RuleKind) {
        let steps = steps(&[("a", u64::MAX - 5), ("b", u64::MAX)]);
        self.end_of_time(kind, 1, 1u64 << 63, 1, steps);
    }

    fn end_of_time(
        &self,
        kind: RuleKind,
        limit: u64,
        period: u64,
        max_keys: usize,
        steps: Vec<Step>,
    ) {
        self.edge(
            "fresh instants at the end of time",
            Case {
                rule: kind.rule(limit, Duration::from_nanos(period)),
                bounds: Bounds::new("edge", max_keys, Overflow::Deny),
                shadow: false,
                steps,
            },
        );
    }

    fn edge(&self, what: &str, case: Case) {
        let model = model_run(&case);
        if let Err(e) = self.compare(&case, &model) {
            let shown = format!("{case:?}");
            let shown = match shown.chars().count() > 600 {
                true => format!("{}…", shown.chars().take(600).collect::<String>()),
                false => shown,
            };
            let replay = case.replay().unwrap_or_default();
            self.fail(what, format!("{shown}\n\n{e}{replay}"));
        }
    }
}

/// [`AT_ONCE`] keys, each asked once at 0.
fn thousands() -> impl Iterator<Item = Step> {
    (0..AT_ONCE).map(|i| Step::Check(Request::new(&format!("key-{i}"), 0)))
}

fn steps(list: &[(&str, u64)]) -> Vec<Step> {
    list.iter()
        .map(|&(k, at)| match k {
            "sweep" => Step::Sweep(Timestamp::from_nanos(at)),
            k => Step::Check(Request::new(k, at)),
        })
        .collect()
}
