//! Lesson 06, going further: the same GCRA, built for speed and memory.
//!
//! Three changes to the reference, each measured in `bench/`:
//!
//! - **Shards.** The keys are spread over 64 maps, each behind its own
//!   `RwLock`, so inserting a new key write-locks one shard, not all of them.
//! - **A fast hash.** std's `HashMap` hashes with SipHash, which resists
//!   collision attacks but costs tens of nanoseconds for a short key. An
//!   Fx-style multiply-rotate hash costs a few. (Keys chosen by an attacker
//!   could then pile up in one bucket: a trade-off to make knowingly.)
//! - **Short keys inline.** A key of up to 15 bytes is stored in a 16-byte
//!   as two words inside the map's entry instead of in a heap allocation of its
//!   own: no allocation per key, and 24 bytes per entry with the TAT. Longer
//!   keys go to a second map with boxed keys.
//!
//! The decision itself is the reference's CAS loop, unchanged.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::time::Duration;

use super::sync::{AtomicU64, Ordering, RwLock};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

const SHARDS: usize = 64;

/// The multiply-rotate hash of the Fx family: a few nanoseconds for a short key.
#[derive(Default, Clone, Copy)]
pub struct FxHasher {
    hash: u64,
}

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        // Byte by byte: a variable-length copy into a buffer that is then read
        // as one word stalls the CPU's store forwarding, and costs more than
        // the whole hash.
        let rest = chunks.remainder();
        let last = rest
            .iter()
            .rev()
            .fold(0u64, |word, byte| (word << 8) | u64::from(*byte));
        self.add(last ^ rest.len() as u64);
    }

    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    fn finish(&self) -> u64 {
        // The multiply carries entropy upward only; the map picks buckets with
        // the low bits and the shard with the high ones, so fold the top half
        // down (as rustc-hash 2 does).
        self.hash.rotate_left(26)
    }
}

type Fx = BuildHasherDefault<FxHasher>;

/// A key of up to 15 bytes in two words: bytes 0..8, then bytes 8..15 with
/// the length in the top byte (so that "a" and "a\0" differ).
type Short = (u64, u64);

/// Up to 8 bytes as one little-endian word, zero-padded.
fn word(bytes: &[u8]) -> u64 {
    match <[u8; 8]>::try_from(bytes) {
        Ok(eight) => u64::from_le_bytes(eight),
        Err(_) => bytes
            .iter()
            .rev()
            .fold(0, |word, byte| (word << 8) | u64::from(*byte)),
    }
}

fn short(key: &str) -> Option<Short> {
    let bytes = key.as_bytes();
    (bytes.len() < 16).then(|| {
        let (low, high) = bytes.split_at(bytes.len().min(8));
        (word(low), word(high) | (bytes.len() as u64) << 56)
    })
}

#[derive(Default)]
struct Shard {
    short: HashMap<Short, AtomicU64, Fx>,
    long: HashMap<Box<str>, AtomicU64, Fx>,
}

pub struct Gcra {
    interval: u64,
    tolerance: u64,
    shards: Vec<RwLock<Shard>>,
}

impl Gcra {
    pub fn new(capacity: u64, refill_every: Duration) -> Result<Self, ConfigError> {
        if capacity == 0 {
            return Err(ConfigError::ZeroLimit);
        }
        if refill_every.is_zero() {
            return Err(ConfigError::ZeroPeriod);
        }
        let interval = u64::try_from(refill_every.as_nanos()).map_err(|_| ConfigError::TooLarge)?;
        capacity
            .checked_mul(interval)
            .ok_or(ConfigError::TooLarge)?;
        Ok(Gcra {
            interval,
            tolerance: (capacity - 1) * interval,
            shards: (0..SHARDS).map(|_| RwLock::new(Shard::default())).collect(),
        })
    }

    fn decide(&self, tat: &AtomicU64, now: u64) -> Decision {
        let mut seen = tat.load(Ordering::Acquire);
        loop {
            let start = seen.max(now);
            let ahead = start - now;
            if ahead > self.tolerance {
                return Decision::Denied {
                    retry_after: Duration::from_nanos(ahead - self.tolerance),
                };
            }
            let next = start.saturating_add(self.interval);
            match tat.compare_exchange_weak(seen, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    let slack = u128::from(now) + u128::from(self.tolerance);
                    let remaining = match slack.checked_sub(u128::from(next)) {
                        Some(room) => room / u128::from(self.interval) + 1,
                        None => 0,
                    };
                    return Decision::Allowed {
                        remaining: remaining as u64,
                    };
                }
                Err(actual) => seen = actual,
            }
        }
    }
}

impl RateLimiter for Gcra {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let inline = short(key);
        let mut hasher = FxHasher::default();
        match &inline {
            Some(k) => k.hash(&mut hasher),
            None => key.hash(&mut hasher),
        }
        // The high bits pick the shard; the map uses the whole hash.
        let shard = &self.shards[(hasher.finish() >> 58) as usize % SHARDS];
        {
            let maps = shard
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let found = match &inline {
                Some(k) => maps.short.get(k),
                None => maps.long.get(key),
            };
            if let Some(tat) = found {
                return self.decide(tat, now);
            }
        }
        let mut maps = shard
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let tat = match inline {
            Some(k) => maps.short.entry(k).or_insert_with(|| AtomicU64::new(0)),
            None => maps
                .long
                .entry(key.into())
                .or_insert_with(|| AtomicU64::new(0)),
        };
        self.decide(tat, now)
    }
}
