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

/// A key as the notation writes it: bare when it is plain printable ASCII
/// without `@` or `"`; otherwise quoted, with Rust's escapes (`"a "`,
/// `"e\u{301}"`, `"\0"`), so that keys which look alike on screen read
/// differently and every key reads back as itself.
pub fn show_key(key: &str) -> String {
    let plain = |c: char| c.is_ascii_graphic() && c != '@' && c != '"' && c != '\\';
    if !key.is_empty() && key.chars().all(plain) {
        key.to_string()
    } else {
        let mut out = String::from('"');
        for c in key.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                ' ' => out.push(' '),
                c if c.is_ascii_graphic() => out.push(c),
                c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            }
        }
        out.push('"');
        out
    }
}

/// Reads one key written by [`show_key`], from the start of `text`; returns
/// the key and the rest of the text.
fn read_key(text: &str) -> Result<(String, &str), String> {
    let Some(quoted) = text.strip_prefix('"') else {
        let end = text.find('@').unwrap_or(text.len());
        return Ok((text[..end].to_string(), &text[end..]));
    };
    let mut key = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Ok((key, &quoted[i + 1..])),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('"') => key.push('"'),
                Some('\\') => key.push('\\'),
                Some('0') => key.push('\0'),
                Some('t') => key.push('\t'),
                Some('n') => key.push('\n'),
                Some('u') => {
                    let rest = &quoted[i + 2..];
                    let body = rest
                        .strip_prefix('{')
                        .and_then(|r| r.split_once('}'))
                        .map(|(hex, _)| hex)
                        .ok_or_else(|| format!("bad \\u escape in {text:?}"))?;
                    let c = u32::from_str_radix(body, 16)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("bad \\u escape in {text:?}"))?;
                    key.push(c);
                    for _ in 0..body.len() + 2 {
                        chars.next();
                    }
                }
                other => return Err(format!("unknown escape \\{other:?} in {text:?}")),
            },
            c => key.push(c),
        }
    }
    Err(format!("{text:?}: the quoted key has no closing quote"))
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
    /// `L=2 W=1_000ns: a@0 a@1 b@5*300`: a run of identical requests is
    /// written once, with `*n`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:", self.config)?;
        let mut i = 0;
        while i < self.requests.len() {
            let r = &self.requests[i];
            let run = self.requests[i..].iter().take_while(|x| *x == r).count();
            if run >= 3 {
                write!(f, " {r:?}*{run}")?;
                i += run;
            } else {
                write!(f, " {r:?}")?;
                i += 1;
            }
        }
        Ok(())
    }
}

impl Timeline {
    /// Reads a whole timeline as it is printed: `L=2 W=1_000ns: a@0 a@1`.
    pub fn read(text: &str) -> Result<Timeline, String> {
        let (config, requests) = text
            .split_once(':')
            .ok_or_else(|| format!("{text:?} has no `:` after its configuration"))?;
        let number = |s: &str, what: &str| {
            s.replace('_', "")
                .parse::<u64>()
                .map_err(|_| format!("{what} {s:?} is not a whole number"))
        };
        let mut parts = config.split_whitespace();
        let (limit, period) = match (parts.next(), parts.next(), parts.next()) {
            (Some(l), Some(w), None) => (
                l.strip_prefix("L=")
                    .ok_or("the configuration starts with L=")?,
                w.strip_prefix("W=")
                    .and_then(|w| w.strip_suffix("ns"))
                    .ok_or("the period is written W=<nanoseconds>ns")?,
            ),
            _ => return Err(format!("{config:?} is not `L=<limit> W=<period>ns`")),
        };
        let (limit, period) = (number(limit, "the limit")?, number(period, "the period")?);
        if limit == 0 || period == 0 {
            return Err("the limit and the period are at least 1".into());
        }
        Timeline::parse(Config::new(limit, period), requests)
    }

    /// Reads requests in the notation `a@0 a@1 ""@999 "a "@1000`: one
    /// `key@nanos` per request, separated by spaces, keys quoted as
    /// [`show_key`] writes them.
    pub fn parse(config: Config, requests: &str) -> Result<Timeline, String> {
        let mut rest = requests.trim_start();
        let mut list = Vec::new();
        while !rest.is_empty() {
            let (key, after) = read_key(rest)?;
            let item = &rest[..rest.len() - after.len()];
            let after = after.strip_prefix('@').ok_or_else(|| {
                format!(
                    "{:?} is not key@nanos",
                    rest.split_whitespace().next().unwrap_or(item)
                )
            })?;
            let end = after.find(char::is_whitespace).unwrap_or(after.len());
            let written = &after[..end];
            let (time, times) = written.split_once('*').unwrap_or((written, "1"));
            let nanos = time.replace('_', "").parse::<u64>().map_err(|e| {
                format!("{item}@{written}: the time is not a u64 of nanoseconds ({e})")
            })?;
            let times = times
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=1_000_000).contains(n))
                .ok_or_else(|| {
                    format!("{item}@{written}: `*n` repeats a request 1 to 1_000_000 times")
                })?;
            list.extend(std::iter::repeat_n(Request::new(&key, nanos), times));
            rest = after[end..].trim_start();
        }
        Ok(Timeline {
            config,
            requests: list,
        })
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

    /// The same requests on one clock: each at the latest instant of any
    /// request up to and including it, so that no instant goes back.
    pub fn on_one_clock(&self) -> Timeline {
        let mut latest = 0;
        Timeline {
            config: self.config,
            requests: self
                .requests
                .iter()
                .map(|r| {
                    latest = latest.max(r.now.as_nanos());
                    Request::new(&r.key, latest)
                })
                .collect(),
        }
    }

    /// The timeline as failures print it, or, past 40 requests, its first
    /// and last twelve and how many lie between.
    pub fn brief(&self) -> String {
        if self.requests.len() <= 40 {
            return format!("{self:?}");
        }
        let part = |requests: &[Request]| {
            format!(
                "{:?}",
                Timeline {
                    config: self.config,
                    requests: requests.to_vec(),
                }
            )
        };
        let n = self.requests.len();
        let head = part(&self.requests[..12]);
        let tail = part(&self.requests[n - 12..]);
        let tail = tail.split_once(':').map(|(_, t)| t).unwrap_or(&tail);
        format!(
            "{head} … {} more …{tail}",
            crate::text::count(n - 24, "request")
        )
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

    /// A standard timeline by name; a whole timeline as failures print it
    /// (`L=1 W=2ns: b@3 b@3`); or requests alone (`a@0 a@0 a@1`), with limit
    /// 3 and period 1_000 ns. Otherwise a sentence listing the names.
    pub fn resolve(which: &str) -> Result<Timeline, String> {
        let which = which.trim();
        match Standard::named(which) {
            Some(s) => Ok(s.timeline()),
            None if which.starts_with("L=") => {
                Timeline::read(which).map_err(|e| format!("that timeline does not parse: {e}"))
            }
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
        name: "first_look",
        about: "what `compare` shows first: a key that starts late in a window, a burst to the limit and past it, \
                the window's end, a second key, and the next windows; windows that start at the first request, an \
                end counted inside its window, a retry_after of a whole window and keys that share state all \
                answer differently here",
        limit: 3,
        period: 1_000,
        requests: "a@900 a@950 a@999 a@999 b@999 a@1000 a@1001 a@1001 a@1002 b@1500 a@1999 a@2000 a@2950",
    },
    Standard {
        name: "boundary_burst",
        about: "a burst at the end of one window and the start of the next: up to 2·L within one window's length for a fixed window",
        limit: 3,
        period: 1_000,
        requests: "a@990 a@995 a@999 a@999 a@1000 a@1001 a@1002 a@1003 a@1999",
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
        assert!(Timeline::parse(Config::new(1, 1), "\"a@1").is_err());
        // Keys that look alike read differently, and read back as themselves.
        for key in [
            "a ", " a", "A", "e\u{301}", "\u{e9}", "a\0", "\"q\"", "x\\y", "\u{ff41}", "a@b", "\t",
        ] {
            let t = Timeline {
                config: Config::new(1, 1),
                requests: vec![Request::new(key, 7), Request::new("b", 8)],
            };
            let shown = format!("{t:?}");
            let back =
                Timeline::parse(Config::new(1, 1), shown.split_once(": ").unwrap().1).unwrap();
            assert_eq!(back, t, "{shown}");
            assert!(shown.is_ascii(), "{shown}");
        }
        assert_eq!(show_key("e\u{301}"), "\"e\\u{301}\"");
        let t = Timeline::parse(Config::new(2, 1000), "a@0*4 b@1 b@1 \"c d\"@2*3").unwrap();
        assert_eq!(t.requests.len(), 9);
        assert_eq!(format!("{t:?}"), "L=2 W=1_000ns: a@0*4 b@1 b@1 \"c d\"@2*3");
        assert!(Timeline::parse(Config::new(1, 1), "a@0*0").is_err());
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
