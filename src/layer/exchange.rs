//! HTTP timelines: a policy and key rule, then requests at instants of the
//! layer's clock; their notation (what failures print and what `cargo run
//! -- compare 7` reads back) and their transcripts.
//!
//! ```text
//! name="api" q=2 w=1 trust=10.0.0.0/8 api=x-api-key: @0s from 10.0.0.1 xff "198.51.100.1, 203.0.113.7"; @0.5s from 203.0.113.7 key "k1" via clone
//! ```

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::{Cidr, KeyRule, Policy};
use crate::time::group_digits;

/// How a layer is configured for a timeline.
#[derive(Clone, PartialEq, Eq)]
pub struct Setup {
    pub policy: Policy,
    pub api_key_header: Option<String>,
    pub trusted: Vec<Cidr>,
    /// The rule of the limiter behind the layer, when not the lesson's own
    /// (`rule=TokenBucket`): the layer passes on whatever it answers.
    pub rule: Option<crate::models::Algorithm>,
}

impl Setup {
    /// The rule of the limiter behind the layer.
    pub fn rule(&self, lesson: crate::models::Algorithm) -> crate::models::Algorithm {
        self.rule.unwrap_or(lesson)
    }

    /// The key rule, reporting where `report` says.
    pub fn key_rule(&self, report: super::Report) -> KeyRule {
        KeyRule {
            api_key_header: self
                .api_key_header
                .as_deref()
                .map(|h| h.parse().expect("a valid header name")),
            trusted_proxies: self.trusted.clone(),
            report,
        }
    }
}

/// Which service a request goes through: the same one as the request
/// before, a clone of it (what axum does per connection), or a new service
/// from a clone of the layer (what axum does per route).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Via {
    Same,
    Clone,
    Layer,
}

/// One request of a timeline.
#[derive(Clone, PartialEq, Eq)]
pub struct Call {
    /// When, on the layer's clock, in nanoseconds.
    pub at: u64,
    /// The peer address; `None` when the server gives the layer none.
    pub peer: Option<IpAddr>,
    /// `X-Forwarded-For` header lines, in order, as bytes.
    pub forwarded: Vec<Vec<u8>>,
    /// Lines of the API key header, as bytes.
    pub api_keys: Vec<Vec<u8>>,
    /// Other headers a client sent (`X-Real-IP`, `Forwarded`, …), which
    /// the contract never reads.
    pub other: Vec<(String, String)>,
    /// `GET` unless the notation says `method …`.
    pub method: String,
    /// `/` unless the notation says `path …`.
    pub path: String,
    pub via: Via,
}

impl Call {
    pub fn from(at: u64, peer: &str) -> Call {
        Call {
            at,
            peer: Some(peer.parse().expect("an address")),
            forwarded: Vec::new(),
            api_keys: Vec::new(),
            other: Vec::new(),
            method: "GET".to_string(),
            path: "/".to_string(),
            via: Via::Clone,
        }
    }

    /// The peer as a socket address (the port is never part of a key).
    pub fn socket(&self) -> Option<SocketAddr> {
        self.peer.map(|ip| SocketAddr::new(ip, 40_000))
    }
}

/// A setup and its requests.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpTimeline {
    pub setup: Setup,
    pub calls: Vec<Call>,
}

/// `1.5s`, `0s`, `1.000000001s`: seconds with as many decimals as needed.
pub fn seconds(nanos: u64) -> String {
    let (s, ns) = (nanos / 1_000_000_000, nanos % 1_000_000_000);
    if ns == 0 {
        format!("{s}s")
    } else {
        let frac = format!("{ns:09}");
        format!("{s}.{}s", frac.trim_end_matches('0'))
    }
}

/// A byte string in double quotes, `\"`, `\\` and `\xNN` escaped.
pub fn quoted(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    out
}

impl fmt::Debug for Setup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "name={} q={} w={}",
            quoted(self.policy.name.as_bytes()),
            self.policy.quota,
            self.policy.window.as_secs()
        )?;
        if !self.trusted.is_empty() {
            let t: Vec<String> = self.trusted.iter().map(|c| c.to_string()).collect();
            write!(f, " trust={}", t.join(","))?;
        }
        if let Some(h) = &self.api_key_header {
            write!(f, " api={h}")?;
        }
        if let Some(rule) = self.rule {
            write!(f, " rule={}", rule.name())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{} from ", seconds(self.at))?;
        match self.peer {
            Some(ip) => write!(f, "{ip}")?,
            None => f.write_str("none")?,
        }
        for line in &self.forwarded {
            write!(f, " xff {}", quoted(line))?;
        }
        for line in &self.api_keys {
            write!(f, " key {}", quoted(line))?;
        }
        for (name, value) in &self.other {
            write!(
                f,
                " header {}",
                quoted(format!("{name}: {value}").as_bytes())
            )?;
        }
        if self.method != "GET" {
            write!(f, " method {}", self.method)?;
        }
        if self.path != "/" {
            write!(f, " path {}", self.path)?;
        }
        match self.via {
            Via::Same => f.write_str(" via same"),
            Via::Clone => Ok(()),
            Via::Layer => f.write_str(" via layer"),
        }
    }
}

impl fmt::Debug for HttpTimeline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}:", self.setup)?;
        for (i, c) in self.calls.iter().enumerate() {
            write!(f, "{}{c:?}", if i == 0 { " " } else { "; " })?;
        }
        Ok(())
    }
}

/// Reads a timeline back from its notation.
pub fn parse(text: &str) -> Result<HttpTimeline, String> {
    let (setup, calls) = split_setup(text).ok_or(
        "an HTTP timeline is `SETUP: CALL; CALL; …` (a colon and a space after the setup)",
    )?;
    let setup = parse_setup(setup)?;
    let mut parsed = Vec::new();
    for (i, c) in split_outside_quotes(calls, ';').iter().enumerate() {
        if c.trim().is_empty() {
            continue;
        }
        parsed.push(parse_call(c).map_err(|e| format!("request #{}: {e}", i + 1))?);
    }
    Ok(HttpTimeline {
        setup,
        calls: parsed,
    })
}

/// Splits at the first colon outside quotes that ends a word (IPv6
/// addresses in `trust=` have colons inside words).
fn split_setup(text: &str) -> Option<(&str, &str)> {
    outside_quotes(text)
        .filter(|&(_, c)| c == ':')
        .map(|(i, _)| (&text[..i], &text[i + 1..]))
        .find(|(_, rest)| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

/// The characters of `text` that stand outside double quotes (a quoted
/// string's `\"` does not end it), with their byte offsets.
fn outside_quotes(text: &str) -> impl Iterator<Item = (usize, char)> + '_ {
    let (mut in_quotes, mut escaped) = (false, false);
    text.char_indices().filter(move |&(_, c)| {
        let inside = in_quotes || c == '"';
        if escaped {
            escaped = false;
        } else if c == '\\' && in_quotes {
            escaped = true;
        } else if c == '"' {
            in_quotes = !in_quotes;
        }
        !inside
    })
}

pub fn parse_setup(text: &str) -> Result<Setup, String> {
    let mut setup = Setup {
        policy: Policy::new("api", 1, Duration::from_secs(1)),
        api_key_header: None,
        trusted: Vec::new(),
        rule: None,
    };
    let words = words(text)?;
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| {
            format!("{w:?}: a setting is `name=…`, `q=…`, `w=…`, `trust=…` or `api=…`")
        })?;
        match k {
            "name" => setup.policy.name = String::from_utf8_lossy(&unquote(v)?).into_owned(),
            "q" => setup.policy.quota = v.parse().map_err(|_| format!("q={v}: a whole number"))?,
            "w" => {
                setup.policy.window =
                    Duration::from_secs(v.parse().map_err(|_| format!("w={v}: whole seconds"))?)
            }
            "trust" => {
                for r in v.split(',') {
                    setup.trusted.push(r.parse()?);
                }
            }
            "api" => setup.api_key_header = Some(v.to_string()),
            "rule" => {
                let rule = crate::models::Algorithm::ALL
                    .into_iter()
                    .find(|a| a.name() == v)
                    .ok_or_else(|| {
                        format!("rule={v}: FixedWindow, SlidingLog, SlidingCounter or TokenBucket")
                    })?;
                setup.rule = Some(rule);
            }
            _ => {
                return Err(format!(
                    "{k:?} is not a setting (name, q, w, trust, api, rule)"
                ))
            }
        }
    }
    Ok(setup)
}

fn parse_call(text: &str) -> Result<Call, String> {
    let words = words(text)?;
    let mut it = words.iter();
    let at = it.next().ok_or("empty request")?;
    let at = parse_time(at.strip_prefix('@').ok_or("a request starts with @TIME")?)?;
    if it.next().map(String::as_str) != Some("from") {
        return Err("@TIME is followed by `from ADDRESS` (or `from none`)".into());
    }
    let peer = match it.next().map(String::as_str) {
        Some("none") => None,
        Some(a) => Some(
            a.parse()
                .map_err(|_| format!("{a:?} is not an IP address"))?,
        ),
        None => return Err("`from` needs an address".into()),
    };
    let mut call = Call {
        at,
        peer,
        forwarded: Vec::new(),
        api_keys: Vec::new(),
        other: Vec::new(),
        method: "GET".to_string(),
        path: "/".to_string(),
        via: Via::Clone,
    };
    while let Some(w) = it.next() {
        let value = it.next().ok_or_else(|| format!("{w:?} needs a value"))?;
        match w.as_str() {
            "xff" => call.forwarded.push(unquote(value)?),
            "key" => call.api_keys.push(unquote(value)?),
            "method" => call.method = value.to_string(),
            "path" => call.path = value.to_string(),
            "header" => {
                let line = String::from_utf8(unquote(value)?).map_err(|_| "a header line is text")?;
                let (name, value) = line
                    .split_once(": ")
                    .ok_or_else(|| format!("header {line:?}: `\"Name: value\"`"))?;
                call.other.push((name.to_ascii_lowercase(), value.to_string()));
            }
            "via" => {
                call.via = match value.as_str() {
                    "same" => Via::Same,
                    "clone" => Via::Clone,
                    "layer" => Via::Layer,
                    v => return Err(format!("via {v:?}: same, clone or layer")),
                }
            }
            _ => {
                return Err(format!(
                    "{w:?}: after the address come `xff \"…\"`, `key \"…\"`, `header \"Name: value\"`, `method …`, `path …`, `via …`"
                ))
            }
        }
    }
    Ok(call)
}

/// `1.5s`, `500ms`, `7ns`, `2s`.
pub fn parse_time(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?} is not a time (1.5s, 500ms, 7ns)");
    let text = text.replace('_', "");
    if let Some(n) = text.strip_suffix("ns") {
        return n.parse().map_err(|_| bad());
    }
    if let Some(n) = text.strip_suffix("ms") {
        return n
            .parse::<u64>()
            .ok()
            .and_then(|m| m.checked_mul(1_000_000))
            .ok_or_else(bad);
    }
    let s = text.strip_suffix('s').ok_or_else(bad)?;
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let whole: u64 = whole.parse().map_err(|_| bad())?;
    let frac: u64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(1_000_000_000)
        .and_then(|w| w.checked_add(frac))
        .ok_or_else(bad)
}

/// Words split at spaces, a quoted string (with its escapes) kept whole.
fn words(text: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' if in_quotes => {
                cur.push(c);
                cur.push(chars.next().ok_or("a backslash at the end")?);
            }
            '"' => {
                in_quotes = !in_quotes;
                cur.push(c);
            }
            c if c.is_whitespace() && !in_quotes => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if in_quotes {
        return Err(format!("an unclosed quote in {text:?}"));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    Ok(out)
}

fn split_outside_quotes(text: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, _) in outside_quotes(text).filter(|&(_, c)| c == sep) {
        out.push(&text[start..i]);
        start = i + sep.len_utf8();
    }
    out.push(&text[start..]);
    out
}

fn unquote(text: &str) -> Result<Vec<u8>, String> {
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or_else(|| format!("{text:?} should be in double quotes"))?;
    let mut out = Vec::new();
    let bytes = inner.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            match bytes.get(i + 1) {
                Some(b'x') => {
                    let hex = inner.get(i + 2..i + 4).ok_or("\\x needs two hex digits")?;
                    out.push(u8::from_str_radix(hex, 16).map_err(|_| "\\x needs two hex digits")?);
                    i += 4;
                }
                Some(&c) => {
                    out.push(c);
                    i += 2;
                }
                None => return Err("a backslash at the end".into()),
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(out)
}

/// What a layer answered to one request, as the checks saw it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Observed {
    pub status: u16,
    /// Every response header line, names lower-case, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
    /// How many times the inner service was called for this request.
    pub inner_calls: usize,
    /// Whether the request reached the inner service changed: another peer
    /// address (or none), method, URI or header lines.
    pub inner_request_changed: bool,
    /// The keys the limiter was asked for this request, with the instant.
    pub checks: Vec<(String, u64)>,
}

impl Observed {
    /// The header's value if it was sent exactly once.
    pub fn header(&self, name: &str) -> Result<Option<&[u8]>, String> {
        let lines: Vec<&[u8]> = self
            .headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
            .collect();
        match lines.as_slice() {
            [] => Ok(None),
            [one] => Ok(Some(one)),
            _ => Err(format!(
                "{name} was sent {}",
                crate::text::times(lines.len())
            )),
        }
    }

    /// The keys the limiter was asked for this request, as a transcript
    /// shows them.
    pub fn keys(&self) -> String {
        if self.checks.is_empty() {
            "(limiter not asked)".to_string()
        } else {
            let keys: Vec<&str> = self.checks.iter().map(|(k, _)| k.as_str()).collect();
            keys.join(", ")
        }
    }

    /// `200 RateLimit: "api";r=1` as a transcript shows it.
    pub fn summary(&self) -> String {
        let mut out = self.status.to_string();
        for name in ["retry-after", "ratelimit", "ratelimit-policy"] {
            for (n, v) in self.headers.iter().filter(|(n, _)| n == name) {
                out.push_str(&format!("  {}: {}", pretty(n), String::from_utf8_lossy(v)));
            }
        }
        out
    }
}

fn pretty(name: &str) -> &str {
    match name {
        "retry-after" => "Retry-After",
        "ratelimit" => "RateLimit",
        "ratelimit-policy" => "RateLimit-Policy",
        other => other,
    }
}

/// A transcript: each request, the key it was counted under and the answer.
pub fn transcript(timeline: &HttpTimeline, answers: &[Observed]) -> String {
    let mut out = format!("{:?}\n", timeline.setup);
    for (i, (c, o)) in timeline.calls.iter().zip(answers).enumerate() {
        let request = format!("{c:?}");
        out.push_str(&format!(
            "#{:<2} {}\n    key {}  →  {}\n",
            i + 1,
            request.trim_start_matches('@'),
            o.keys(),
            o.summary()
        ));
    }
    out
}

/// Nanoseconds for people: `1_000_000_001ns (1.000000001s)`.
pub fn nanos(n: u64) -> String {
    format!("{}ns ({})", group_digits(u128::from(n)), seconds(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_round_trips() {
        let text = r#"name="a\"b" q=2 w=1 trust=10.0.0.0/8,2001:db8::/32 api=x-api-key rule=TokenBucket: @0s from 10.0.0.1 xff "1.2.3.4, 5.6.7.8" xff "\xff;" key "k" header "x-real-ip: 9.9.9.9" method OPTIONS path /healthz; @1.000000001s from none via layer; @2s from ::ffff:1.2.3.4 via same"#;
        let t = parse(text).unwrap();
        assert_eq!(t.calls.len(), 3);
        assert_eq!(t.calls[0].forwarded[1], vec![0xff, b';']);
        assert_eq!(t.setup.policy.name, "a\"b");
        assert_eq!(format!("{t:?}"), text);
        assert_eq!(parse(&format!("{t:?}")).unwrap(), t);
        assert_eq!(parse_time("500ms"), Ok(500_000_000));
        assert_eq!(parse_time("1_000ns"), Ok(1_000));
        assert!(parse_time("1.5").is_err());
        assert!(parse("q=1: @0s").unwrap_err().contains("from"));
        let colon = parse(r#"name="a: b" trust=::1,2001:db8::/32: @0s from ::1"#).unwrap();
        assert_eq!(colon.setup.policy.name, "a: b");
        assert_eq!(colon.setup.trusted.len(), 2);
        assert_eq!(colon.calls[0].peer, Some("::1".parse().unwrap()));
    }
}
