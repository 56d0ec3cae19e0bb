//! The `in-flight` kind (lesson 12): limits on what is in flight. The
//! learner writes permits every clone shares, a concurrency-limit layer
//! whose `poll_ready` reserves a permit that the response's body holds
//! until it is done, a load shedder that answers 503 at once (with a share
//! kept for critical requests, and a limit per key), nginx's delay queue
//! (a leaky bucket that delays instead of rejecting, up to a bounded
//! depth), and two controllers that find the limit from latency (AIMD and
//! a latency gradient).
//!
//! This module is the kind's seam (its `variant!`, `Lesson`, `trials` and
//! `comparison`) and the contract's types a learner's file uses:
//!
//! - [`Clock`]: the delay layer's time and sleeps ([`ManualClock`] in the
//!   checks, whose sleeps end when the checks move time on);
//! - [`hold_until_done`]: a response body that keeps a guard until the body
//!   has ended or is dropped;
//! - [`Priority`] and the headers the checks' requests carry ([`KEY`],
//!   [`PRIORITY`]);
//! - the policies ([`ShedPolicy`], [`DelayPolicy`], [`AimdPolicy`],
//!   [`GradientPolicy`]), [`PolicyError`], [`Admit`] and [`Sample`].
//!
//! Below it: [`sim`] (scripts of requests on virtual time, a slow inner
//! service that counts what is in flight from inside, and the log),
//! [`model`] (the contract: what each layer's log must be, the delay
//! queue's answers, the controllers' limits), [`gen`] (the scripts),
//! [`adapt`] (a server whose latency grows with load, and the controllers
//! against it), [`serve`] (the layers in a real axum server on loopback),
//! [`draw`], [`checks`] and [`suite`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::HeaderMap;
use http_body::{Frame, SizeHint};

pub use crate::time::Timestamp;

pub mod adapt;
pub mod checks;
pub mod draw;
pub mod drive;
pub mod gen;
pub mod model;
pub mod race;
pub mod serve;
pub mod sim;
pub mod suite;
mod variant;
pub mod verdict;

pub use crate::__inflight_variant as variant;
pub use suite::trials;

/// A lesson of this kind.
pub type Lesson = checks::InflightLesson;

/// What `cargo run -- compare 12 [NAME]` draws: one of the named scripts
/// ([`gen::SNAPSHOTS`], the first by default); anything else is refused
/// with the names there are.
pub fn comparison(which: Option<&str>) -> Result<String, String> {
    let which = which.map_or(gen::SNAPSHOTS[0].0, str::trim);
    match gen::SNAPSHOTS.iter().find(|(n, _)| *n == which) {
        Some((name, _)) => Ok(name.to_string()),
        // The controllers against the simulated server, and the table.
        None if which == "adaptive" => Ok(which.to_string()),
        None => Err(format!(
            "no script is named {which:?}; name one of {}, or adaptive",
            gen::SNAPSHOTS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The header that names a request's key (its API key, say) for the
/// limit per key. A request without it has the key `""`.
pub const KEY: &str = "x-api-key";

/// The header that marks a request critical: `x-priority: critical`.
pub const PRIORITY: &str = "x-priority";

/// How much a request matters when permits run short.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Priority {
    /// May take only the permits not reserved.
    Normal,
    /// May take every permit, the reserved share too.
    Critical,
}

impl Priority {
    /// `Critical` when the `x-priority` header is `critical` (in any case,
    /// trimmed), else `Normal`.
    pub fn of(headers: &HeaderMap) -> Priority {
        match headers.get(PRIORITY).and_then(|v| v.to_str().ok()) {
            Some(v) if v.trim().eq_ignore_ascii_case("critical") => Priority::Critical,
            _ => Priority::Normal,
        }
    }
}

/// A future that ends at an instant of a [`Clock`].
pub use crate::virtual_time::Sleep;

/// The checks' clock: it moves only when told to, and its clones share one
/// time and one set of sleeps, which end when the time is moved past them.
pub use crate::virtual_time::VirtualClock as ManualClock;

/// Where the delay layer's time comes from: it reads time and sleeps only
/// through it.
pub trait Clock: Clone + Send + Sync + 'static {
    fn now(&self) -> Timestamp;
    /// A future that ends once `now()` has reached `at` (at once if it has).
    fn sleep_until(&self, at: Timestamp) -> Sleep;
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        ManualClock::now(self)
    }

    fn sleep_until(&self, at: Timestamp) -> Sleep {
        ManualClock::sleep_until(self, at)
    }
}

/// `body`, keeping `guard` until the body has ended (its last frame was
/// read, or it failed) or is dropped, whichever comes first: what a
/// response holds its permit with.
pub fn hold_until_done<G: Send + 'static>(body: Body, guard: G) -> Body {
    Body::new(Held {
        body,
        guard: Some(guard),
    })
}

struct Held<G> {
    body: Body,
    guard: Option<G>,
}

// Nothing is pinned in place: the body is polled through `Pin::new`.
impl<G> Unpin for Held<G> {}

impl<G: Send + 'static> http_body::Body for Held<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.guard = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// What the checks' inner services fail with: the request reached them and
/// got no answer (a backend that reset the connection, a timeout). A layer
/// passes it on as it came.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct InnerError(pub String);

impl fmt::Display for InnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no answer: {}", self.0)
    }
}

impl std::error::Error for InnerError {}

/// The load shedder's terms.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ShedPolicy {
    /// The most requests in flight at once.
    pub limit: usize,
    /// How many of them only a critical request may take.
    pub reserved: usize,
    /// The most requests of one key in flight at once.
    pub per_key: usize,
    /// What a shed answer's `Retry-After` says (whole seconds, at least 1).
    pub retry_after: Duration,
}

/// nginx's `limit_req zone=… rate=R burst=B delay=D`: `rate` requests a
/// second, a queue of at most `burst` requests, the first `delay` of which
/// go at once (`delay = burst` is nginx's `nodelay`, `delay = 0` its
/// default).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DelayPolicy {
    pub rate: u32,
    pub burst: u32,
    pub delay: u32,
}

impl DelayPolicy {
    /// The time between two requests at `rate`: `1 s / rate`, in whole ns.
    pub fn interval(&self) -> u64 {
        1_000_000_000 / u64::from(self.rate.max(1))
    }
}

/// What the delay queue answers a request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Admit {
    /// Send it on now.
    Now,
    /// Send it on after this long.
    After(Duration),
    /// The queue is full: refused; it would be admitted this much later.
    Reject(Duration),
}

/// What a controller learns of one request when it ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Sample {
    /// From when it was sent on until its answer ended.
    pub latency: Duration,
    /// How many requests were in flight when it was sent on, itself too.
    pub in_flight: usize,
    /// It failed or timed out: a sign of overload, whatever its latency.
    pub dropped: bool,
}

/// AIMD's terms: the limit starts at `initial`, stays within
/// `min..=max`, grows by one after a good sample and is cut to
/// `backoff_percent` of itself after a sample slower than `timeout` or
/// dropped.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct AimdPolicy {
    pub min: usize,
    pub max: usize,
    pub initial: usize,
    pub backoff_percent: u32,
    pub timeout: Duration,
}

/// The gradient's terms: the limit starts at `initial` and stays within
/// `min..=max`; a latency up to `tolerance_percent` of the least seen is
/// no sign of a queue.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GradientPolicy {
    pub min: usize,
    pub max: usize,
    pub initial: usize,
    pub tolerance_percent: u32,
}

/// The bounds every controller's policy has, checked in this order.
fn bounds(min: usize, max: usize, initial: usize) -> Result<(), PolicyError> {
    if min == 0 {
        return Err(PolicyError::ZeroLimit);
    }
    if max < min {
        return Err(PolicyError::MaxBelowMin);
    }
    if !(min..=max).contains(&initial) {
        return Err(PolicyError::InitialOutOfBounds);
    }
    Ok(())
}

impl AimdPolicy {
    /// `min`, `max` and `initial`, checked as the contract says.
    pub fn bounds(&self) -> Result<(), PolicyError> {
        bounds(self.min, self.max, self.initial)
    }
}

impl GradientPolicy {
    /// `min`, `max` and `initial`, checked as the contract says.
    pub fn bounds(&self) -> Result<(), PolicyError> {
        bounds(self.min, self.max, self.initial)
    }
}

/// Why a policy is refused.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PolicyError {
    /// A limit (or a controller's `min`) of 0: nothing could ever run.
    ZeroLimit,
    /// `reserved` is not below `limit`: a normal request could never run.
    ReservedNotBelowLimit,
    /// `per_key` is 0.
    ZeroPerKey,
    /// `retry_after` is zero or not whole seconds.
    RetryAfterNotWholeSeconds,
    /// The delay queue's `rate` is 0.
    ZeroRate,
    /// `delay` is above `burst`.
    DelayAboveBurst,
    /// A controller's `max` is below its `min`.
    MaxBelowMin,
    /// A controller's `initial` is outside `min..=max`.
    InitialOutOfBounds,
    /// AIMD's `backoff_percent` is outside 1..=99.
    BackoffOutOfRange,
    /// The gradient's `tolerance_percent` is below 100.
    ToleranceBelow100,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PolicyError::ZeroLimit => "a limit must be at least 1",
            PolicyError::ReservedNotBelowLimit => "reserved must be below limit",
            PolicyError::ZeroPerKey => "per_key must be at least 1",
            PolicyError::RetryAfterNotWholeSeconds => {
                "retry_after must be whole seconds, at least 1"
            }
            PolicyError::ZeroRate => "rate must be at least 1 a second",
            PolicyError::DelayAboveBurst => "delay must be at most burst",
            PolicyError::MaxBelowMin => "max must be at least min",
            PolicyError::InitialOutOfBounds => "initial must be within min..=max",
            PolicyError::BackoffOutOfRange => "backoff_percent must be 1 to 99",
            PolicyError::ToleranceBelow100 => "tolerance_percent must be at least 100",
        })
    }
}

impl std::error::Error for PolicyError {}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[test]
    fn a_held_guard_goes_when_the_body_ends() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        struct Tell(std::sync::mpsc::Sender<()>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        let body = hold_until_done(Body::from("hello"), Tell(tx));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut body = body;
        let frame = runtime.block_on(body.frame()).unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), "hello");
        assert!(rx.try_recv().is_err(), "held while a frame may come");
        assert!(runtime.block_on(body.frame()).is_none());
        assert!(rx.try_recv().is_ok(), "given back at the end");
    }

    #[test]
    fn priority_reads_the_header() {
        let mut h = HeaderMap::new();
        assert_eq!(Priority::of(&h), Priority::Normal);
        h.insert(PRIORITY, " Critical ".parse().unwrap());
        assert_eq!(Priority::of(&h), Priority::Critical);
        h.insert(PRIORITY, "high".parse().unwrap());
        assert_eq!(Priority::of(&h), Priority::Normal);
    }
}
