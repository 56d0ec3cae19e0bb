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
    pub file: &'static str,
    pub source: &'static str,
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
        self.file
    }
}

/// A single bucket (`check_n(key, n, now)`), asked with its one key.
pub fn single<T: Send + Sync + 'static>(
    inner: T,
    check_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
    peek_n: for<'a> fn(&T, &'a str, u64, Timestamp) -> Answer,
) -> Box<dyn Limiter> {
    Box::new(One {
        inner,
        check_n,
        peek_n,
    })
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

/// Several limits (`check(keys, n, now)`).
pub fn several<T: Send + Sync + 'static>(
    inner: T,
    check: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
    peek: for<'a, 'b> fn(&T, &'a [&'b str], u64, Timestamp) -> Answer,
) -> Box<dyn Limiter> {
    Box::new(Many { inner, check, peek })
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
