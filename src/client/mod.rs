//! The `http-client` kind (lesson 11): the client's half of rate limiting.
//! The learner writes a tower `Layer` in front of an HTTP client service
//! that meets 429s and 503s without making things worse: it honours
//! `Retry-After` and the RateLimit fields, retries only what is safe with
//! capped exponential backoff and full jitter, spends a retry budget every
//! clone shares, paces itself to the quota the server announces, and gives
//! back what a cancelled request held.
//!
//! This module is the kind's seam (its `variant!`, `Lesson`, `trials` and
//! `comparison`) and the contract's types a learner's file uses:
//!
//! - [`Clock`]: time and sleeping, read only through it ([`ManualClock`]
//!   for the checks, whose sleeps end when the checks move time on;
//!   [`TokioClock`] for real use);
//! - [`ClientPolicy`], [`BudgetPolicy`] and [`PolicyError`];
//! - [`Jitter`], the seeded random numbers every backoff draws from;
//! - [`ClientError`], what a client service fails with;
//! - [`parse_list`] and [`Item`]: the RateLimit fields as structured fields
//!   (RFC 9651), and [`copy_request`], a request again for a retry.
//!
//! Below it: [`sim`] (time that moves only when every request waits, the
//! server the properties talk to and the log of what happened), [`model`]
//! (the contract, checking a log event by event), [`gen`] (the scripts),
//! [`serve`] (a real lesson 07 server on loopback), [`checks`] and
//! [`suite`] (the checks as trials).

use std::fmt;
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::{HeaderValue, Request};

pub use crate::time::Timestamp;
/// HTTP-dates (RFC 9110), for `Retry-After`: `httpdate::parse_http_date`.
pub use httpdate;

pub mod checks;
pub mod draw;
pub mod drive;
pub mod gen;
pub mod model;
pub mod script;
pub mod serve;
pub mod sim;
pub mod suite;
mod variant;

pub use crate::__client_variant as variant;
pub use suite::trials;

/// A lesson of this kind.
pub type Lesson = checks::ClientLesson;

/// What `cargo run -- compare 11 [NAME]` draws: one of the named scripts
/// ([`checks::SNAPSHOTS`], the first by default); anything else is refused
/// with the names there are.
pub fn comparison(which: Option<&str>) -> Result<String, String> {
    let which = which.map_or(checks::SNAPSHOTS[0].0, str::trim);
    match checks::SNAPSHOTS.iter().find(|(n, _)| *n == which) {
        Some((name, _)) => Ok(name.to_string()),
        None => Err(format!(
            "no script is named {which:?}; name one of {}",
            checks::SNAPSHOTS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The `RateLimit` field (IETF httpapi draft, revision 10): what is left
/// of a quota, `r`, and `t`, the seconds until more quota is available.
pub const RATELIMIT: &str = "ratelimit";

/// The `RateLimit-Policy` field: the quota `q` per window of `w` seconds.
pub const RATELIMIT_POLICY: &str = "ratelimit-policy";

/// A request that carries this header may be retried whatever its method:
/// the server answers a repeat with the first answer.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// A future that ends at an instant of a [`Clock`].
pub use crate::virtual_time::Sleep;

/// Where a client's time comes from. The client reads time and sleeps only
/// through it.
pub trait Clock: Clone + Send + Sync + 'static {
    /// Now, on a monotonic clock (it never jumps back).
    fn now(&self) -> Timestamp;
    /// The wall-clock time at `now()`, for HTTP-dates.
    fn wall(&self) -> SystemTime;
    /// A future that ends once `now()` has reached `at` (at once if it has).
    fn sleep_until(&self, at: Timestamp) -> Sleep;
}

/// Where the checks' wall clock starts: 2026-01-01T00:00:00Z.
pub const WALL_ORIGIN_SECS: u64 = 1_767_225_600;

/// The checks' clock: it moves only when told to, and its clones share
/// one time and one set of sleeps, which end when the time is moved past
/// them (the virtual time of [`crate::virtual_time`]). Its wall clock reads
/// [`WALL_ORIGIN_SECS`] plus `now()`.
pub use crate::virtual_time::VirtualClock as ManualClock;

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        ManualClock::now(self)
    }

    fn wall(&self) -> SystemTime {
        model::wall_at(self.now())
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep {
        ManualClock::sleep_until(self, at)
    }
}

/// Real time for a real client: the monotonic clock since it was made,
/// tokio's timers and the system's wall clock. (Made inside a tokio
/// runtime, whose timers its sleeps use.)
#[derive(Clone, Copy, Debug)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    pub fn new() -> TokioClock {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep {
        Box::pin(tokio::time::sleep_until(
            self.origin + Duration::from_nanos(at.as_nanos()),
        ))
    }
}

/// How a client retries (see lessons/CONTRACT.md, lesson 11).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ClientPolicy {
    /// Attempts per request, the first one included: at least 1.
    pub max_attempts: u32,
    /// The most the first retry's jitter draws: more than zero.
    pub base: Duration,
    /// The most any retry's jitter draws: at least `base`.
    pub cap: Duration,
    /// The retry budget every clone of the layer shares.
    pub budget: BudgetPolicy,
    /// The seed of the layer's [`Jitter`].
    pub seed: u64,
}

impl ClientPolicy {
    /// The most retry `k` (1 for the first retry) draws: `base × 2^(k−1)`,
    /// at most `cap`.
    pub fn cap_of_retry(&self, k: u32) -> Duration {
        let doubled = 2u128.saturating_pow(k.saturating_sub(1));
        let nanos = self.base.as_nanos().saturating_mul(doubled);
        Duration::from_nanos(u64::try_from(nanos.min(self.cap.as_nanos())).unwrap_or(u64::MAX))
    }
}

/// A retry budget, as tower's: each request deposits, each retry withdraws,
/// and a reserve per second lets a few retries through even when few
/// requests were made.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BudgetPolicy {
    /// How long a deposit or a withdrawal counts: whole seconds, 1 to 60.
    pub ttl: Duration,
    /// Retries per second of `ttl` the budget allows on top of the deposits.
    pub min_per_sec: u32,
    /// Retries allowed per hundred requests: 0 to 1000.
    pub retry_percent: u32,
}

impl BudgetPolicy {
    /// The budget's reserve, in hundredths of a retry.
    pub fn reserve(&self) -> u64 {
        u64::from(self.min_per_sec) * self.ttl.as_secs() * 100
    }

    /// The length of one of the ten slots of `ttl`.
    pub fn slot(&self) -> Duration {
        self.ttl / 10
    }
}

/// What `RetryLayer::new` and `RetryBudget::new` refuse, in this order.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PolicyError {
    /// `max_attempts` is 0: not even the first attempt.
    ZeroAttempts,
    /// `base` is zero: every backoff would be zero.
    ZeroBase,
    /// `cap` is less than `base`.
    CapBelowBase,
    /// The budget's `ttl` is not a whole number of seconds from 1 to 60.
    TtlOutOfRange,
    /// The budget's `retry_percent` is over 1000.
    PercentOutOfRange,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyError::ZeroAttempts => "max_attempts must be at least 1",
            PolicyError::ZeroBase => "base must be more than zero",
            PolicyError::CapBelowBase => "cap must be at least base",
            PolicyError::TtlOutOfRange => "the budget's ttl must be whole seconds, 1 to 60",
            PolicyError::PercentOutOfRange => "the budget's retry_percent must be at most 1000",
        })
    }
}

impl std::error::Error for PolicyError {}

/// What a client service fails with: the request got no answer (the
/// connection was refused or broke). Always worth a retry, when the request
/// is safe to repeat.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ClientError(pub String);

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no answer: {}", self.0)
    }
}

impl std::error::Error for ClientError {}

/// Seeded random numbers for backoff: the same seed draws the same values.
/// (A copy draws what the original draws: clones of a layer share one.)
#[derive(Clone, Debug)]
pub struct Jitter {
    state: u64,
}

impl Jitter {
    pub fn seeded(seed: u64) -> Jitter {
        Jitter { state: seed }
    }

    /// A duration from 0 to `cap`, both included, uniformly, in whole
    /// nanoseconds.
    pub fn up_to(&mut self, cap: Duration) -> Duration {
        // splitmix64
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let most = u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX);
        let value = ((u128::from(z) * (u128::from(most) + 1)) >> 64) as u64;
        sim::note_draw(cap, value);
        Duration::from_nanos(value)
    }
}

/// A member of a structured-field list (RFC 9651) as the RateLimit fields
/// use it: a name (a string or a token) and integer parameters.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Item {
    pub name: String,
    pub params: Vec<(String, u64)>,
}

impl Item {
    /// The parameter `key`, if the item has it as a whole number.
    pub fn param(&self, key: &str) -> Option<u64> {
        self.params.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
    }
}

/// The members of a `RateLimit` or `RateLimit-Policy` field, in order:
/// `"api";r=0;t=7, "daily";r=10` is two items. A member that is not a
/// string or token with `;key=value` parameters makes the whole field
/// unreadable (`None`), as RFC 9651 asks; a parameter whose value is not a
/// whole number is left out, and of a key given twice the last counts.
/// (One field line: a field split over several lines is read from its
/// first.)
pub fn parse_list(value: &HeaderValue) -> Option<Vec<Item>> {
    let text = value.to_str().ok()?;
    let mut items = vec![];
    let mut rest = text.trim_start_matches(' ');
    loop {
        let (item_name, after) = name(rest)?;
        let mut item = Item {
            name: item_name,
            params: vec![],
        };
        rest = after;
        while let Some(after) = rest.strip_prefix(';') {
            let after = after.trim_start_matches(' ');
            let end = after
                .find(|c: char| {
                    !(c.is_ascii_lowercase() || c.is_ascii_digit() || "_-.*".contains(c))
                })
                .unwrap_or(after.len());
            let key = &after[..end];
            if key.is_empty() {
                return None;
            }
            rest = &after[end..];
            // A parameter without a value is `true`, and a string or
            // token value is skipped: only whole numbers are kept, the last
            // one of a key counting, as RFC 9651 says.
            item.params.retain(|(k, _)| k != key);
            if let Some(value) = rest.strip_prefix('=') {
                let end = if value.starts_with('"') {
                    let (_, after) = name(value)?;
                    value.len() - after.len()
                } else {
                    value.find([';', ',', ' ', '\t']).unwrap_or(value.len())
                };
                if let Ok(n) = value[..end].parse::<u64>() {
                    item.params.push((key.to_string(), n));
                }
                rest = &value[end..];
            }
        }
        items.push(item);
        rest = rest.trim_start_matches([' ', '\t']);
        match rest.strip_prefix(',') {
            Some(after) => rest = after.trim_start_matches([' ', '\t']),
            None if rest.is_empty() => return Some(items),
            None => return None,
        }
    }
}

/// A structured-field string or token at the start of `text`, and the rest.
fn name(text: &str) -> Option<(String, &str)> {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => out.push(chars.next()?.1),
                '"' => return Some((out, &quoted[i + 1..])),
                c => out.push(c),
            }
        }
        return None;
    }
    let end = text.find([';', ',', ' ', '\t']).unwrap_or(text.len());
    let token = &text[..end];
    let first = token.chars().next()?;
    (first.is_ascii_alphabetic() || first == '*').then(|| (token.to_string(), &text[end..]))
}

/// The same request again, for another attempt: method, URI, version,
/// headers and body.
pub fn copy_request(request: &Request<Bytes>) -> Request<Bytes> {
    let mut copy = Request::new(request.body().clone());
    *copy.method_mut() = request.method().clone();
    *copy.uri_mut() = request.uri().clone();
    *copy.version_mut() = request.version();
    *copy.headers_mut() = request.headers().clone();
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_read_as_rfc_9651_says() {
        let items = parse_list(&HeaderValue::from_static(r#""a\"b";r=0;t=7, daily;r=10"#)).unwrap();
        assert_eq!(items[0].name, "a\"b");
        assert_eq!(items[0].param("t"), Some(7));
        assert_eq!(items[1].name, "daily");
        assert_eq!(items[1].param("r"), Some(10));
        assert_eq!(parse_list(&HeaderValue::from_static("\"open")), None);
        let items = parse_list(&HeaderValue::from_static(r#""a";t=5;c="x, y";t=9"#)).unwrap();
        assert_eq!(items[0].params, [("t".to_string(), 9)]);
        assert_eq!(parse_list(&HeaderValue::from_static("a;r=1 b")), None);
    }

    #[test]
    fn jitter_stays_within_its_cap_and_repeats_with_its_seed() {
        let (mut a, mut b) = (Jitter::seeded(7), Jitter::seeded(7));
        for cap in [0, 1, 10, 1_000_000_000] {
            let d = a.up_to(Duration::from_nanos(cap));
            assert!(d <= Duration::from_nanos(cap));
            assert_eq!(d, b.up_to(Duration::from_nanos(cap)));
        }
    }

    #[test]
    fn the_cap_doubles_up_to_the_policy_cap() {
        let p = ClientPolicy {
            max_attempts: 3,
            base: Duration::from_millis(100),
            cap: Duration::from_millis(350),
            budget: BudgetPolicy {
                ttl: Duration::from_secs(10),
                min_per_sec: 1,
                retry_percent: 20,
            },
            seed: 1,
        };
        let caps: Vec<u128> = (1..=4).map(|k| p.cap_of_retry(k).as_millis()).collect();
        assert_eq!(caps, [100, 200, 350, 350]);
        assert_eq!(p.cap_of_retry(200), p.cap);
    }
}
