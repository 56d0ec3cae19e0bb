//! What a limiter answers, what it refuses to be built with, and the trait
//! every concurrent lesson implements.

use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::time::{group_digits, Timestamp};

/// The answer to one request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Decision {
    /// Let it through. `remaining` is how many more requests for the same key
    /// would be allowed at this same timestamp.
    Allowed { remaining: u64 },
    /// Refuse it. `retry_after` is the shortest wait (at least 1 ns) after
    /// which a request for the same key would be allowed, had no other request
    /// for that key come in between.
    Denied { retry_after: Duration },
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed { .. })
    }
}

/// One decision in the kata's compact notation: `+r` for allowed with `r`
/// remaining, `-d` for denied with a retry after `d` nanoseconds. The same
/// notation is used in the example tables of every lesson's tests.
impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Decision::Allowed { remaining } => write!(f, "+{remaining}"),
            Decision::Denied { retry_after } => write!(f, "-{}", retry_after.as_nanos()),
        }
    }
}

/// Spelled out for people: `allowed, 1 remaining` / `denied, retry after 1_000ns`.
pub fn describe(decision: &Decision) -> String {
    match decision {
        Decision::Allowed { remaining } => format!("allowed, {remaining} remaining"),
        Decision::Denied { retry_after } => format!(
            "denied, retry after {}ns",
            group_digits(retry_after.as_nanos())
        ),
    }
}

/// Why a limiter cannot be built with the configuration it was given.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ConfigError {
    /// A limit or capacity of zero would deny every request forever.
    ZeroLimit,
    /// A zero-length window or refill interval has no meaning.
    ZeroPeriod,
    /// The window, the refill interval, or (token buckets) the time to fill the
    /// whole bucket does not fit in the clock's 64-bit nanoseconds.
    TooLarge,
    /// A bounded limiter (lesson 09) that may hold no key could track no
    /// request.
    ZeroKeys,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::ZeroLimit => {
                "the limit (or capacity) is 0, so every request would be denied; use at least 1"
            }
            ConfigError::ZeroPeriod => {
                "the window (or refill interval) is 0 ns long, which has no meaning; use at least 1 ns"
            }
            ConfigError::TooLarge => {
                "the window, refill interval or time to fill the bucket is longer than the clock \
                 can count (u64::MAX nanoseconds, about 584 years); use a shorter one"
            }
            ConfigError::ZeroKeys => {
                "max_keys is 0, so the limiter could hold no key and track no request; use at least 1"
            }
        })
    }
}

impl std::error::Error for ConfigError {}

/// A limiter shared between threads (lessons 02 and later).
///
/// `check` takes `&self`: many threads call it at once through an `Arc`, so the
/// limiter's state must be protected by the primitives of the lesson's `sync`
/// module.
pub trait RateLimiter: Send + Sync {
    /// Decides the request of `key` arriving at `now`.
    fn check(&self, key: &str, now: Timestamp) -> Decision;
}

/// Lesson 10's limiter: [`RateLimiter`] for a limiter that waits on the
/// network. `check` returns a future, so a caller on tokio (a tower layer,
/// an axum handler) awaits Redis's answer without holding the thread its
/// other requests run on. The future is `Send`: a multi-threaded runtime
/// may move it between threads at an `.await` (a `std::sync::MutexGuard`
/// kept across one is refused here, at compile time).
///
/// An `async fn check(&self, key: &str, now: Timestamp) -> Decision` in the
/// `impl` implements it.
pub trait AsyncRateLimiter: Send + Sync {
    /// Decides the request of `key` arriving at `now`.
    fn check(&self, key: &str, now: Timestamp) -> impl Future<Output = Decision> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_notation() {
        assert_eq!(Decision::Allowed { remaining: 3 }.to_string(), "+3");
        let denied = Decision::Denied {
            retry_after: Duration::from_nanos(1500),
        };
        assert_eq!(denied.to_string(), "-1500");
        assert_eq!(describe(&denied), "denied, retry after 1_500ns");
        assert!(!denied.is_allowed());
        assert!(Decision::Allowed { remaining: 0 }.is_allowed());
    }

    #[test]
    fn config_errors_explain_themselves() {
        for e in [
            ConfigError::ZeroLimit,
            ConfigError::ZeroPeriod,
            ConfigError::TooLarge,
            ConfigError::ZeroKeys,
        ] {
            let text = e.to_string();
            assert!(text.contains("use"), "{text:?} should say what to do");
            assert!(text.len() > 40, "{text:?} should be a sentence");
        }
    }
}
