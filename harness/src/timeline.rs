//! A timeline is what every check replays: a configuration and a list of
//! requests, each a key and a timestamp.
//!
//! Timelines have a one-line notation, used by the example tables, by shrunk
//! property-test counterexamples and in failure messages:
//! `L=2 W=1_000ns: a@0 a@1 ""@999 a@1000`, where `""` is the empty key.

use std::fmt;
use std::time::Duration;

use crate::decision::Decision;
use crate::time::{group_digits, Timestamp};

/// A limiter's configuration: the limit (or capacity) and the period (the
/// window, or the refill interval).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub limit: u64,
    pub period: Duration,
}

impl Config {
    pub fn new(limit: u64, period_nanos: u64) -> Self {
        Config {
            limit,
            period: Duration::from_nanos(period_nanos),
        }
    }

    /// The period in nanoseconds (configurations built by the harness always fit).
    pub fn period_nanos(&self) -> u64 {
        u64::try_from(self.period.as_nanos()).unwrap_or(u64::MAX)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L={} W={}ns",
            self.limit,
            group_digits(self.period.as_nanos())
        )
    }
}

/// One call: `check(key, now)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Request {
    pub key: String,
    pub now: Timestamp,
}

impl Request {
    pub fn new(key: &str, nanos: u64) -> Self {
        Request {
            key: key.to_string(),
            now: Timestamp::from_nanos(nanos),
        }
    }
}

/// Quotes a key when it would not read back as itself.
pub fn show_key(key: &str) -> String {
    if key.is_empty()
        || key
            .chars()
            .any(|c| c.is_whitespace() || c == '@' || c == '"')
    {
        format!("{key:?}")
    } else {
        key.to_string()
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", show_key(&self.key), self.now.as_nanos())
    }
}

#[derive(Clone, PartialEq, Eq)]
pub struct Timeline {
    pub config: Config,
    pub requests: Vec<Request>,
}

impl fmt::Debug for Timeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:", self.config)?;
        for r in &self.requests {
            write!(f, " {r:?}")?;
        }
        Ok(())
    }
}

impl Timeline {
    /// Reads requests in the notation `a@0 a@1 ""@999`: one `key@nanos` per
    /// request, separated by spaces.
    pub fn parse(config: Config, requests: &str) -> Result<Timeline, String> {
        let requests = requests
            .split_whitespace()
            .map(|item| {
                let (key, nanos) = item
                    .rsplit_once('@')
                    .ok_or_else(|| format!("{item:?} is not key@nanos"))?;
                let key = if key == "\"\"" { "" } else { key };
                let nanos = nanos
                    .replace('_', "")
                    .parse::<u64>()
                    .map_err(|e| format!("{item:?}: the time is not a u64 of nanoseconds ({e})"))?;
                Ok(Request::new(key, nanos))
            })
            .collect::<Result<_, String>>()?;
        Ok(Timeline { config, requests })
    }

    /// For each request, the latest timestamp its key had been called with up to
    /// and including that call. The contract places every request there, so a
    /// late-delivered timestamp cannot reopen a window that has moved on.
    pub fn placed(&self) -> Vec<u64> {
        let mut latest = std::collections::HashMap::<&str, u64>::new();
        self.requests
            .iter()
            .map(|r| {
                let t = latest.entry(&r.key).or_insert(0);
                *t = (*t).max(r.now.as_nanos());
                *t
            })
            .collect()
    }

    /// True when no key's timestamps ever go backwards.
    pub fn in_order(&self) -> bool {
        self.placed()
            .iter()
            .zip(&self.requests)
            .all(|(p, r)| *p == r.now.as_nanos())
    }

    /// The first `n` requests.
    pub fn prefix(&self, n: usize) -> Timeline {
        Timeline {
            config: self.config,
            requests: self.requests[..n].to_vec(),
        }
    }
}

/// A timeline every lesson draws: snapshots and `cargo run -- compare` use
/// these by name, so lessons can be compared drawing by drawing.
#[derive(Clone, Copy, Debug)]
pub struct Standard {
    pub name: &'static str,
    pub about: &'static str,
    pub limit: u64,
    pub period: u64,
    pub requests: &'static str,
}

impl Standard {
    pub fn timeline(&self) -> Timeline {
        Timeline::parse(Config::new(self.limit, self.period), self.requests)
            .expect("the standard timelines parse")
    }

    pub fn named(name: &str) -> Option<&'static Standard> {
        STANDARD.iter().find(|s| s.name == name)
    }

    /// A standard timeline by name, or requests in the timeline notation
    /// (`a@0 a@0 a@1`, with limit 3 and period 1_000 ns); otherwise a
    /// sentence listing the names.
    pub fn resolve(which: &str) -> Result<Timeline, String> {
        match Standard::named(which) {
            Some(s) => Ok(s.timeline()),
            None if which.contains('@') => Timeline::parse(Config::new(3, 1_000), which)
                .map_err(|e| format!("that timeline does not parse: {e}")),
            None => {
                let names: Vec<&str> = STANDARD.iter().map(|s| s.name).collect();
                Err(format!(
                    "no timeline is named {which:?}; the named ones are {}, or give requests such as \"a@0 a@0 a@1\"",
                    names.join(", ")
                ))
            }
        }
    }
}

pub const STANDARD: &[Standard] = &[
    Standard {
        name: "boundary_burst",
        about: "a burst at the end of one window and the start of the next: up to 2·L within one window's length for a fixed window",
        limit: 3,
        period: 1_000,
        requests: "a@0 a@990 a@995 a@999 a@999 a@1000 a@1001 a@1002 a@1003 a@1999",
    },
    Standard {
        name: "burst_then_steady",
        about: "a burst at one instant, then one request per period",
        limit: 3,
        period: 1_000,
        requests: "a@0 a@0 a@0 a@0 a@1000 a@2000 a@3000 a@3500 a@4000",
    },
    Standard {
        name: "two_keys",
        about: "two keys interleaved: neither changes the other's answers",
        limit: 2,
        period: 1_000,
        requests: "a@0 b@100 a@200 b@300 a@400 b@500 a@600 a@1100 b@1200",
    },
    Standard {
        name: "long_idle_gap",
        about: "a long idle gap: everything before it is forgotten",
        limit: 2,
        period: 1_000,
        requests: "a@0 a@0 a@10 a@5000 a@5000 a@5001",
    },
    Standard {
        name: "exact_edges",
        about: "requests exactly on, and one nanosecond either side of, period edges",
        limit: 1,
        period: 1_000,
        requests: "a@999 a@1000 a@1999 a@2000 a@2001",
    },
];

/// Reads decisions in the notation `+1 +0 -999`: `+r` is allowed with `r`
/// remaining, `-d` is denied with a retry after `d` nanoseconds.
pub fn parse_decisions(text: &str) -> Result<Vec<Decision>, String> {
    text.split_whitespace()
        .map(|item| {
            let number = |s: &str| {
                s.replace('_', "")
                    .parse::<u64>()
                    .map_err(|e| format!("{item:?}: {e}"))
            };
            if let Some(r) = item.strip_prefix('+') {
                Ok(Decision::Allowed {
                    remaining: number(r)?,
                })
            } else if let Some(d) = item.strip_prefix('-') {
                Ok(Decision::Denied {
                    retry_after: Duration::from_nanos(number(d)?),
                })
            } else {
                Err(format!(
                    "{item:?} is neither +remaining nor -retry_after_nanos"
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_round_trips() {
        let t = Timeline::parse(Config::new(2, 1000), "a@0 \"\"@1_000 b@5 a@3").unwrap();
        assert_eq!(format!("{t:?}"), "L=2 W=1_000ns: a@0 \"\"@1000 b@5 a@3");
        assert_eq!(t.placed(), vec![0, 1000, 5, 3]);
        assert!(t.in_order());
        let t = Timeline::parse(Config::new(2, 1000), "a@9 a@3 a@12").unwrap();
        assert_eq!(t.placed(), vec![9, 9, 12]);
        assert!(!t.in_order());
        assert!(Timeline::parse(Config::new(1, 1), "a").is_err());
        assert!(Timeline::parse(Config::new(1, 1), "a@x").is_err());
        assert_eq!(Standard::resolve("two_keys").unwrap().requests.len(), 9);
        assert_eq!(
            Standard::resolve("a@0 b@1").unwrap().config,
            Config::new(3, 1_000)
        );
        assert!(Standard::resolve("a@x")
            .unwrap_err()
            .contains("does not parse"));
        assert!(Standard::resolve("nosuch")
            .unwrap_err()
            .contains("boundary_burst"));
    }

    #[test]
    fn decisions_parse() {
        let d = parse_decisions("+1 -1_000").unwrap();
        assert_eq!(d[0], Decision::Allowed { remaining: 1 });
        assert_eq!(
            d[1],
            Decision::Denied {
                retry_after: Duration::from_nanos(1000)
            }
        );
        assert!(parse_decisions("1").is_err());
    }
}
