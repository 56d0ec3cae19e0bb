//! The contract's answer to one request, written apart from any layer: the
//! oracle of lesson 07's checks.

use std::net::{IpAddr, Ipv6Addr};
use std::time::Duration;

use super::{canonical, KeyRule, Policy, MAX_API_KEY_LEN, PROBLEM_TYPE, UNKNOWN_CLIENT};
use crate::decision::Decision;

/// A request's client key, and whether the layer needed a peer address it
/// did not have (which it must report, once).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Keyed {
    pub key: String,
    pub missing_peer: bool,
    /// Why the contract keys the request so, in words: `the rightmost
    /// X-Forwarded-For address that no trusted proxy wrote`.
    pub why: &'static str,
}

/// The client key of a request: `api:<value>` for one valid API key header
/// line, else `ip:<client>` with the client found by walking
/// `X-Forwarded-For` (all lines, in order) and then the peer from the
/// right, past the trusted proxies.
pub fn client_key(
    rule: &KeyRule,
    api_key_lines: &[&[u8]],
    forwarded_lines: &[&[u8]],
    peer: Option<IpAddr>,
) -> Keyed {
    if rule.api_key_header.is_some() {
        if let [value] = api_key_lines {
            if valid_api_key(value) {
                return Keyed {
                    key: format!("api:{}", String::from_utf8_lossy(value)),
                    missing_peer: false,
                    why: "its one valid API key",
                };
            }
        }
    }
    let Some(peer) = peer else {
        return Keyed {
            key: UNKNOWN_CLIENT.to_string(),
            missing_peer: true,
            why: "the one key of every request without a peer address",
        };
    };
    let mut chain: Vec<Option<IpAddr>> = Vec::new();
    if !rule.trusted_proxies.is_empty() {
        for line in forwarded_lines {
            chain.extend(forwarded_entries(line));
        }
    }
    chain.push(Some(peer));
    let last = chain.len() - 1;
    let mut client = chain[0];
    let mut why = "the leftmost address of X-Forwarded-For: every address of the chain is a \
                   trusted proxy";
    for i in (0..chain.len()).rev() {
        match chain[i] {
            None => {
                client = chain[i + 1];
                why = "the address right of an X-Forwarded-For entry that is not an address: \
                       the walk from the right stops there";
                break;
            }
            Some(ip) if !rule.trusts(ip) => {
                client = Some(ip);
                why = if i < last {
                    "the rightmost X-Forwarded-For address that no trusted proxy wrote"
                } else if forwarded_lines.is_empty() {
                    "the peer's address, the connection's"
                } else if rule.trusted_proxies.is_empty() {
                    "the peer's address: no proxy is trusted, so X-Forwarded-For is not read"
                } else {
                    "the peer's address: the peer is not a trusted proxy, so its \
                     X-Forwarded-For is not believed"
                };
                break;
            }
            Some(_) => {}
        }
    }
    Keyed {
        key: address_key(client.expect("the walk ends on an address")),
        missing_peer: false,
        why,
    }
}

/// Whether the contract lets the leftmost address of a request's chain
/// decide its key: no valid API key, a peer, trusted proxies, and every
/// address of the chain parses and is trusted. Only then may what a client
/// writes in front of `X-Forwarded-For` change its key.
pub fn leftmost_decides(
    rule: &KeyRule,
    api_key_lines: &[&[u8]],
    forwarded_lines: &[&[u8]],
    peer: Option<IpAddr>,
) -> bool {
    let keyed = client_key(rule, api_key_lines, forwarded_lines, peer);
    let Some(peer) = peer else { return false };
    if keyed.key.starts_with("api:") || rule.trusted_proxies.is_empty() || !rule.trusts(peer) {
        return false;
    }
    forwarded_lines
        .iter()
        .flat_map(|line| forwarded_entries(line))
        .all(|entry| entry.is_some_and(|ip| rule.trusts(ip)))
}

/// 1 to [`MAX_API_KEY_LEN`] bytes, each visible ASCII (0x21 to 0x7E).
pub fn valid_api_key(value: &[u8]) -> bool {
    (1..=MAX_API_KEY_LEN).contains(&value.len()) && value.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// The entries of one `X-Forwarded-For` line: each comma-separated entry,
/// trimmed of spaces and tabs, as an address, or `None` where it does not
/// parse. A line that is not ASCII text is one entry that does not parse.
pub fn forwarded_entries(line: &[u8]) -> Vec<Option<IpAddr>> {
    let text_like = line
        .iter()
        .all(|b| *b == b'\t' || (0x20..=0x7e).contains(b));
    if !text_like {
        return vec![None];
    }
    let text = std::str::from_utf8(line).expect("ASCII");
    text.split(',')
        .map(|e| e.trim_matches([' ', '\t']).parse::<IpAddr>().ok())
        .collect()
}

/// `ip:203.0.113.7`; an IPv6 client by its /64 (`ip:2001:db8:1:2::/64`);
/// an IPv4-mapped IPv6 address as IPv4.
pub fn address_key(ip: IpAddr) -> String {
    match canonical(ip) {
        IpAddr::V4(v4) => format!("ip:{v4}"),
        IpAddr::V6(v6) => {
            let prefix = Ipv6Addr::from(u128::from(v6) & (u128::MAX << 64));
            format!("ip:{prefix}/64")
        }
    }
}

/// `name` as a structured-field string: in double quotes, with `\` and `"`
/// escaped by a backslash.
pub fn sf_string(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `Retry-After` for a wait: whole seconds, rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    wait.as_nanos().div_ceil(1_000_000_000).max(1) as u64
}

/// The request header that tells the checks' inner service how to answer:
/// `unavailable` (503) or `busy` (a 429 of its own, from some limit of its
/// own), each with a `Retry-After`; otherwise 200. An allowed request must
/// get the inner service's answer as it was sent, whatever it is.
pub const INNER_ANSWER: &str = "x-kata-inner";

/// The inner service's status and `Retry-After` for an `x-kata-inner`
/// value.
pub fn inner_answer(value: Option<&str>) -> (u16, Option<&'static str>) {
    match value {
        Some("unavailable") => (503, Some("120")),
        Some("busy") => (429, Some("30")),
        _ => (200, None),
    }
}

/// Headers the inner service sends with every answer, which an allowed
/// request must keep: among them a legacy rate-limit header of its own.
/// (It also sends `RateLimit` and `RateLimit-Policy` of its own, which the
/// layer replaces.)
pub const INNER_HEADERS: &[(&str, &str)] = &[
    ("content-type", "text/plain"),
    ("x-inner", "called"),
    ("x-ratelimit-remaining", "4999"),
    ("ratelimit-reset", "7"),
    ("set-cookie", "session=abc"),
    ("set-cookie", "csrf=xyz"),
];

/// What the layer answers for a decision of the limiter.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Expected {
    /// 200 from the inner service, or 429.
    pub status: u16,
    pub ratelimit: String,
    pub ratelimit_policy: String,
    pub retry_after: Option<String>,
    /// Whether the inner service answers (exactly once).
    pub reaches_inner: bool,
}

pub fn policy_header(policy: &Policy) -> String {
    format!(
        "{};q={};w={}",
        sf_string(&policy.name),
        policy.quota,
        policy.window.as_secs()
    )
}

pub fn expected(policy: &Policy, decision: &Decision) -> Expected {
    let name = sf_string(&policy.name);
    match decision {
        Decision::Allowed { remaining } => Expected {
            status: 200,
            ratelimit: format!("{name};r={remaining}"),
            ratelimit_policy: policy_header(policy),
            retry_after: None,
            reaches_inner: true,
        },
        Decision::Denied { retry_after } => {
            let s = retry_after_secs(*retry_after);
            Expected {
                status: 429,
                ratelimit: format!("{name};r=0;t={s}"),
                ratelimit_policy: policy_header(policy),
                retry_after: Some(s.to_string()),
                reaches_inner: false,
            }
        }
    }
}

/// What is wrong with a 429's body, if anything: it must be a JSON object
/// with the draft's problem type, the status, a title and a sentence, and
/// the violated policy by name.
pub fn problem_body_errors(policy: &Policy, body: &[u8]) -> Option<String> {
    let value: serde_json::Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "the body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(body)
            ))
        }
    };
    let field = |name: &str| value.get(name);
    let text = |name: &str| {
        field(name)
            .and_then(|v| v.as_str())
            .filter(|s| !s.trim().is_empty())
    };
    if field("type").and_then(|v| v.as_str()) != Some(PROBLEM_TYPE) {
        return Some(format!(
            "its \"type\" is {:?}, not {PROBLEM_TYPE:?}",
            field("type")
        ));
    }
    if field("status").and_then(|v| v.as_u64()) != Some(429) {
        return Some(format!("its \"status\" is {:?}, not 429", field("status")));
    }
    if text("title").is_none() {
        return Some("it has no \"title\" (a short summary of the problem type)".into());
    }
    if text("detail").is_none() {
        return Some("it has no \"detail\" (a sentence for the person reading it)".into());
    }
    let want = serde_json::json!([policy.name]);
    if field("violated-policies") != Some(&want) {
        return Some(format!(
            "its \"violated-policies\" is {:?}, not {want}",
            field("violated-policies").map(|v| v.to_string())
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Option<IpAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn walks_from_the_right_past_trusted_proxies() {
        let rule = KeyRule::by_address().trusting(&["10.0.0.0/8"]).unwrap();
        let key = |xff: &[&str], peer: &str| {
            let lines: Vec<&[u8]> = xff.iter().map(|l| l.as_bytes()).collect();
            client_key(&rule, &[], &lines, ip(peer)).key
        };
        assert_eq!(key(&[], "203.0.113.7"), "ip:203.0.113.7");
        assert_eq!(key(&["1.1.1.1, 203.0.113.7"], "10.0.0.1"), "ip:203.0.113.7");
        assert_eq!(
            key(&["1.1.1.1", "203.0.113.7, 10.0.0.2"], "10.0.0.1"),
            "ip:203.0.113.7"
        );
        // A direct client's header is not believed.
        assert_eq!(key(&["1.1.1.1"], "203.0.113.7"), "ip:203.0.113.7");
        // Garbage stops the walk: the client is the address to its right.
        assert_eq!(
            key(&["1.1.1.1, nonsense, 10.0.0.3"], "10.0.0.1"),
            "ip:10.0.0.3"
        );
        assert_eq!(key(&["nonsense"], "10.0.0.1"), "ip:10.0.0.1");
        assert_eq!(key(&["203.0.113.7:443"], "10.0.0.1"), "ip:10.0.0.1");
        // Every address trusted: the leftmost.
        assert_eq!(key(&["10.0.0.9, 10.0.0.8"], "10.0.0.1"), "ip:10.0.0.9");
        assert_eq!(
            key(&[" 203.0.113.7 ,\t10.0.0.2"], "10.0.0.1"),
            "ip:203.0.113.7"
        );
        assert_eq!(key(&["::ffff:203.0.113.7"], "10.0.0.1"), "ip:203.0.113.7");
        assert_eq!(
            key(&["2001:db8:1:2:3:4:5:6"], "10.0.0.1"),
            "ip:2001:db8:1:2::/64"
        );
        let untrusting = KeyRule::by_address();
        let lines: Vec<&[u8]> = vec![b"1.1.1.1"];
        assert_eq!(
            client_key(&untrusting, &[], &lines, ip("10.0.0.1")).key,
            "ip:10.0.0.1"
        );
        let unknown = client_key(&untrusting, &[], &[], None);
        assert_eq!(
            (unknown.key.as_str(), unknown.missing_peer),
            (UNKNOWN_CLIENT, true)
        );
    }

    #[test]
    fn api_keys() {
        let rule = KeyRule::by_address().with_api_key("x-api-key").unwrap();
        let key = |lines: &[&[u8]]| client_key(&rule, lines, &[], ip("192.0.2.1")).key;
        assert_eq!(key(&[b"abc"]), "api:abc");
        assert_eq!(key(&[b"a b"]), "ip:192.0.2.1");
        assert_eq!(key(&[b""]), "ip:192.0.2.1");
        assert_eq!(key(&[b"a", b"b"]), "ip:192.0.2.1");
        assert_eq!(key(&[&[b'x'; 128]]), format!("api:{}", "x".repeat(128)));
        assert_eq!(key(&[&[b'x'; 129]]), "ip:192.0.2.1");
        assert_eq!(client_key(&rule, &[b"k"], &[], None).key, "api:k");
    }

    #[test]
    fn headers() {
        let p = Policy::new("a\"b\\c", 5, Duration::from_secs(60));
        assert_eq!(policy_header(&p), r#""a\"b\\c";q=5;w=60"#);
        let denied = expected(
            &p,
            &Decision::Denied {
                retry_after: Duration::from_nanos(1),
            },
        );
        assert_eq!(denied.retry_after.as_deref(), Some("1"));
        assert_eq!(denied.ratelimit, r#""a\"b\\c";r=0;t=1"#);
        assert_eq!(retry_after_secs(Duration::from_nanos(1_000_000_000)), 1);
        assert_eq!(retry_after_secs(Duration::from_nanos(1_000_000_001)), 2);
        assert_eq!(
            retry_after_secs(Duration::from_nanos(u64::MAX)),
            18_446_744_074
        );
        let body = serde_json::json!({"type": PROBLEM_TYPE, "title": "t", "status": 429, "detail": "d", "violated-policies": ["a\"b\\c"]});
        assert_eq!(problem_body_errors(&p, body.to_string().as_bytes()), None);
        assert!(problem_body_errors(&p, b"{}").is_some());
    }
}
