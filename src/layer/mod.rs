//! A limiter in front of an HTTP service: the substance of lesson 07's
//! kind, `http-layer` ([`crate::http`] is the kind's seam), below the kinds
//! because lesson 10's kind checks its own layer with these checks too.
//!
//! The learner writes a tower `Layer` (`RateLimitLayer<L, C>`) and its
//! `Service`; this module holds what the layer is configured with and what
//! the checks need to drive it:
//!
//! - the contract's types: [`Clock`] ([`MonotonicClock`] for real use,
//!   [`ManualClock`] for tests), [`Policy`] and [`PolicyError`],
//!   [`KeyRule`] with its trusted proxies ([`Cidr`]) and where a
//!   misconfiguration is reported ([`Report`], [`LayerError`]);
//! - [`model`]: the contract's answer to one request, written apart from
//!   any layer (the client key, the status, every rate-limit header byte,
//!   the problem body);
//! - [`exchange`]: HTTP timelines, their notation and their transcripts;
//! - [`drive`]: the driver that puts a timeline's requests to a layer, in
//!   process (with the harness's model as the limiter behind it and a
//!   counting inner service) and over a real loopback socket;
//! - [`gen`], [`checks`]: the generated timelines and the checks;
//! - [`suite`]: its checks as data, `trials` (lesson 07's, and lesson 10's
//!   for its layer; see [`crate::trial`]).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::HeaderName;

use crate::time::Timestamp;

pub mod checks;
pub mod drive;
pub mod exchange;
pub mod gen;
pub mod model;
pub mod serve;
pub mod suite;
mod variant;

pub use suite::trials;

/// What `cargo run -- compare 7 [TIMELINE]` draws: one of the layer's
/// drawings ([`checks::SNAPSHOTS`], the first by default) or an HTTP
/// timeline as a failure prints it; anything else is refused with the
/// parser's words.
pub fn comparison(timeline: Option<&str>) -> Result<String, String> {
    let which = timeline
        .map_or(crate::checks::DEFAULT_COMPARISON, str::trim)
        .to_string();
    let names: Vec<&str> = checks::SNAPSHOTS.iter().map(|(n, _)| *n).collect();
    if !names.contains(&which.as_str()) {
        exchange::parse(&which).map_err(|e| {
            format!(
                "{e}; name one of {} or write a timeline as a failure prints it",
                names.join(", ")
            )
        })?;
    }
    Ok(which)
}
/// A lesson of this kind.
pub type Lesson = checks::HttpLesson;

/// The problem type of the IETF httpapi draft (revision 10) for a request
/// that exceeded its quota.
pub const PROBLEM_TYPE: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The title the draft gives that problem type.
pub const PROBLEM_TITLE: &str = "Request cannot be satisfied as assigned quota has been exceeded";

/// The longest API key the layer accepts, in bytes.
pub const MAX_API_KEY_LEN: usize = 128;

/// The key of every request the layer could not key because the server
/// gives it no peer address (see [`LayerError::NoPeerAddress`]).
pub const UNKNOWN_CLIENT: &str = "ip:unknown";

/// Where a layer's time comes from. The layer reads time only through it.
pub trait Clock: Clone + Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// Real time for a server: nanoseconds since the clock was made, from the
/// monotonic clock (it never jumps back when the wall clock is set).
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told to: what the tests give the layer.
/// Its clones share one time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn new(at: Timestamp) -> Self {
        ManualClock {
            nanos: Arc::new(AtomicU64::new(at.as_nanos())),
        }
    }

    pub fn set(&self, at: Timestamp) {
        self.nanos.store(at.as_nanos(), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        self.set(self.now() + by);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

/// One named quota policy: `quota` requests per `window`, as the
/// `RateLimit-Policy` header announces it. The limiter behind the layer is
/// built for the same quota and window; the layer validates the policy
/// ([`PolicyError`]) and never second-guesses the limiter's answers.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Policy {
    pub name: String,
    pub quota: u64,
    pub window: Duration,
}

impl Policy {
    pub fn new(name: &str, quota: u64, window: Duration) -> Self {
        Policy {
            name: name.to_string(),
            quota,
            window,
        }
    }

    /// The contract's validation, in its order: a name, then the quota,
    /// then the window. The layer's constructor must give the same answer.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.name.is_empty() {
            return Err(PolicyError::EmptyName);
        }
        if !self.name.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
            return Err(PolicyError::InvalidName);
        }
        if self.quota == 0 {
            return Err(PolicyError::ZeroQuota);
        }
        if self.window.subsec_nanos() != 0 || self.window.as_secs() == 0 {
            return Err(PolicyError::WindowNotWholeSeconds);
        }
        Ok(())
    }
}

/// Why a layer cannot be built with the policy it was given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PolicyError {
    /// The policy's name is empty: clients could not tell policies apart.
    EmptyName,
    /// The name has a character a structured-field string cannot carry
    /// (anything outside printable ASCII, 0x20 to 0x7E).
    InvalidName,
    /// A quota of zero would deny every request.
    ZeroQuota,
    /// The window is not a whole number of seconds of at least one: the
    /// header's `w` parameter counts whole seconds.
    WindowNotWholeSeconds,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyError::EmptyName => {
                "the policy's name is empty; give it a name clients can tell apart, like \"api\""
            }
            PolicyError::InvalidName => {
                "the policy's name has a character outside printable ASCII, which a RateLimit \
                 header cannot carry; use letters, digits and punctuation only"
            }
            PolicyError::ZeroQuota => {
                "the policy's quota is 0, so every request would be denied; use at least 1"
            }
            PolicyError::WindowNotWholeSeconds => {
                "the policy's window is not a whole number of seconds (at least 1), which is \
                 all the RateLimit-Policy header's `w` can say; use whole seconds"
            }
        })
    }
}

impl std::error::Error for PolicyError {}

/// An address range in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`) or
/// one address (`192.0.2.1`). An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`)
/// is matched as the IPv4 address it carries.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.network, canonical(ip)) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                masked(u128::from(u32::from(ip)), self.prefix, 32) == u128::from(u32::from(net))
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                masked(u128::from(ip), self.prefix, 128) == u128::from(net)
            }
            _ => false,
        }
    }
}

fn masked(bits: u128, prefix: u8, width: u8) -> u128 {
    if prefix == 0 {
        0
    } else {
        bits & (u128::MAX << (width - prefix)) & (u128::MAX >> (128 - u32::from(width)))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries; any other
/// address as it is.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let ip = canonical(
            addr.parse::<IpAddr>()
                .map_err(|_| format!("{text:?} is not an IP address or a CIDR range"))?,
        );
        let width = if ip.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => width,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("{text:?}: the prefix length must be 0 to {width}"))?,
        };
        let network = match ip {
            IpAddr::V4(v4) => {
                IpAddr::V4((masked(u128::from(u32::from(v4)), prefix, 32) as u32).into())
            }
            IpAddr::V6(v6) => IpAddr::V6(masked(u128::from(v6), prefix, 128).into()),
        };
        if network != ip {
            return Err(format!(
                "{text:?} has bits set past its prefix; the range starts at {network}/{prefix}"
            ));
        }
        Ok(Cidr { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

/// How the layer tells clients apart.
#[derive(Clone, Debug)]
pub struct KeyRule {
    /// The header a client may send its API key in (`x-api-key`); `None`
    /// keys every request by its client address.
    pub api_key_header: Option<HeaderName>,
    /// The proxies in front of the server whose `X-Forwarded-For` entries
    /// are believed. Empty: `X-Forwarded-For` is ignored.
    pub trusted_proxies: Vec<Cidr>,
    /// Where the layer reports a server that gives it no peer address.
    pub report: Report,
}

impl KeyRule {
    /// Keys by the peer address alone, reporting to stderr.
    pub fn by_address() -> Self {
        KeyRule {
            api_key_header: None,
            trusted_proxies: Vec::new(),
            report: Report::stderr(),
        }
    }

    /// Also keys by an API key in header `name`.
    pub fn with_api_key(mut self, name: &str) -> Result<Self, String> {
        let header = HeaderName::from_str(name)
            .map_err(|_| format!("{name:?} is not a valid header name"))?;
        self.api_key_header = Some(header);
        Ok(self)
    }

    /// Trusts the proxies in `ranges` (CIDR notation).
    pub fn trusting(mut self, ranges: &[&str]) -> Result<Self, String> {
        for r in ranges {
            self.trusted_proxies.push(r.parse()?);
        }
        Ok(self)
    }

    pub fn reporting_to(mut self, report: Report) -> Self {
        self.report = report;
        self
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.trusted_proxies.iter().any(|c| c.contains(ip))
    }
}

/// What is wrong with how the server runs the layer, found only once
/// requests arrive.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LayerError {
    /// A request carried no peer address: the server was not started with
    /// connection info, so clients cannot be told apart by address.
    NoPeerAddress,
}

impl fmt::Display for LayerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LayerError::NoPeerAddress => write!(
                f,
                "the rate limiter got a request without the client's address, so the server \
                 was not started with connection info. Until that is fixed, every client \
                 without an API key shares one quota (key {UNKNOWN_CLIENT}). Fix: serve the \
                 router with `axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>())`."
            ),
        }
    }
}

impl std::error::Error for LayerError {}

/// Where a layer reports a [`LayerError`]. Its clones report to the same
/// place.
#[derive(Clone)]
pub struct Report {
    sink: Arc<dyn Fn(&LayerError) + Send + Sync>,
}

impl Report {
    /// One line on stderr.
    pub fn stderr() -> Self {
        Report {
            sink: Arc::new(|e| crate::trial::eprint(format_args!("error: {e}\n"))),
        }
    }

    /// Calls `sink` with each report.
    pub fn from_fn(sink: impl Fn(&LayerError) + Send + Sync + 'static) -> Self {
        Report {
            sink: Arc::new(sink),
        }
    }

    /// Keeps every report, for a test to count.
    pub fn collect() -> (Self, Reported) {
        let kept = Reported::default();
        let k = kept.clone();
        let report = Report {
            sink: Arc::new(move |e| k.0.lock().unwrap_or_else(|p| p.into_inner()).push(*e)),
        };
        (report, kept)
    }

    pub fn error(&self, e: &LayerError) {
        (self.sink)(e)
    }
}

impl fmt::Debug for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Report")
    }
}

/// The reports a [`Report::collect`] kept.
#[derive(Clone, Default, Debug)]
pub struct Reported(Arc<Mutex<Vec<LayerError>>>);

impl Reported {
    pub fn all(&self) -> Vec<LayerError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidr_ranges() {
        let ten: Cidr = "10.0.0.0/8".parse().unwrap();
        assert!(ten.contains("10.1.2.3".parse().unwrap()));
        assert!(ten.contains("::ffff:10.1.2.3".parse().unwrap()));
        assert!(!ten.contains("11.0.0.1".parse().unwrap()));
        let one: Cidr = "192.0.2.1".parse().unwrap();
        assert!(one.contains("192.0.2.1".parse().unwrap()));
        assert!(!one.contains("192.0.2.2".parse().unwrap()));
        let v6: Cidr = "2001:db8::/32".parse().unwrap();
        assert!(v6.contains("2001:db8:1::1".parse().unwrap()));
        assert!(!v6.contains("2001:db9::1".parse().unwrap()));
        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains("8.8.8.8".parse().unwrap()));
        assert!(!all.contains("::1".parse().unwrap()));
        assert!("10.0.0.1/8"
            .parse::<Cidr>()
            .unwrap_err()
            .contains("10.0.0.0/8"));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("ten".parse::<Cidr>().is_err());
        assert_eq!(ten.to_string(), "10.0.0.0/8");
    }

    #[test]
    fn policy_validation_in_order() {
        let s = Duration::from_secs(1);
        assert_eq!(
            Policy::new("", 0, Duration::ZERO).validate(),
            Err(PolicyError::EmptyName)
        );
        assert_eq!(
            Policy::new("é", 0, s).validate(),
            Err(PolicyError::InvalidName)
        );
        assert_eq!(
            Policy::new("a", 0, Duration::ZERO).validate(),
            Err(PolicyError::ZeroQuota)
        );
        assert_eq!(
            Policy::new("a", 1, Duration::from_millis(1500)).validate(),
            Err(PolicyError::WindowNotWholeSeconds)
        );
        assert_eq!(Policy::new("a \"b\"", 1, s).validate(), Ok(()));
        for e in [
            PolicyError::EmptyName,
            PolicyError::InvalidName,
            PolicyError::ZeroQuota,
            PolicyError::WindowNotWholeSeconds,
        ] {
            assert!(
                e.to_string().contains("use") || e.to_string().contains("give"),
                "{e}"
            );
        }
    }

    #[test]
    fn manual_clock_clones_share_time() {
        let c = ManualClock::new(Timestamp::from_secs(1));
        let d = c.clone();
        d.advance(Duration::from_nanos(5));
        assert_eq!(c.now(), Timestamp::from_nanos(1_000_000_005));
    }
}
