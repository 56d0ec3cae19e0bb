//! Executable models of each lesson's algorithm, written straight from the
//! contract (SPEC.md), not from the reference solutions.
//!
//! A model is meant to be obviously right rather than fast: it keeps every
//! allowed request, recounts on every call in 128-bit arithmetic, and finds
//! `retry_after` by trying the instants at which its rule can change its mind
//! instead of by a formula. Property tests compare learner and reference
//! against it, so a bug shared by both is still caught.

use std::collections::HashMap;
use std::time::Duration;

use crate::decision::{ConfigError, Decision};
use crate::timeline::Config;

/// The algorithm a lesson teaches.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Algorithm {
    /// Lessons 01 and 02: windows `[k·W, (k+1)·W)` aligned to the clock's origin.
    FixedWindow,
    /// Lesson 03: at most L allowed in every half-open interval `(now − W, now]`.
    SlidingLog,
}

impl Algorithm {
    /// What the period is called in this algorithm's texts.
    pub fn period_name(self) -> &'static str {
        match self {
            Algorithm::FixedWindow | Algorithm::SlidingLog => "window",
        }
    }

    /// The constructor's checks, in the contract's order.
    pub fn validate(self, limit: u64, period: Duration) -> Result<(), ConfigError> {
        if limit == 0 {
            Err(ConfigError::ZeroLimit)
        } else if period.is_zero() {
            Err(ConfigError::ZeroPeriod)
        } else if period.as_nanos() > u128::from(u64::MAX) {
            Err(ConfigError::TooLarge)
        } else {
            Ok(())
        }
    }

    /// How far past `now` the arithmetic must fit for a decision to be checked
    /// exactly: `2·W` for the windowed lessons.
    pub fn horizon(self, config: &Config) -> u128 {
        2 * config.period.as_nanos()
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
        let (limit, w) = (config.limit, config.period.as_nanos());
        match self {
            Algorithm::FixedWindow => {
                let mut start = 0;
                while start < allowed.len() {
                    let k = u128::from(allowed[start]) / w;
                    let end = start
                        + allowed[start..]
                            .iter()
                            .take_while(|t| u128::from(**t) / w == k)
                            .count();
                    if (end - start) as u64 > limit {
                        return Err(format!(
                            "{} requests were allowed in the window [{}, {}) but the limit is {limit}",
                            end - start,
                            k * w,
                            (k + 1) * w
                        ));
                    }
                    start = end;
                }
                Ok(())
            }
            Algorithm::SlidingLog => {
                // The busiest interval of length W ends at an allowed request.
                let mut first = 0;
                for (last, t) in allowed.iter().enumerate() {
                    while u128::from(allowed[first]) + w <= u128::from(*t) {
                        first += 1;
                    }
                    if (last + 1 - first) as u64 > limit {
                        return Err(format!(
                            "{} requests were allowed in the interval ({}, {}], which is only W = {w} ns \
                             long, but the limit is {limit}",
                            last + 1 - first,
                            i128::from(*t) - w as i128,
                            t
                        ));
                    }
                }
                Ok(())
            }
        }
    }
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
    /// Every allowed request, at the timestamp the contract places it.
    allowed: Vec<u128>,
}

impl Model {
    pub fn decide(&mut self, key: &str, now: u64) -> Decision {
        let (algorithm, limit, w) = (self.algorithm, self.limit, self.period);
        let log = self.keys.entry(key.to_string()).or_default();
        log.latest = log.latest.max(u128::from(now));
        let now = log.latest;
        let counted = |at: u128| count(algorithm, w, &log.allowed, at);
        let used = counted(now);
        if used < limit {
            log.allowed.push(now);
            return Decision::Allowed {
                remaining: (limit - used - 1) as u64,
            };
        }
        // The rule's answer only changes where a window starts or an allowed
        // request leaves the interval; try those instants, earliest first.
        let mut instants: Vec<u128> = match algorithm {
            Algorithm::FixedWindow => vec![(now / w + 1) * w],
            Algorithm::SlidingLog => log.allowed.iter().map(|t| t + w).collect(),
        };
        instants.retain(|t| *t > now);
        instants.sort_unstable();
        let wait = instants
            .into_iter()
            .find(|t| counted(*t) < limit)
            .map(|t| t - now)
            .expect("the model found no instant at which the request would be allowed");
        Decision::Denied {
            retry_after: Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)),
        }
    }
}

/// How many allowed requests count against a request at `at`.
fn count(algorithm: Algorithm, w: u128, allowed: &[u128], at: u128) -> u128 {
    let counts = |t: &&u128| match algorithm {
        Algorithm::FixedWindow => **t / w == at / w && **t <= at,
        Algorithm::SlidingLog => **t + w > at && **t <= at,
    };
    allowed.iter().filter(counts).count() as u128
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
    }
}
