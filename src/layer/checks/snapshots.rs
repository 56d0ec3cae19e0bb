//! Named exchanges drawn as transcripts: compared with their committed
//! snapshots, or printed beside the reference's (`cargo run -- compare 7`).

use super::verdict::{model_transcript, seen};
use super::HttpLesson;
use crate::layer::drive::{run, HttpVariant};
use crate::layer::exchange::{self, transcript, HttpTimeline, Observed};
use crate::watchdog::Stop;

impl HttpLesson {
    /// One of [`SNAPSHOTS`], drawn and compared with its snapshot.
    pub fn named_snapshot(&self, name: &str) {
        let (_, timeline) = SNAPSHOTS
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("no exchange is named {name:?}"));
        self.snapshot(name, timeline);
    }

    /// A named exchange, drawn as a transcript and compared with its
    /// snapshot, which must be the model's and the reference's.
    pub fn snapshot(&self, name: &str, timeline: &str) {
        let timeline =
            exchange::parse(timeline).unwrap_or_else(|e| panic!("bad snapshot timeline: {e}"));
        let ctx = self.ctx();
        let draw = |v: HttpVariant| -> String {
            let t = timeline.clone();
            match self.watched(&timeline, move || {
                run(v, ctx.algorithm, &t).map(|r| transcript(&t, &r.answers))
            }) {
                Ok(s) => s,
                Err(e) => panic!("{}: {e}", self.whose()),
            }
        };
        let contract = model_transcript(self.facts.algorithm, &timeline);
        let reference = draw(self.subjects.reference());
        let tested = draw(self.tested());
        crate::snapshot::assert_snapshot(
            (self.facts.root, self.facts.number, name),
            &format!("{timeline:?}"),
            [&tested, &reference, &contract],
            &self.whose(),
        );
    }

    /// For `cargo run -- compare 7 [TIMELINE]`: the subject's transcript and
    /// the reference's, the first difference named.
    pub fn print_comparison(&self, which: &str) {
        let text = match crate::layer::checks::SNAPSHOTS
            .iter()
            .find(|(n, _)| *n == which.trim())
        {
            Some((_, t)) => t.to_string(),
            None if which.trim().is_empty() => SNAPSHOTS[0].1.to_string(),
            None => which.to_string(),
        };
        let timeline = exchange::parse(&text).unwrap_or_else(|e| {
            let names: Vec<&str> = SNAPSHOTS.iter().map(|(n, _)| *n).collect();
            panic!("{e}\n(name one of {} or write a timeline: `name=\"api\" q=2 w=1: @0s from 203.0.113.7; …`)", names.join(", "))
        });
        let ctx = self.ctx();
        let answers = |v: HttpVariant, t: &HttpTimeline| {
            let t2 = t.clone();
            self.watched_stop(t, move || run(v, ctx.algorithm, &t2).map(|r| r.answers))
        };
        let reference = answers(self.subjects.reference(), &timeline)
            .unwrap_or_else(|e| panic!("the reference: {}", e.text()));
        let (yours, stop) = match answers(self.tested(), &timeline) {
            Ok(a) => (a, None),
            Err(e) => {
                // The answers before the request that failed, unless it hung
                // (a hang is not run again).
                let mut kept = Vec::new();
                if let Stop::Panicked(_) = e {
                    for i in 0..timeline.calls.len() {
                        match answers(self.tested(), &timeline.clone_upto(i)) {
                            Ok(a) => kept = a,
                            Err(_) => break,
                        }
                    }
                }
                (kept, Some(e))
            }
        };
        let first = (0..timeline.calls.len()).find(|&i| match (yours.get(i), reference.get(i)) {
            (Some(y), Some(r)) => seen(y) != seen(r),
            _ => true,
        });
        crate::trial::println(format_args!(
            "{:?}    (yours: {})",
            timeline.setup,
            self.whose()
        ));
        for (i, call) in timeline.calls.iter().enumerate() {
            let mut request = format!("{call:?}");
            request.remove(0);
            crate::trial::println(format_args!("#{:<2} {request}", i + 1));
            let line = |o: Option<&Observed>| match o {
                Some(o) => seen(o),
                None => "(no answer)".to_string(),
            };
            let (y, r) = (line(yours.get(i)), line(reference.get(i)));
            let mark = if first == Some(i) {
                "   <- first difference"
            } else {
                ""
            };
            if y == r {
                crate::trial::println(format_args!("    both:      {y}"));
            } else {
                crate::trial::println(format_args!("    yours:     {y}{mark}\n    reference: {r}"));
            }
            if i >= yours.len() && stop.is_some() {
                break;
            }
        }
        if let Some(e) = stop {
            panic!(
                "request #{}: {} {}",
                yours.len() + 1,
                self.whose(),
                e.text()
            );
        }
        match first {
            Some(i) => crate::trial::println(format_args!(
                "\nfirst difference: request #{} ({:?})",
                i + 1,
                timeline.calls[i]
            )),
            None => crate::trial::println(format_args!(
                "\nno difference on this timeline: your answers are the reference's here. (Other \
                 timelines may still tell them apart: `cargo run -- test {}` runs every check.)",
                self.facts.number
            )),
        }
    }
}

/// The named exchanges drawn as snapshots: `(name, timeline)`. The first
/// is what `cargo run -- compare 7` shows by default: a burst past the
/// quota, a wait that is not a whole number of seconds, and a new window.
pub const SNAPSHOTS: &[(&str, &str)] = &[
    (
        "first_look",
        "name=\"api\" q=2 w=2: @0s from 203.0.113.7; @0s from 203.0.113.7; @0s from 203.0.113.7; @0.5s from 203.0.113.7; @2s from 203.0.113.7",
    ),
    (
        "retry_after_rounds_up",
        "name=\"api\" q=1 w=3: @0s from 198.51.100.1; @0.5s from 198.51.100.1; @2s from 198.51.100.1; @2.000000001s from 198.51.100.1; @2.999999999s from 198.51.100.1; @3s from 198.51.100.1",
    ),
    (
        "behind_a_proxy",
        "name=\"api\" q=1 w=60 trust=10.0.0.0/8: @0s from 10.0.0.1 xff \"203.0.113.7\"; @0s from 10.0.0.1 xff \"1.2.3.4, 203.0.113.7\"; @0s from 10.0.0.1 xff \"5.6.7.8\" xff \"203.0.113.7, 10.0.0.2\"; @0s from 203.0.113.7 xff \"9.9.9.9\"; @0s from 10.0.0.1 xff \"unknown, 10.0.0.3\"",
    ),
    (
        "api_keys_and_ipv6",
        "name=\"per \\\"key\\\"\" q=1 w=10 api=x-api-key: @0s from 2001:db8:1:2::1 key \"k1\"; @0s from 2001:db8:1:2::1; @0s from 2001:db8:1:2::ffff; @0s from 2001:db8:1:3::1; @0s from ::ffff:192.0.2.1; @0s from 192.0.2.1 key \"k 1\"",
    ),
];
