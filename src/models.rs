//! Executable models of each lesson's algorithm, written straight from the
//! contract (`lessons/CONTRACT.md`), not from the reference solutions.
//!
//! A model is meant to be obviously right rather than fast. Each algorithm is
//! one literal predicate, "would a request at `t` be allowed, given what this
//! key did so far?", in 128-bit arithmetic. The answers are derived from it
//! alone: `remaining` is how many more requests the predicate admits at `now`,
//! and `retry_after` is the first later instant it admits. Both are found by
//! binary search, which is exact because every rule here only ever becomes
//! more permissive as time passes without requests. Property tests compare
//! learner and reference against the model, so a bug both share is caught.

use std::collections::HashMap;
use std::time::Duration;

use crate::decision::{ConfigError, Decision};
use crate::timeline::{Config, Timeline};

/// The algorithm a lesson teaches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Algorithm {
    /// Lessons 01 and 02: windows `[k·W, (k+1)·W)` aligned to the clock's origin.
    FixedWindow,
    /// Lesson 03: at most L allowed in every half-open interval `(now − W, now]`.
    SlidingLog,
    /// Lesson 04: `p·(W − e) + c·W < L·W`, the previous window's count weighted
    /// by how much of it still overlaps the last W.
    SlidingCounter,
    /// Lessons 05 and 06: C tokens at most, one more every T ns, continuously.
    TokenBucket,
}

impl Algorithm {
    pub const ALL: [Algorithm; 4] = [
        Algorithm::FixedWindow,
        Algorithm::SlidingLog,
        Algorithm::SlidingCounter,
        Algorithm::TokenBucket,
    ];

    /// The name `lessons/lessons.toml` gives it (its variant's name).
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::FixedWindow => "FixedWindow",
            Algorithm::SlidingLog => "SlidingLog",
            Algorithm::SlidingCounter => "SlidingCounter",
            Algorithm::TokenBucket => "TokenBucket",
        }
    }

    /// Whether the rule counts requests in windows (01–04) rather than
    /// tokens in a bucket (05, 06).
    pub fn windowed(self) -> bool {
        match self {
            Algorithm::FixedWindow | Algorithm::SlidingLog | Algorithm::SlidingCounter => true,
            Algorithm::TokenBucket => false,
        }
    }

    /// What the period is called in this algorithm's texts.
    pub fn period_name(self) -> &'static str {
        match self {
            Algorithm::FixedWindow | Algorithm::SlidingLog | Algorithm::SlidingCounter => "window",
            Algorithm::TokenBucket => "refill interval",
        }
    }

    /// `limit 3 per window of 1_000ns` / `capacity 3, one token every 1_000ns`.
    pub fn describe(self, config: &Config) -> String {
        let period = crate::time::group_digits(config.period.as_nanos());
        match self {
            Algorithm::FixedWindow | Algorithm::SlidingLog | Algorithm::SlidingCounter => {
                format!("limit {} per window of {period}ns", config.limit)
            }
            Algorithm::TokenBucket => {
                format!("capacity {}, one token every {period}ns", config.limit)
            }
        }
    }

    /// The constructor's checks, in the contract's order.
    pub fn validate(self, limit: u64, period: Duration) -> Result<(), ConfigError> {
        let max = u128::from(u64::MAX);
        if limit == 0 {
            Err(ConfigError::ZeroLimit)
        } else if period.is_zero() {
            Err(ConfigError::ZeroPeriod)
        } else if period.as_nanos() > max
            || (!self.windowed() && u128::from(limit) * period.as_nanos() > max)
        {
            Err(ConfigError::TooLarge)
        } else {
            Ok(())
        }
    }

    /// How far past `now` the arithmetic must fit for a decision to be checked
    /// exactly: `2·W` for the windowed lessons, `C·T` for the token buckets.
    pub fn horizon(self, config: &Config) -> u128 {
        match self {
            Algorithm::FixedWindow | Algorithm::SlidingLog | Algorithm::SlidingCounter => {
                2 * config.period.as_nanos()
            }
            Algorithm::TokenBucket => u128::from(config.limit) * config.period.as_nanos(),
        }
    }

    /// True when the contract fixes the exact decision of a request at `now`.
    pub fn exact_at(self, config: &Config, now: u64) -> bool {
        u128::from(now) + self.horizon(config) <= u128::from(u64::MAX)
    }

    /// A fresh model of this algorithm.
    pub fn model(self, config: Config) -> Model {
        Model {
            algorithm: self,
            limit: u128::from(config.limit),
            period: config.period.as_nanos(),
            keys: HashMap::new(),
        }
    }

    /// The lesson's limit invariant over the allowed requests of one key, each
    /// given by the timestamp the contract places it at (non-decreasing).
    /// Returns a sentence naming the first violation.
    pub fn invariant(self, config: &Config, allowed: &[u64]) -> Result<(), String> {
        let (limit, w) = (u128::from(config.limit), config.period.as_nanos());
        let at = |i: usize| u128::from(allowed[i]);
        match self {
            Algorithm::FixedWindow => per_aligned_window(allowed, w, limit),
            Algorithm::SlidingLog => per_sliding_interval(allowed, w, limit),
            Algorithm::SlidingCounter => {
                per_aligned_window(allowed, w, limit)?;
                per_sliding_interval(allowed, w, 2 * limit)
            }
            Algorithm::TokenBucket => {
                for i in 0..allowed.len() {
                    for j in i..allowed.len() {
                        let bound = limit + (at(j) - at(i)) / w;
                        let count = (j - i + 1) as u128;
                        if count > bound {
                            return Err(format!(
                                "{count} requests were allowed in [{}, {}], but a bucket of {} \
                                 refilled every {w} ns admits at most {bound} there",
                                at(i),
                                at(j),
                                crate::text::count(limit, "token")
                            ));
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// At most `most` allowed in every aligned window `[k·W, (k+1)·W)`.
fn per_aligned_window(allowed: &[u64], w: u128, most: u128) -> Result<(), String> {
    let mut start = 0;
    while start < allowed.len() {
        let k = u128::from(allowed[start]) / w;
        let n = allowed[start..]
            .iter()
            .take_while(|t| u128::from(**t) / w == k)
            .count();
        if n as u128 > most {
            return Err(format!(
                "{n} requests were allowed in the window [{}, {}) but at most {most} may be",
                k * w,
                (k + 1) * w
            ));
        }
        start += n;
    }
    Ok(())
}

/// At most `most` allowed in every half-open interval `(t − W, t]`. The
/// busiest such interval ends at an allowed request, so only those are tried.
fn per_sliding_interval(allowed: &[u64], w: u128, most: u128) -> Result<(), String> {
    let mut first = 0;
    for (last, t) in allowed.iter().enumerate() {
        let t = u128::from(*t);
        while u128::from(allowed[first]) + w <= t {
            first += 1;
        }
        let n = (last + 1 - first) as u128;
        if n > most {
            return Err(format!(
                "{n} requests were allowed in the interval ({}, {t}], which is only W = {w} ns \
                 long, but at most {most} may be",
                t as i128 - w as i128
            ));
        }
    }
    Ok(())
}

/// An executable model of one algorithm: the oracle of the property tests.
#[derive(Clone)]
pub struct Model {
    algorithm: Algorithm,
    limit: u128,
    period: u128,
    keys: HashMap<String, KeyLog>,
}

#[derive(Clone, Default)]
struct KeyLog {
    /// The latest timestamp this key was called with (denied calls count).
    latest: u128,
    /// Every allowed request, at the timestamp the contract places it (so
    /// in order: a key's placed timestamps never decrease).
    allowed: Vec<u128>,
    /// The token bucket after the last allowed request: its credit in
    /// nanoseconds (T per token) and when that was. The same fold over
    /// `allowed` as [`Model::admits`] would make, kept as it goes.
    bucket: Option<(u128, u128)>,
}

impl KeyLog {
    /// How many allowed requests were placed in `[from, to)`.
    fn count(&self, from: u128, to: u128) -> u128 {
        let below = |bound: u128| self.allowed.partition_point(|t| *t < bound);
        below(to).saturating_sub(below(from)) as u128
    }
}

impl Model {
    /// True when `key` has already been called with a timestamp later than
    /// `now`: the contract then fixes no exact answer, only the limit.
    pub fn is_late(&self, key: &str, now: u64) -> bool {
        self.keys
            .get(key)
            .is_some_and(|log| u128::from(now) < log.latest)
    }

    /// Takes an answer the contract allows for a late request: denied (with
    /// any wait of at least 1 ns), or allowed if the rule admits it where it is
    /// placed, at the latest timestamp its key has seen. Returns false for an
    /// answer that would break the limit.
    pub fn accept_late(&mut self, key: &str, now: u64, answer: &Decision) -> bool {
        match answer {
            Decision::Denied { retry_after } => !retry_after.is_zero(),
            Decision::Allowed { .. } => {
                let mut tried = self.clone();
                let admitted = tried.decide(key, now).is_allowed();
                if admitted {
                    *self = tried;
                }
                admitted
            }
        }
    }

    /// The first instant from which `key`'s state is a fresh key's, at that
    /// instant and at every later one: the end of the window that holds its
    /// last allowed request (windows), the instant its last allowed request
    /// leaves the log (sliding log), the end of the window after (sliding
    /// counter), or the instant its bucket is full again (token bucket).
    /// `None` for a key with no allowed request, already a fresh key's.
    pub fn fresh_from(&self, key: &str) -> Option<u128> {
        let log = self.keys.get(key)?;
        let last = *log.allowed.last()?;
        let w = self.period;
        Some(match self.algorithm {
            Algorithm::FixedWindow => (last / w + 1) * w,
            Algorithm::SlidingLog => last + w,
            Algorithm::SlidingCounter => (last / w + 2) * w,
            Algorithm::TokenBucket => {
                let (credit, at) = log.bucket.expect("an allowed request fills in the bucket");
                at + (self.limit * w - credit)
            }
        })
    }

    /// Forgets `key`: its next request is a fresh key's.
    pub fn forget(&mut self, key: &str) {
        self.keys.remove(key);
    }

    pub fn decide(&mut self, key: &str, now: u64) -> Decision {
        let mut log = self.keys.remove(key).unwrap_or_default();
        log.latest = log.latest.max(u128::from(now));
        let decision = self.decide_for(&mut log);
        self.keys.insert(key.to_string(), log);
        decision
    }

    /// [`Model::decide`] for one key's log, at its latest timestamp.
    fn decide_for(&self, log: &mut KeyLog) -> Decision {
        let now = log.latest;
        let admits = |extra: u128, at: u128| self.admits(log, extra, at);
        if !admits(0, now) {
            // The rule only relaxes as time passes, and relaxes fully within
            // this bound, so the first instant it admits is a binary search away.
            let far = now + 2 * self.period;
            assert!(admits(0, far), "model: nothing admitted by {far}");
            let at = first(now + 1, far, |t| admits(0, t));
            return Decision::Denied {
                retry_after: Duration::from_nanos(u64::try_from(at - now).unwrap_or(u64::MAX)),
            };
        }
        // This request and `remaining` more are admitted at `now`.
        let remaining = first(1, self.limit, |extra| !admits(extra, now)) - 1;
        if self.algorithm == Algorithm::TokenBucket {
            let (capacity, w) = (self.limit * self.period, self.period);
            log.bucket = Some(match log.bucket {
                None => (capacity - w, now),
                Some((credit, last)) => ((credit + (now - last)).min(capacity) - w, now),
            });
        }
        log.allowed.push(now);
        // Every rule looks back at most two periods from the key's latest
        // instant, which never decreases: older requests are never counted
        // again, and dropping them keeps a key's log to what its rule can
        // still see (a store built on the model, as lesson 10's fallback
        // is, then holds a bounded log per key). The last one stays: it
        // says when the key becomes fresh.
        let seen_from = now.saturating_sub(2 * self.period);
        let unseen = log.allowed.partition_point(|t| *t < seen_from);
        log.allowed.drain(..unseen.min(log.allowed.len() - 1));
        Decision::Allowed {
            remaining: remaining as u64,
        }
    }

    /// Would the rule admit a request at `at` after `extra` more requests at
    /// that same instant had been allowed first?
    fn admits(&self, log: &KeyLog, extra: u128, at: u128) -> bool {
        let (l, w) = (self.limit, self.period);
        let count = |from: u128, to: u128| log.count(from, to);
        match self.algorithm {
            Algorithm::FixedWindow => {
                let start = at / w * w;
                count(start, start + w) + extra < l
            }
            Algorithm::SlidingLog => count((at + 1).saturating_sub(w), at + 1) + extra < l,
            Algorithm::SlidingCounter => {
                let start = at / w * w;
                let c = count(start, start + w) + extra;
                let p = count(start.saturating_sub(w), start);
                let e = at - start;
                // p·(W − e) + c·W < L·W, rearranged so that no side exceeds
                // L·W (the sum itself can pass u128::MAX when L and W are huge).
                c < l && p * (w - e) < (l - c) * w
            }
            Algorithm::TokenBucket => {
                // Tokens are counted in nanoseconds of credit, T per token, so
                // that a fraction of T is kept exactly.
                // A new key's bucket is full; each allowed request took one.
                // The credit after the last allowed request, `(credit + (t −
                // last)).min(capacity) − T` folded over every allowed t.
                let capacity = l * w;
                let (credit, last) = log.bucket.unwrap_or((capacity, at));
                // `extra` more requests at `at` take a token each first.
                (credit + (at - last)).min(capacity) >= (extra + 1) * w
            }
        }
    }
}

/// The least `x` in `[lo, hi]` for which `holds(x)`, given that `holds` is
/// false then true over that range and true at `hi`.
fn first(mut lo: u128, mut hi: u128, holds: impl Fn(u128) -> bool) -> u128 {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if holds(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The model's decisions for a timeline.
pub fn model_run(algorithm: Algorithm, timeline: &Timeline) -> Vec<Decision> {
    let mut model = algorithm.model(timeline.config);
    timeline
        .requests
        .iter()
        .map(|r| model.decide(&r.key, r.now.as_nanos()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{parse_decisions, Timeline};

    fn run(algorithm: Algorithm, config: Config, requests: &str) -> Vec<Decision> {
        let timeline = Timeline::parse(config, requests).unwrap();
        let mut model = algorithm.model(config);
        timeline
            .requests
            .iter()
            .map(|r| model.decide(&r.key, r.now.as_nanos()))
            .collect()
    }

    #[test]
    fn a_key_s_log_holds_only_what_its_rule_can_still_see() {
        let config = Config::new(3, 1_000);
        for algorithm in [
            Algorithm::FixedWindow,
            Algorithm::SlidingLog,
            Algorithm::SlidingCounter,
            Algorithm::TokenBucket,
        ] {
            let mut model = algorithm.model(config);
            let allowed = (0..100_000u64)
                .filter(|i| model.decide("k", i * 100).is_allowed())
                .count();
            // 10 ms of requests, 3 per µs (the windows) or 1 per µs (the
            // bucket's refill) allowed: at least 10,000 of them.
            assert!(allowed >= 10_000, "{algorithm:?}: {allowed}");
            let held = model.keys["k"].allowed.len();
            assert!(held <= 2 * 3 + 1, "{algorithm:?} holds {held} entries");
        }
    }

    #[test]
    fn fixed_window_by_hand() {
        let got = run(
            Algorithm::FixedWindow,
            Config::new(2, 1000),
            "a@0 a@1 a@999 b@999 a@1000 a@1999 a@1999",
        );
        assert_eq!(got, parse_decisions("+1 +0 -1 +1 +1 +0 -1").unwrap());
    }

    #[test]
    fn sliding_log_by_hand() {
        let got = run(
            Algorithm::SlidingLog,
            Config::new(2, 1000),
            "a@0 a@600 a@999 a@1000 a@1001 a@1599 a@1600",
        );
        assert_eq!(got, parse_decisions("+1 +0 -1 +0 -599 -1 +0").unwrap());
    }

    #[test]
    fn sliding_counter_by_hand() {
        // L=4, W=100: 4 allowed in window 0. At 150 (e=50) the previous
        // window weighs 4·50 = 200 of 400: room for c·100 < 200, so c < 2.
        let got = run(
            Algorithm::SlidingCounter,
            Config::new(4, 100),
            "a@0 a@0 a@0 a@0 a@100 a@150 a@150 a@150",
        );
        // At 100: 4·100 + 0 < 400 fails; the weight 4·(100-e) < 400 needs e>=1.
        // At 150: p·50 + 0·100 = 200 < 400 allowed (c=1 after), then
        // 200 + 100 = 300 < 400 allowed, then 200 + 200 = 400 denied until
        // 4·(100-e) + 200 < 400, e > 50: e = 51, so retry after 1.
        assert_eq!(got, parse_decisions("+3 +2 +1 +0 -1 +1 +0 -1").unwrap());
    }

    #[test]
    fn sliding_counter_crosses_two_windows_when_w_is_1() {
        let got = run(Algorithm::SlidingCounter, Config::new(1, 1), "a@5 a@5");
        assert_eq!(got, parse_decisions("+0 -2").unwrap());
    }

    #[test]
    fn token_bucket_by_hand() {
        // C=2, T=10: full at first sight, one token back every 10 ns.
        let got = run(
            Algorithm::TokenBucket,
            Config::new(2, 10),
            "a@100 a@100 a@100 a@105 a@110 a@110 a@135 a@135 a@135",
        );
        // At 135 the bucket is full again (capped at 2 tokens): the 5 ns beyond
        // the cap are lost, so the last wait is a whole T.
        assert_eq!(
            got,
            parse_decisions("+1 +0 -10 -5 +0 -10 +1 +0 -10").unwrap()
        );
    }

    #[test]
    fn late_timestamps_are_placed_at_the_latest() {
        let got = run(
            Algorithm::FixedWindow,
            Config::new(1, 1000),
            "a@1500 a@2500 a@1800",
        );
        assert_eq!(got, parse_decisions("+0 +0 -500").unwrap());
    }

    #[test]
    fn invariants_name_the_violation() {
        let w = Config::new(2, 1000);
        assert!(Algorithm::FixedWindow
            .invariant(&w, &[0, 999, 1000, 1999])
            .is_ok());
        assert!(Algorithm::FixedWindow.invariant(&w, &[0, 1, 999]).is_err());
        assert!(Algorithm::SlidingLog
            .invariant(&w, &[0, 999, 1000, 1999])
            .is_ok());
        assert!(Algorithm::SlidingLog.invariant(&w, &[0, 999, 1000]).is_ok());
        let e = Algorithm::SlidingLog
            .invariant(&w, &[1, 999, 1000])
            .unwrap_err();
        assert!(e.contains("(0, 1000]"), "{e}");
        assert!(Algorithm::SlidingCounter
            .invariant(&w, &[1, 999, 1000, 1001])
            .is_ok());
        assert!(Algorithm::SlidingCounter
            .invariant(&w, &[1, 999, 1000, 1001, 1002])
            .is_err());
        let tb = Config::new(2, 10);
        assert!(Algorithm::TokenBucket
            .invariant(&tb, &[0, 0, 10, 20])
            .is_ok());
        assert!(Algorithm::TokenBucket.invariant(&tb, &[0, 0, 9]).is_err());
    }

    #[test]
    fn validation_order() {
        let v = |l, p| Algorithm::FixedWindow.validate(l, p);
        assert_eq!(v(0, Duration::ZERO), Err(ConfigError::ZeroLimit));
        assert_eq!(v(1, Duration::ZERO), Err(ConfigError::ZeroPeriod));
        assert_eq!(v(1, Duration::from_nanos(u64::MAX)), Ok(()));
        assert_eq!(
            v(1, Duration::new(18_446_744_073, 709_551_616)),
            Err(ConfigError::TooLarge)
        );
        let tb = |l, p| Algorithm::TokenBucket.validate(l, p);
        assert_eq!(tb(2, Duration::from_nanos(u64::MAX / 2)), Ok(()));
        assert_eq!(
            tb(2, Duration::from_nanos(u64::MAX / 2 + 1)),
            Err(ConfigError::TooLarge)
        );
        assert_eq!(tb(u64::MAX, Duration::from_nanos(1)), Ok(()));
    }

    /// A count agrees with its noun: a bucket of one token is "1 token".
    #[test]
    fn an_invariant_counts_in_words() {
        let config = Config::new(1, 10);
        let e = Algorithm::TokenBucket
            .invariant(&config, &[0, 0])
            .unwrap_err();
        assert!(e.contains("a bucket of 1 token refilled"), "{e}");
        let e = Algorithm::TokenBucket
            .invariant(&Config::new(2, 10), &[0, 0, 0])
            .unwrap_err();
        assert!(e.contains("a bucket of 2 tokens refilled"), "{e}");
    }
}

#[cfg(test)]
mod catalog_agrees {
    /// The catalog refuses an algorithm the harness does not have, with a
    /// sentence: its list must be the harness's.
    #[test]
    fn the_catalog_names_every_algorithm() {
        let names: Vec<&str> = super::Algorithm::ALL.iter().map(|a| a.name()).collect();
        assert_eq!(names, kata_catalog::ALGORITHMS);
    }
}
