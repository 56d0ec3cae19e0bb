//! Lesson 05: the token bucket.
//!
//! Read `lessons/lesson_05.md` first. Then make every test of
//! `cargo test --test lesson_05` pass by filling in this file.
//!
//! The rule, from lessons/CONTRACT.md: the bucket holds at most `capacity` tokens and
//! gains one token every `refill_every`, continuously (a fraction of the
//! interval counts toward the next token); a new key's bucket is full. A
//! request is allowed iff the bucket holds at least one whole token, and then
//! takes one. Take sync primitives from the lesson's facade only, as below.

use std::collections::HashMap;
use std::time::Duration;

#[allow(unused_imports)] // use what you need, from here only
use super::sync::{Arc, Mutex, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

pub struct TokenBucket {
    // For each key: how full its bucket was at the last call, and when that
    // was. Think about the unit: whole tokens lose the fractions.
    keys: HashMap<String, ()>,
}

impl TokenBucket {
    /// In this order: a `capacity` of 0 is `ZeroLimit`; a zero `refill_every`
    /// is `ZeroPeriod`; a `refill_every` longer than `u64::MAX` nanoseconds,
    /// or a `capacity × refill_every` beyond it, is `TooLarge`.
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        let _ = (capacity, refill_every);
        todo!("lesson 05: validate the configuration and build the limiter")
    }
}

impl RateLimiter for TokenBucket {
    /// Decides the request of `key` at `now`: refill for the time that passed,
    /// cap at the capacity, and take a token if there is a whole one.
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let _ = (&self.keys, key, now);
        todo!("lesson 05: refill, then take a token if there is one")
    }
}
