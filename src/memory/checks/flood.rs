//! A million distinct keys through a store of ten thousand, in a child
//! process: the keys held, the answers and the bytes held.

use std::time::Duration;

use super::BoundedLesson;
use crate::decision::{describe, Decision};
use crate::memory::drive::RuleKind;
use crate::memory::{Bounds, Counting, Overflow};
use crate::render::call;
use crate::run::run_alone;
use crate::store::model::BoundedModel;
use crate::time::group_digits;
use crate::timeline::Request;
use crate::watchdog::time_limit;

/// The flood: this many distinct keys, through a store of [`FLOOD_KEYS`].
const FLOOD: usize = 1_000_000;
const FLOOD_KEYS: usize = 10_000;
/// The bytes a held key may cost, at most, in the flood.
const BYTES_PER_KEY: usize = 1024;
/// Set in the child process that runs a flood alone.
const FLOOD_PROBE: &str = "KATA_FLOOD_PROBE";

impl BoundedLesson {
    /// A million distinct keys, through a store of 10_000, while ten keys
    /// keep calling: at no step more than 10_000 keys held, every answer
    /// the contract's, and the bytes the limiter holds at the end at most
    /// 1 KiB per key of the bound. Runs alone in a child process (bytes are
    /// counted for the whole process) that is stopped after a while: a
    /// store that scans every key on every call takes hours here.
    pub fn holds_at_most_max_keys_under_a_flood(&self, kind: RuleKind) {
        let test = &crate::trial::name().expect("a check runs as a trial");
        if std::env::var_os(FLOOD_PROBE).is_some() {
            // Every line of the verdict carries the probe's name, for the
            // parent to find among the test binary's.
            let (verdict, text) = match self.flood(kind) {
                Ok(line) => ("passed", line),
                Err(e) => ("failed", e),
            };
            for line in text.lines() {
                println!("{FLOOD_PROBE} {verdict} {line}");
            }
            return;
        }
        let limit = time_limit() * 2;
        let (out, stopped) = run_alone(test, FLOOD_PROBE, limit);
        // The binary prints the test's name and its output on one line.
        let said = |verdict: &str| -> Vec<&str> {
            out.lines()
                .filter_map(|l| l.split_once(FLOOD_PROBE))
                .filter_map(|(_, rest)| rest.trim_start().strip_prefix(verdict))
                .map(str::trim_start)
                .collect()
        };
        let failed = said("failed");
        match (stopped, said("passed").is_empty()) {
            _ if !failed.is_empty() => {
                self.fail(&format!("the flood ({})", kind.name()), failed.join("\n"))
            }
            (false, false) => {}
            (true, _) => {
                let reached = reached(said("progress").last().copied());
                self.fail(
                    &format!("the flood ({})", kind.name()),
                    format!(
                        "{} distinct keys through a store of {} did not finish within {} s (a \
                         correct limiter takes a few seconds); {reached}. Either a call looks at \
                         every held key (find the keys that can be forgotten in order of the \
                         instant each becomes fresh, a BTreeMap or a heap keyed by that \
                         instant, so that a call looks only at those it forgets), or a call \
                         never returns (a lock taken twice, a loop that does not end).",
                        group_digits(FLOOD as u128),
                        group_digits(FLOOD_KEYS as u128),
                        limit.as_secs(),
                    ),
                )
            }
            (false, true) => self.fail(
                &format!("the flood ({})", kind.name()),
                out.lines()
                    .filter(|l| {
                        let l = l.trim();
                        !(l.is_empty()
                            || l == "running 1 test"
                            || l == "failures:"
                            || l.starts_with("test result:"))
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }

    /// The flood itself (in the child process); says how far it got every
    /// [`PROGRESS_EVERY`] requests.
    fn flood(&self, kind: RuleKind) -> Result<String, String> {
        assert!(
            Counting::held() > 0,
            "the test binary must install kata::memory::Counting as its global allocator"
        );
        let period = Duration::from_millis(1);
        let rule = kind.rule(2, period);
        let over = match kind {
            RuleKind::FixedWindow | RuleKind::SlidingLog => Overflow::Admit,
            RuleKind::TokenBucket | RuleKind::Gcra => Overflow::Deny,
        };
        let bounds = Bounds::new("flood", FLOOD_KEYS, over);
        let step_of = |i: usize| -> Request {
            // 20_000 new keys per period, twice what the store holds; one
            // of ten steady keys every hundredth step.
            let now = i as u64 * 50;
            if i.is_multiple_of(100) {
                Request::new(&format!("steady-{}", i / 100 % 10), now)
            } else {
                Request::new(&format!("flood-{i}"), now)
            }
        };
        let total = FLOOD + FLOOD / 99;
        // The contract's answers first, so that the bytes counted below are
        // the limiter's alone.
        let mut want: Vec<(Decision, u32)> = Vec::with_capacity(total);
        {
            let mut model = BoundedModel::new(rule, bounds.clone());
            for i in 0..total {
                let r = step_of(i);
                let d = model.check(&r.key, r.now.as_nanos(), false);
                want.push((d, model.held() as u32));
            }
        }
        let before = Counting::held();
        let limiter = (self.tested().build)(rule, bounds).map_err(|e| e.to_string())?;
        let mut most = 0;
        for (i, (d, held)) in want.iter().enumerate() {
            if i % PROGRESS_EVERY == 0 {
                // Read by the parent if this run is stopped.
                println!("{FLOOD_PROBE} progress {i} of {}", want.len());
            }
            let r = step_of(i);
            let got = limiter.check(&r.key, r.now);
            let got_held = limiter.keys_held();
            most = most.max(got_held);
            if got != *d || got_held != *held as usize {
                return Err(format!(
                    "{} distinct keys through a store of {} ({}, max_keys {}, overflow {over:?}; \
                     new keys arrive every 50ns, 20_000 per period, and ten steady keys call \
                     every 100th step). At step #{}, {}: yours answered {} and holds {}; the \
                     contract answers {} and holds {held}.",
                    group_digits(FLOOD as u128),
                    group_digits(FLOOD_KEYS as u128),
                    kind.algorithm()
                        .describe(&crate::timeline::Config::new(2, 1_000_000)),
                    FLOOD_KEYS,
                    i + 1,
                    call(&r.key, r.now),
                    describe(&got),
                    crate::text::count(got_held, "key"),
                    describe(d),
                ));
            }
        }
        let bytes = Counting::held().saturating_sub(before);
        let budget = FLOOD_KEYS * BYTES_PER_KEY;
        if bytes > budget {
            return Err(format!(
                "after {} distinct keys through a store of {}, the limiter holds {} bytes ({} per \
                 key of the bound), more than the {} bytes (1 KiB per key) the check allows: \
                 something grows with the keys seen, not the keys held (a map that is never \
                 shrunk, an index of expired entries never cleaned up).",
                group_digits(FLOOD as u128),
                group_digits(FLOOD_KEYS as u128),
                group_digits(bytes as u128),
                group_digits((bytes / FLOOD_KEYS) as u128),
                group_digits(budget as u128)
            ));
        }
        Ok(format!(
            "most keys held {most}, {} {} held, {} per key",
            group_digits(bytes as u128),
            crate::text::plural(bytes, "byte"),
            bytes / most.max(1)
        ))
    }
}

/// How often the flood says how far it got.
const PROGRESS_EVERY: usize = 10_000;

/// How far a stopped flood got, from its last `progress i of n`: the
/// requests it answered at least, in words.
fn reached(last: Option<&str>) -> String {
    let answered = last.and_then(|p| p.split_once(" of ")).and_then(|(i, n)| {
        Some((
            i.trim().parse::<u128>().ok()?,
            n.trim().parse::<u128>().ok()?,
        ))
    });
    match answered {
        None => "it stopped before its first request".to_string(),
        Some((0, _)) => format!(
            "it answered fewer than {} requests",
            group_digits(PROGRESS_EVERY as u128)
        ),
        Some((i, n)) => format!(
            "it had answered between {} and {} of its {} requests",
            group_digits(i),
            group_digits(i + PROGRESS_EVERY as u128),
            group_digits(n)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::reached;

    /// A flood stopped early says how far it got, never "request 0".
    #[test]
    fn a_stopped_flood_says_how_far_it_got() {
        assert_eq!(reached(None), "it stopped before its first request");
        assert_eq!(
            reached(Some("0 of 1010101")),
            "it answered fewer than 10_000 requests"
        );
        assert_eq!(
            reached(Some("20000 of 1010101")),
            "it had answered between 20_000 and 30_000 of its 1_010_101 requests"
        );
    }
}
