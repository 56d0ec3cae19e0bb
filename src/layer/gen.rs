//! Generated HTTP timelines: clients by API key, by peer address, behind
//! trusted proxies with forged and malformed `X-Forwarded-For` entries, over
//! IPv4, IPv6 and IPv4-mapped IPv6; instants at the edges of whole seconds
//! (where `Retry-After` rounds) and of the window; requests through the same
//! service, a clone and a new layer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use proptest::prelude::*;
use proptest::strategy::{NewTree, ValueTree};
use proptest::test_runner::TestRunner;

use super::exchange::{Call, HttpTimeline, Setup, Via};
use super::Policy;
use crate::models::Algorithm;

/// Policy names, some with the characters a structured-field string must
/// escape.
const NAMES: &[&str] = &[
    "api",
    "per-minute",
    "say \"hi\"",
    "back\\slash",
    "x",
    "user's \"quota\", ;q=9",
    "a policy name longer than any buffer a layer might keep on the stack for its headers, \
     which the contract does not bound: only printable ASCII is required of it, nothing more; \
     so it goes on, past two hundred and fifty-six bytes, past three hundred even, to be sure \
     that no fixed buffer of a round size holds it whole",
];

/// The trusted proxies of a setup.
const TRUSTED: &[&[&str]] = &[
    &[],
    &["10.0.0.0/8"],
    &["10.0.0.0/8", "2001:db8:ffff::/48"],
    &["10.0.0.1", "10.0.0.2"],
    // IPv6 proxies in ranges narrower than a /64: a client in the same /64
    // is not one of them.
    &["::1", "2001:db8:ffff::/120", "10.0.0.0/8"],
];

/// Clients' own addresses: two in one IPv6 /64, one in another, one IPv4
/// with its IPv4-mapped twin and its IPv4-compatible look-alike (an IPv6
/// address, not IPv4), IPv6 loopback, and an address inside the trusted
/// range.
const CLIENTS: &[&str] = &[
    "203.0.113.7",
    "::ffff:203.0.113.7",
    "::203.0.113.7",
    "::1",
    "198.51.100.1",
    "2001:db8:1:2::10",
    "2001:db8:1:2:ffff:ffff:ffff:ffff",
    "2001:db8:1:3::1",
    "10.9.9.9",
    "2001:db8:ffff::abcd",
    // NAT64: an IPv6 address, not IPv4.
    "64:ff9b::cb00:7107",
];

/// Proxies, trusted in some setups: the last hop is the peer.
const PROXIES: &[&str] = &[
    "10.0.0.1",
    "10.0.0.2",
    "2001:db8:ffff::1",
    "::ffff:10.0.0.1",
];

/// Entries that do not parse as an address.
const MALFORMED: &[&str] = &[
    "\"203.0.113.7\"",
    "1.2.3.4%x",
    "fe80::1%eth0",
    "unknown",
    "203.0.113.7:443",
    "",
    "[2001:db8::1]",
    "_hidden",
    "1.2.3",
];

fn setup() -> impl Strategy<Value = Setup> {
    (
        prop::sample::select(NAMES),
        // Quotas where `remaining` has up to twenty digits.
        prop_oneof![8 => 1u64..=3, 2 => Just(12u64), 2 => Just(1_000u64), 1 => Just(u64::MAX)],
        // Windows where `Retry-After` has many digits, beyond what an f64
        // counts in whole nanoseconds (2^53 ns, about 104 days), and the
        // longest whole number of seconds a u64 counts in nanoseconds.
        prop_oneof![
            8 => 1u64..=3,
            1 => Just(60u64),
            1 => Just(86_400u64),
            1 => Just(31_536_000u64),
            1 => Just(18_446_744_073u64),
            1 => Just(1u64 << 40),
            // Past what an f64 counts in whole seconds (2^53).
            1 => Just(u64::MAX),
        ],
        prop::sample::select(&[None, Some("x-api-key"), Some("x-client-token")][..]),
        prop::sample::select(TRUSTED),
        // The limiter behind the layer: the lesson's own, or one whose waits
        // do not end on window boundaries.
        prop::sample::select(
            &[
                None,
                None,
                Some(Algorithm::TokenBucket),
                Some(Algorithm::SlidingLog),
                // Its waits can be longer than the window.
                Some(Algorithm::SlidingCounter),
            ][..],
        ),
    )
        .prop_map(|(name, quota, window, api, trusted, rule)| Setup {
            policy: Policy::new(name, quota, Duration::from_secs(window)),
            api_key_header: api.map(str::to_string),
            rule,
            trusted: trusted
                .iter()
                .map(|c| c.parse().expect("a range"))
                .collect(),
        })
}

/// Plain IPv4 addresses no setup trusts: what a forged entry shrinks to.
const PLAIN: &[&str] = &["192.0.2.1", "192.0.2.2", "198.51.100.7"];

/// An address a client may forge: anything at all. A failure shrinks it to
/// a plain IPv4 address first; a random address is not shrunk bit by bit
/// (that takes dozens of runs and ends on `0.0.0.0`).
fn forged() -> impl Strategy<Value = String> {
    simplest_first(
        1,
        prop::sample::select(PLAIN).prop_map(str::to_string),
        4,
        prop_oneof![
            prop::sample::select(CLIENTS).prop_map(str::to_string),
            any::<u32>()
                .no_shrink()
                .prop_map(|n| Ipv4Addr::from(n).to_string()),
            any::<u128>()
                .no_shrink()
                .prop_map(|n| Ipv6Addr::from(n).to_string()),
            prop::sample::select(MALFORMED).prop_map(str::to_string),
        ],
    )
}

/// `X-Forwarded-For` as a chain of proxies writes it: what the client sent
/// (forged entries), the client's address, the proxies before the last,
/// sometimes a malformed entry, split over one or two lines, with spaces or
/// tabs around the commas; now and then a line that is not text (with
/// addresses around the bytes that make it so), at any position.
///
/// Each odd part is a choice of its own whose plain form comes first: a
/// failure shrinks to a few entries on one line, `, ` between them, before
/// anything else is tried, and keeps a long chain, a malformed entry, a tab
/// or a line that is not text only where the failure needs it.
fn forwarded() -> impl Strategy<Value = Vec<Vec<u8>>> {
    (
        // What the client wrote: a few entries, or more than a layer that
        // reads only the first sixteen would see past.
        simplest_first(
            9,
            prop::collection::vec(forged(), 0..3),
            1,
            prop::collection::vec(forged(), 16..24),
        ),
        prop::sample::select(CLIENTS),
        // The proxies before the last: a few, or a chain longer than a
        // layer that reads only sixteen entries would walk.
        simplest_first(
            9,
            prop::collection::vec(prop::sample::select(PROXIES), 0..3),
            1,
            prop::collection::vec(Just("10.0.0.2"), 17..20),
        ),
        simplest_first(
            85,
            Just(None),
            15,
            (prop::sample::select(MALFORMED), 0usize..4).prop_map(Some),
        ),
        0usize..4,
        simplest_first(1, Just(", "), 2, prop::sample::select(&[",", " ,\t"][..])),
        simplest_first(
            92,
            Just(None),
            8,
            (
                prop::sample::select(CLIENTS),
                prop::sample::select(PROXIES),
                0usize..3,
            )
                .prop_map(Some),
        ),
        prop::bool::weighted(0.06),
    )
        .prop_map(
            |(forged, client, proxies, malformed, split, comma, binary, empty_line)| {
                let mut entries: Vec<String> = forged;
                entries.push(client.to_string());
                entries.extend(proxies.iter().map(|p| p.to_string()));
                if let Some((bad, at)) = malformed {
                    entries.insert(at.min(entries.len()), bad.to_string());
                }
                let split = split.min(entries.len());
                let mut lines: Vec<Vec<u8>> = [&entries[..split], &entries[split..]]
                    .iter()
                    .filter(|part| !part.is_empty())
                    .map(|part| part.join(comma).into_bytes())
                    .collect();
                if let Some((left, right, at)) = binary {
                    let mut line = format!("{left}, ").into_bytes();
                    // Bytes that are not ASCII text: not UTF-8 at all, or
                    // UTF-8 that is not ASCII.
                    line.extend_from_slice(if at % 2 == 0 {
                        &[0xff, 0xfe]
                    } else {
                        "é".as_bytes()
                    });
                    line.extend_from_slice(format!(", {right}").as_bytes());
                    lines.insert(at.min(lines.len()), line);
                }
                if empty_line {
                    // A line with nothing in it: one entry that is not an
                    // address.
                    lines.insert(split.min(lines.len()), Vec::new());
                }
                lines
            },
        )
}

/// API key values that are not visible ASCII in other ways: a byte that is
/// not UTF-8, UTF-8 that is not ASCII, and one value with a comma in it
/// (which is one key: it is visible ASCII).
const ODD_KEYS: &[&[u8]] = &[&[b'k', 0xe9], "ké".as_bytes(), b"k1,k2"];

/// Two API key lines, valid or not: never an API key.
const TWO_LINES: &[(&[u8], &[u8])] = &[(b"k1", b"k2"), (b"k1", b""), (b"k 1", b"k1")];

/// API key header lines: none, one valid key, or one that is not valid
/// (a space, too long, not ASCII, empty), or two lines.
fn api_keys() -> impl Strategy<Value = Vec<Vec<u8>>> {
    simplest_first(
        4,
        Just(vec![]),
        7,
        prop_oneof![
            3 => prop::sample::select(&["k1", "k2", "K1", "a-very_long.key~!"][..]).prop_map(|k| vec![k.as_bytes().to_vec()]),
            1 => prop::sample::select(&["k 1", "", " k1", "k1\t", "k1 "][..])
                .prop_map(|k| vec![k.as_bytes().to_vec()]),
            1 => (127usize..=129).prop_map(|n| vec![vec![b'k'; n]]),
            1 => prop::sample::select(ODD_KEYS).prop_map(|k| vec![k.to_vec()]),
            1 => prop::sample::select(TWO_LINES).prop_map(|(a, b)| vec![a.to_vec(), b.to_vec()]),
        ],
    )
}

/// Headers that name a client in other ways, which the contract never
/// reads: a layer that believes one lets the client choose its key.
fn other_headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let named = (
        prop::sample::select(
            &[
                "x-real-ip",
                "x-client-ip",
                "true-client-ip",
                "cf-connecting-ip",
                "forwarded",
            ][..],
        ),
        any::<u32>(),
    )
        .prop_map(|(name, n)| {
            let ip = Ipv4Addr::from(n);
            let value = if name == "forwarded" {
                format!("for={ip}")
            } else {
                ip.to_string()
            };
            (name.to_string(), value)
        });
    prop::collection::vec(named, 0..2)
}

fn call() -> impl Strategy<Value = (u64, Call)> {
    let peer = prop_oneof![
        6 => prop::sample::select(CLIENTS).prop_map(|c| Some(c.parse::<IpAddr>().expect("an address"))),
        5 => prop::sample::select(PROXIES).prop_map(|c| Some(c.parse::<IpAddr>().expect("an address"))),
        1 => Just(None),
    ];
    (
        step(),
        peer,
        simplest_first(4, Just(vec![]), 6, forwarded()),
        api_keys(),
        simplest_first(8, Just(vec![]), 2, other_headers()),
        prop::sample::select(&[Via::Same, Via::Clone, Via::Clone, Via::Layer][..]),
        // Now and then a request of another method, and an inner service
        // that answers 503 with a `Retry-After` of its own.
        prop::sample::select(&["GET", "GET", "GET", "GET", "GET", "POST", "OPTIONS", "HEAD"][..]),
        // Every path counts, health checks included.
        prop::sample::select(
            &[
                "/",
                "/",
                "/",
                "/",
                "/healthz",
                "/health",
                "/ready",
                "/api/items?page=2",
            ][..],
        ),
        prop::sample::select(
            &[
                None,
                None,
                None,
                None,
                None,
                None,
                Some("unavailable"),
                Some("busy"),
            ][..],
        ),
    )
        .prop_map(
            |(step, peer, forwarded, api_keys, other, via, method, path, inner)| {
                let mut other = other;
                if let Some(answer) = inner {
                    other.push((super::model::INNER_ANSWER.to_string(), answer.to_string()));
                }
                (
                    step,
                    Call {
                        at: 0,
                        peer,
                        forwarded,
                        api_keys,
                        other,
                        method: method.to_string(),
                        path: path.to_string(),
                        via,
                    },
                )
            },
        )
}

/// Time between two requests: none, a nanosecond, around a second (where
/// `Retry-After` rounds), around a window.
fn step() -> impl Strategy<Value = u64> {
    const S: u64 = 1_000_000_000;
    simplest_first(
        5,
        Just(0),
        7,
        prop::sample::select(&[1, S / 2, S - 1, S, S + 1, 2 * S - 1, 3 * S][..]),
    )
}

/// A setup and up to `max` requests.
pub fn timelines(max: usize) -> impl Strategy<Value = HttpTimeline> {
    (setup(), prop::collection::vec(call(), 1..=max)).prop_map(|(setup, calls)| {
        let mut at = 0u64;
        let calls = calls
            .into_iter()
            .map(|(step, mut c)| {
                at += step;
                c.at = at;
                c
            })
            .collect();
        HttpTimeline { setup, calls }
    })
}

/// A timeline and, for each request, what its client writes in front of
/// its `X-Forwarded-For`: a line of its own before the others, or entries
/// before the first line's. (Drawn beside the timeline rather than from
/// it, so that a failure shrinks both at once.)
pub fn with_forged_prefixes(
    max: usize,
) -> impl Strategy<Value = (HttpTimeline, Vec<(bool, Vec<String>)>)> {
    let prefix = (
        any::<bool>(),
        simplest_first(
            9,
            prop::collection::vec(forged(), 1..3),
            1,
            prop::collection::vec(forged(), 16..20),
        ),
    );
    (timelines(max), prop::collection::vec(prefix, max)).prop_map(|(t, mut prefixes)| {
        prefixes.truncate(t.calls.len());
        (t, prefixes)
    })
}

/// The call with `forged` written in front of its `X-Forwarded-For`.
pub fn forge(call: &Call, own_line: bool, forged: &[String]) -> Call {
    let mut c = call.clone();
    let prefix = forged.join(", ");
    match c.forwarded.first_mut() {
        Some(first) if !own_line => {
            let mut line = format!("{prefix}, ").into_bytes();
            line.extend_from_slice(first);
            *first = line;
        }
        _ => c.forwarded.insert(0, prefix.into_bytes()),
    }
    c
}

/// `first` (weight `a`) or `rest` (weight `b`), which shrinks to a value
/// of `first` before anything else: a failure drawn from `rest` is tried
/// at once in `first`'s form (no line that is not text, no long chain, no
/// odd separator), and only where that passes is `rest` shrunk on its own.
/// (`prop_oneof!` shrinks its current alternative all the way first, one
/// run a step, and gives up on earlier ones after one passes.)
fn simplest_first<F, R>(a: u32, first: F, b: u32, rest: R) -> SimplestFirst<F, R>
where
    F: Strategy,
    R: Strategy<Value = F::Value>,
{
    SimplestFirst { a, first, b, rest }
}

#[derive(Debug)]
struct SimplestFirst<F, R> {
    a: u32,
    first: F,
    b: u32,
    rest: R,
}

impl<F, R> Strategy for SimplestFirst<F, R>
where
    F: Strategy,
    R: Strategy<Value = F::Value>,
{
    type Tree = SimplestFirstTree<F::Tree, R::Tree>;
    type Value = F::Value;

    fn new_tree(&self, runner: &mut TestRunner) -> NewTree<Self> {
        let first = self.first.new_tree(runner)?;
        let pick = (0..self.a + self.b).new_tree(runner)?.current();
        let rest = if pick < self.a {
            None
        } else {
            Some(self.rest.new_tree(runner)?)
        };
        Ok(SimplestFirstTree {
            first,
            on_first: rest.is_none(),
            rest,
            tried: false,
            switched: false,
        })
    }
}

struct SimplestFirstTree<F, R> {
    first: F,
    rest: Option<R>,
    /// Whether the value is `first`'s.
    on_first: bool,
    /// Whether `first` was tried in place of `rest`.
    tried: bool,
    /// Whether the last simplification was that try.
    switched: bool,
}

impl<F, R> ValueTree for SimplestFirstTree<F, R>
where
    F: ValueTree,
    R: ValueTree<Value = F::Value>,
{
    type Value = F::Value;

    fn current(&self) -> F::Value {
        match &self.rest {
            Some(rest) if !self.on_first => rest.current(),
            _ => self.first.current(),
        }
    }

    fn simplify(&mut self) -> bool {
        self.switched = false;
        match &mut self.rest {
            Some(_) if !self.on_first && !self.tried => {
                (self.tried, self.on_first, self.switched) = (true, true, true);
                true
            }
            Some(rest) if !self.on_first => rest.simplify(),
            _ => self.first.simplify(),
        }
    }

    fn complicate(&mut self) -> bool {
        if std::mem::take(&mut self.switched) {
            // `first`'s form passes: back to the failing value, shrunk as
            // itself from now on.
            self.on_first = false;
            return true;
        }
        match &mut self.rest {
            Some(rest) if !self.on_first => rest.complicate(),
            _ => self.first.complicate(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

    /// Shrinking to plain forms first draws the odd ones as often as ever:
    /// each shows up among a few hundred timelines.
    #[test]
    fn every_odd_form_is_drawn() {
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::deterministic_rng(RngAlgorithm::ChaCha),
        );
        let strategy = with_forged_prefixes(12);
        let mut seen: Vec<&str> = Vec::new();
        for _ in 0..400 {
            let (t, prefixes) = strategy.new_tree(&mut runner).unwrap().current();
            let calls: Vec<Call> = t
                .calls
                .iter()
                .zip(&prefixes)
                .map(|(c, (own, f))| forge(c, *own, f))
                .collect();
            for c in &calls {
                let lines = &c.forwarded;
                let text = String::from_utf8_lossy(&lines.concat()).into_owned();
                let entries: usize = lines.iter().map(|l| l.split(|b| *b == b',').count()).sum();
                let checks = [
                    ("a tab", text.contains('\t')),
                    ("a zone id", text.contains('%')),
                    (
                        "a line that is not text",
                        lines.iter().any(|l| l.iter().any(|b| *b >= 0x80)),
                    ),
                    ("an empty line", lines.iter().any(Vec::is_empty)),
                    ("two lines", lines.len() >= 2),
                    ("more than sixteen entries", entries > 16),
                    (
                        "a malformed entry",
                        MALFORMED.iter().any(|m| !m.is_empty() && text.contains(m)),
                    ),
                    ("an IPv6 address", text.contains("::")),
                    ("a long API key", c.api_keys.iter().any(|k| k.len() > 126)),
                    ("two API key lines", c.api_keys.len() == 2),
                    (
                        "a header the contract never reads",
                        c.other
                            .iter()
                            .any(|(n, _)| n.starts_with("x-real") || n == "forwarded"),
                    ),
                    ("no peer", c.peer.is_none()),
                    (
                        "an inner service's 429",
                        c.other.iter().any(|(_, v)| v == "busy"),
                    ),
                ];
                for (name, found) in checks {
                    if found && !seen.contains(&name) {
                        seen.push(name);
                    }
                }
            }
        }
        assert_eq!(seen.len(), 13, "only {seen:?}");
    }

    /// Every generated timeline reads back from the notation failures print,
    /// so that every replay command replays it.
    #[test]
    fn generated_timelines_round_trip() {
        let config = Config {
            cases: 300,
            failure_persistence: None,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha));
        runner
            .run(&with_forged_prefixes(12), |(t, prefixes)| {
                let forged = HttpTimeline {
                    setup: t.setup.clone(),
                    calls: t
                        .calls
                        .iter()
                        .zip(&prefixes)
                        .map(|(c, (own, f))| forge(c, *own, f))
                        .collect(),
                };
                for t in [t, forged] {
                    let text = format!("{t:?}");
                    let back = super::super::exchange::parse(&text);
                    prop_assert_eq!(back.as_ref().ok(), Some(&t), "{} {:?}", text, back);
                }
                Ok(())
            })
            .unwrap();
    }
}
