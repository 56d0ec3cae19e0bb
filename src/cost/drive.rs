//! What a lesson 13 subject is to the checks: the functions `variant!`
//! wraps a compiled file into ([`CostVariant`]), over std and over loom.

use std::time::Duration;

use super::{ConfigError, CostError, Decision, Limit, RedisSettings, SetupError, Timestamp};
use crate::kind::Compiled;

/// The answer to one request.
pub type Answer = Result<Decision, CostError>;

/// What the checks ask of each of the learner's types: a request of `cost`
/// with one key per limit (one key for a single bucket), charged or
/// peeked.
pub trait Limiter: Send + Sync {
    fn check(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer;
    fn peek(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer;
}

pub type Built<E> = Result<Box<dyn Limiter>, E>;

/// One compiled lesson 13 file, as `variant!` wraps it.
#[derive(Clone, Copy)]
pub struct CostVariant {
    /// The file, relative to the kata's root, and its text.
    pub file: (&'static str, &'static str),
    /// Its `TokenBucket::new(capacity, refill_every)`.
    pub bucket: fn(u64, Duration) -> Built<ConfigError>,
    /// Its `Gcra::new(capacity, refill_every)`, over std and over loom.
    pub gcra: fn(u64, Duration) -> Built<ConfigError>,
    pub gcra_loom: fn(u64, Duration) -> Built<ConfigError>,
    /// Its `Limits::new(limits)`, over std and over loom.
    pub limits: fn(&[Limit]) -> Built<SetupError>,
    pub limits_loom: fn(&[Limit]) -> Built<SetupError>,
    /// Its `RedisLimits::new(limits, settings)`.
    pub redis: fn(&[Limit], RedisSettings) -> Built<SetupError>,
}

impl Compiled for CostVariant {
    fn file(&self) -> &'static str {
        self.file.0
    }

    fn source(&self) -> &'static str {
        self.file.1
    }
}

impl CostVariant {
    /// A single bucket (`check_n(key, n, now)`) as built, asked with its one
    /// key.
    pub fn one<T: Send + Sync + 'static>(
        built: Result<T, ConfigError>,
        check_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
        peek_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
    ) -> Built<ConfigError> {
        Ok(Box::new(One {
            inner: built?,
            check_n,
            peek_n,
        }))
    }

    /// Several limits (`check(keys, n, now)`) as built.
    pub fn many<T: Send + Sync + 'static>(
        built: Result<T, SetupError>,
        check: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
        peek: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
    ) -> Built<SetupError> {
        Ok(Box::new(Many {
            inner: built?,
            check,
            peek,
        }))
    }
}

struct One<T> {
    inner: T,
    check_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
    peek_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
}

impl<T: Send + Sync> Limiter for One<T> {
    fn check(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer {
        (self.check_n)(&self.inner, keys[0], cost, now)
    }

    fn peek(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer {
        (self.peek_n)(&self.inner, keys[0], cost, now)
    }
}

struct Many<T> {
    inner: T,
    check: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
    peek: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
}

impl<T: Send + Sync> Limiter for Many<T> {
    fn check(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer {
        (self.check)(&self.inner, keys, cost, now)
    }

    fn peek(&self, keys: &[&str], cost: u64, now: Timestamp) -> Answer {
        (self.peek)(&self.inner, keys, cost, now)
    }
}
