//! Keys kept apart: every key's answers are its own, whatever it looks like
//! ([`crate::keys`]) and however many other keys the limiter holds. A
//! failure is shrunk to the key that went wrong and the fewest other keys
//! that still make it go wrong (one, when two keys share state).

use super::judge::divergence;
use super::runs::{run_until_wrong, run_watched};
use super::{replay, Lesson};
use crate::decision::Decision;
use crate::keys::{look_alikes, meeting_names};
use crate::models::model_run;
use crate::render::{first_difference, render_compare};
use crate::text::count;
use crate::timeline::{show_key, Config, Request, Timeline};
use crate::watchdog::{time_limit, Stop};

/// How many distinct keys [`Lesson::keeps_many_keys_apart`] uses: among
/// this many, any 32-bit hash of the keys collides in all but about one run
/// in a thousand (and a 16-bit one always), and a table passes 2^16 and 2^18.
pub const MANY_KEYS: usize = (1 << 18) + 3;

/// Keys called once far back, then again after the table has passed these
/// sizes: their own clocks are behind every other key's.
const RETURNS_AFTER: [usize; 2] = [4_096, 65_536];

impl Lesson {
    /// The keys of [`crate::keys::look_alikes`], each called twice at one
    /// instant (allowed, then denied: the denial path sees every key too);
    /// then each pair of keys ending in digits whose names meet once a
    /// window number is appended, each in its window on its own clock (`a1`
    /// in window 0, `a` in window 10, `a1` again in window 0). Every answer
    /// must be the model's.
    pub fn keeps_look_alike_keys_apart(&self) {
        let config = Config::new(1, 1_000);
        let at = |w: u64| w * 1_000 + 500;
        let why = |wrong: &str, other: Option<&str>| {
            let group = look_alikes().iter().find(|g| {
                g.keys.iter().any(|k| k == wrong)
                    && other.is_none_or(|o| g.keys.iter().any(|k| k == o))
            });
            group.map(|g| g.why.clone()).unwrap_or_else(|| {
                "keys that look alike: one key's answers must never depend on another's".into()
            })
        };
        let requests = look_alikes()
            .iter()
            .flat_map(|g| &g.keys)
            .flat_map(|k| [Request::new(k, at(0)), Request::new(k, at(0))])
            .collect();
        self.keys_apart(Timeline { config, requests }, &why);
        for group in look_alikes().iter().filter(|g| g.numbered) {
            for (x, i, y, j) in meeting_names(group) {
                let requests = [(x, i), (x, i), (y, j), (y, j), (x, i)]
                    .map(|(k, w)| Request::new(k, at(w)))
                    .to_vec();
                self.keys_apart(Timeline { config, requests }, &why);
            }
        }
    }

    /// [`MANY_KEYS`] distinct keys, each called once, at its limit (limit
    /// 1), at one instant: a key that shares state with another (a hash
    /// modulo any number of buckets, any 32-bit hash) is denied. Sixteen
    /// keys called ten periods earlier come back at their own (earlier)
    /// instant after the table has passed 4,096 and 65,536 keys and at the
    /// end: a table that forgets keys, or evicts one whose period has ended
    /// by *another* key's clock, lets them in again.
    pub fn keeps_many_keys_apart(&self) {
        let period = 1_000;
        let (early_at, at) = (5, 5 + 10 * period);
        let early: Vec<String> = (0..16).map(|i| format!("early-{i}")).collect();
        let name = |i: usize| match i % 4 {
            0 => format!("{i}"),
            1 => format!("client-{i:06}"),
            2 => format!("10.{}.{}.{}", i >> 16, (i >> 8) & 255, i & 255),
            _ => format!("tenant/{}/user/{i}", i % 7),
        };
        let mut requests = Vec::with_capacity(MANY_KEYS + 64);
        let come_back = |requests: &mut Vec<Request>| {
            requests.extend(early.iter().map(|k| Request::new(k, early_at)));
        };
        come_back(&mut requests);
        for i in 0..MANY_KEYS {
            requests.push(Request::new(&name(i), at));
            if RETURNS_AFTER.contains(&(i + 1)) {
                come_back(&mut requests);
            }
        }
        come_back(&mut requests);
        let why = |_: &str, other: Option<&str>| match other {
            Some(_) => format!(
                "among {MANY_KEYS} distinct keys, more than any fixed number of buckets and \
                 enough that any 32-bit hash of them collides: keep state per key (the whole \
                 key, as it was given), not per bucket or per hash"
            ),
            None => "a table that forgets keys once it holds many, or evicts a key whose \
                     period has ended by another key's clock although its own clock is behind \
                     (timestamps only go forward per key), changes that key's answers"
                .into(),
        };
        self.keys_apart(
            Timeline {
                config: Config::new(1, period),
                requests,
            },
            &why,
        );
    }

    /// Runs `timeline` and fails at the first answer that is not the
    /// model's, shrunk to the key that went wrong and its fewest partners;
    /// `why(wrong, partner)` says what the keys have in common. The run is
    /// judged as it goes, and stops at its first wrong answer.
    fn keys_apart(&self, timeline: Timeline, why: &dyn Fn(&str, Option<&str>) -> String) {
        let ctx = self.ctx();
        let whole = match self.pace().one_clock {
            true => timeline.on_one_clock(),
            false => timeline,
        };
        let whole = std::sync::Arc::new(whole);
        let want = std::sync::Arc::new(model_run(ctx.algorithm, &whole));
        // A quarter of a million calls of a learner's file, built without
        // optimisation, on a busy machine: more than one call's time limit,
        // and still far from what a hang takes.
        let limit = time_limit() * (1 + (whole.requests.len() / 100_000) as u32);
        let got = match run_until_wrong(ctx.tested, &whole, &want, limit) {
            Ok(got) => got,
            Err(stop) => self.stopped_on_a_key(&whole, stop),
        };
        let Some(i) = first_difference(&got, &want[..got.len()]) else {
            return;
        };
        let timeline = whole.prefix(i + 1);
        let want = want[..=i].to_vec();
        let wrong = timeline.requests[i].key.clone();
        // A key that goes wrong on its own is not this check's finding.
        let mut alone = timeline.prefix(i + 1);
        alone.requests.retain(|r| r.key == wrong);
        let alone_got = self.unwrap(&alone, run_watched(ctx.tested, &alone));
        let alone_want = model_run(ctx.algorithm, &alone);
        if let Some(j) = first_difference(&alone_got, &alone_want) {
            panic!(
                "lesson {:02} ({}): {} answers a key wrongly on its own.\nminimal timeline: {alone:?}\n\n{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                self.facts.number,
                self.facts.title,
                self.whose(),
                divergence(&alone, j, &self.whose(), &alone_got, "the contract", &alone_want),
                render_compare(ctx.algorithm, &alone, ("yours", "contract"), &alone_got, &alone_want, Some(j)),
                replay(self.facts.number, &alone)
            );
        }
        let (t, got, want, j, others) = self.partners(&timeline, i, got, want);
        let r = &t.requests[j];
        let (headline, partner) = match others.as_slice() {
            [other] => (
                format!(
                    "answers key {} as if it were key {}",
                    show_key(&wrong),
                    show_key(other)
                ),
                Some(other.as_str()),
            ),
            _ => (
                format!(
                    "answers key {} wrongly once {} other {} been called",
                    show_key(&wrong),
                    others.len(),
                    if others.len() == 1 {
                        "key has"
                    } else {
                        "keys have"
                    }
                ),
                None,
            ),
        };
        let shown = if t.requests.len() <= 60 {
            format!(
                "minimal timeline: {t:?}\n\n{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                divergence(&t, j, &self.whose(), &got, "the contract", &want),
                render_compare(ctx.algorithm, &t, ("yours", "contract"), &got, &want, Some(j)),
                replay(self.facts.number, &t)
            )
        } else {
            format!(
                "smallest timeline found ({}): {}\n\n{}",
                count(t.requests.len(), "request"),
                t.brief(),
                divergence(&t, j, &self.whose(), &got, "the contract", &want),
            )
        };
        panic!(
            "lesson {:02} ({}): {} {headline} (at {}): {}.\n{shown}",
            self.facts.number,
            self.facts.title,
            self.whose(),
            crate::render::call(&r.key, r.now),
            why(&wrong, partner),
        );
    }

    /// The fewest other keys with which request `i` still goes wrong: the
    /// others before it, halved while one half still shows it.
    fn partners(
        &self,
        timeline: &Timeline,
        i: usize,
        got: Vec<Decision>,
        want: Vec<Decision>,
    ) -> (Timeline, Vec<Decision>, Vec<Decision>, usize, Vec<String>) {
        let ctx = self.ctx();
        let wrong = &timeline.requests[i].key;
        let mut others: Vec<&String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for r in &timeline.requests[..i] {
            if r.key != *wrong && seen.insert(&r.key) {
                others.push(&r.key);
            }
        }
        let fails = |keys: &[&String]| {
            let keep: std::collections::HashSet<&String> = keys.iter().copied().collect();
            let mut small = timeline.prefix(i + 1);
            small
                .requests
                .retain(|r| r.key == *wrong || keep.contains(&r.key));
            let got = run_watched(ctx.tested, &small).ok()?;
            let want = model_run(ctx.algorithm, &small);
            first_difference(&got, &want).map(|j| (small, got, want, j))
        };
        let mut best = (timeline.prefix(i + 1), got, want, i);
        while others.len() > 1 {
            let half = others.len() / 2;
            let (a, b) = others.split_at(half);
            if let Some(found) = fails(a) {
                best = found;
                others = a.to_vec();
            } else if let Some(found) = fails(b) {
                best = found;
                others = b.to_vec();
            } else {
                break;
            }
        }
        if others.len() == 1 {
            // With a single other key from the start, no half was run.
            if let Some(found) = fails(&others) {
                best = found;
            }
        }
        let (t, got, want, j) = best;
        let names = others.into_iter().cloned().collect();
        (t, got, want, j, names)
    }

    /// A run that panicked or hung: which key, called alone, does it.
    fn stopped_on_a_key(&self, timeline: &Timeline, stop: Stop) -> ! {
        let ctx = self.ctx();
        if let Stop::Hung(_) = stop {
            // Nothing more runs after a hang: say what it may be.
            panic!(
                "{} {}\nWith many keys held, a call whose work grows with the number of keys (a \
                 scan or clean-up of the whole table on each call) looks like one too.\ntimeline ({} \
                 requests): {}",
                self.whose(),
                stop.text(),
                timeline.requests.len(),
                timeline.brief()
            );
        }
        let mut keys: Vec<&String> = timeline.requests.iter().map(|r| &r.key).collect();
        keys.dedup();
        let mut tried = std::collections::HashSet::new();
        for key in keys {
            if !tried.insert(key) || tried.len() > 2_000 {
                continue;
            }
            let mut alone = timeline.clone();
            alone.requests.retain(|r| r.key == *key);
            if let Err(stop) = run_watched(ctx.tested, &alone) {
                panic!(
                    "lesson {:02} ({}): {} {} on key {} ({}), called on its own.\nminimal timeline: {alone:?}\nreplay it:\n  {}",
                    self.facts.number,
                    self.facts.title,
                    self.whose(),
                    stop.text(),
                    show_key(key),
                    count(key.len(), "byte"),
                    replay(self.facts.number, &alone)
                );
            }
        }
        panic!(
            "{} {}\ntimeline ({}): {}",
            self.whose(),
            stop.text(),
            count(timeline.requests.len(), "request"),
            timeline.brief()
        )
    }
}
