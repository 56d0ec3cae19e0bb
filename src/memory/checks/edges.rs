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
    /// them all (a sweep that forgets a batch at a time leaves some); then a
    /// store of exactly that many, full of them, takes a new key at 1_000
    /// after forgetting every one.
    pub fn forgets_thousands_at_once(&self, kind: RuleKind) {
        let keys: Vec<String> = (0..AT_ONCE).map(|i| format!("key-{i}")).collect();
        let requests = || keys.iter().map(|k| Step::Check(Request::new(k, 0)));
        let at = Timestamp::from_nanos(1_000);
        let swept: Vec<Step> = requests()
            .chain([Step::Sweep(at), Step::Check(Request::new("new", 1_000))])
            .collect();
        let full: Vec<Step> = requests()
            .chain([Step::Check(Request::new("new", 1_000))])
            .collect();
        for (what, max_keys, steps) in [
            ("a sweep", 2 * AT_ONCE, swept),
            ("a full store", AT_ONCE, full),
        ] {
            self.edge(
                &format!("{AT_ONCE} keys forgotten at once, by {what}"),
                Case {
                    rule: kind.rule(1, Duration::from_nanos(1_000)),
                    bounds: Bounds::new("edge", max_keys, Overflow::Deny),
                    shadow: false,
                    steps,
                },
            );
        }
    }

    /// Keys whose fresh instant is just past `u64::MAX`, or exactly on it,
    /// swept at `u64::MAX` and asked again there: the first kind is kept
    /// (its state still matters: a fresh quota would be too many), the
    /// second forgotten.
    pub fn forgets_exactly_at_the_end_of_time(&self, kind: RuleKind) {
        const MAX: u64 = u64::MAX;
        let half = 1u64 << 63;
        // (limit, period, steps): each key's fresh instant in a comment.
        let cases: [(u64, u64, Vec<Step>); 4] = [
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
            // A full store at the end of time: the held key's instant is
            // past it, so the new key gets the overflow answer.
            (1, half, steps(&[("a", MAX - 5), ("b", MAX)])),
        ];
        for (i, (limit, period, steps)) in cases.into_iter().enumerate() {
            let max_keys = if i == 3 { 1 } else { 4 };
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
    }

    fn edge(&self, what: &str, case: Case) {
        let model = model_run(&case);
        if let Err(e) = self.compare(&case, &model) {
            let shown = format!("{case:?}");
            let shown = match shown.chars().count() > 600 {
                true => format!("{}…", shown.chars().take(600).collect::<String>()),
                false => shown,
            };
            self.fail(what, format!("{shown}\n\n{e}"));
        }
    }
}

fn steps(list: &[(&str, u64)]) -> Vec<Step> {
    list.iter()
        .map(|&(k, at)| match k {
            "sweep" => Step::Sweep(Timestamp::from_nanos(at)),
            k => Step::Check(Request::new(k, at)),
        })
        .collect()
}
