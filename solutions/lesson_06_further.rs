//! Lesson 06, going further: the same GCRA, with a lookup that takes no lock.
//!
//! The reference read-locks its map on every decision. A read lock is an
//! atomic read-modify-write to take it and another to give it back, on a
//! word every thread shares: with the compare-and-swap of the TAT, three of
//! them per decision, and they are most of its cost. governor's `DashMap`
//! pays the same three. Here a decision on a known key is one
//! compare-and-swap and a few plain loads:
//!
//! - **An open-addressing table of atomics, only ever added to.** A slot holds
//!   a key (a short one inline, as two words) and the address of the key's
//!   TAT. A slot is written once, by the only writer, and published by its
//!   `tag` word with `Release`; a reader that sees the tag with `Acquire`
//!   sees the rest. Slots are never emptied (lesson 06 forgets no key), so a
//!   reader can walk a probe sequence without any lock.
//! - **TATs that never move.** The TATs live in chunks that are never moved
//!   or freed while the limiter lives, and a slot holds the TAT's address.
//!   When the table grows, the new table copies the addresses, not the TATs:
//!   a reader still on the old table swaps the very same atomic, and no
//!   decision is lost. The old tables are kept until the limiter is dropped
//!   (a reader may still be walking one); together they are smaller than
//!   the current one.
//! - **One writer.** A new key takes a `Mutex`, looks again (another thread
//!   may have added it meanwhile), and adds it, growing the table first when
//!   it is three quarters full. Readers never wait for it.
//! - **A fast hash and short keys inline**, as before: an Fx-style
//!   multiply-rotate hash, and keys of up to 15 bytes packed in two words.
//!   (Keys chosen by an attacker could pile up in one probe run: a trade-off
//!   to make knowingly when keys come from clients.)
//!
//! The decision itself is the reference's CAS loop, unchanged.

use std::hash::Hasher;
use std::time::Duration;

use super::sync::{AtomicU64, AtomicUsize, Mutex, Ordering};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};

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

    fn write_u64(&mut self, word: u64) {
        self.add(word);
    }

    fn finish(&self) -> u64 {
        // The multiply carries entropy upward only; the table picks a slot
        // with the low bits, so fold the top half down (as rustc-hash 2 does).
        self.hash.rotate_left(26)
    }
}

/// A slot's tag before a key is published in it.
const EMPTY: u64 = 0;
/// The top byte of a long key's tag (a short key's is its length + 1, at most 16).
const LONG: u64 = 0xff << 56;

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

/// A short key's hash, from its two words.
fn short_hash(low: u64, tag: u64) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write_u64(low);
    hasher.write_u64(tag);
    hasher.finish()
}

/// A long key's hash, from its bytes.
fn long_hash(bytes: &[u8]) -> u64 {
    let mut hasher = FxHasher::default();
    hasher.write(bytes);
    hasher.finish()
}

/// What a lookup compares a slot with, computed once per call.
struct Probe<'k> {
    key: &'k str,
    /// A short key: bytes 8..15 with its length + 1 in the top byte, so that
    /// no key's tag is `EMPTY` and "a" differs from "a\0". A long key:
    /// `LONG` with its length.
    tag: u64,
    /// A short key: bytes 0..8. A long key: 0 (its slot holds its address).
    low: u64,
    hash: u64,
}

impl<'k> Probe<'k> {
    fn of(key: &'k str) -> Probe<'k> {
        let bytes = key.as_bytes();
        if bytes.len() < 16 {
            let (low, high) = bytes.split_at(bytes.len().min(8));
            let (low, tag) = (word(low), word(high) | (bytes.len() as u64 + 1) << 56);
            Probe {
                key,
                tag,
                low,
                hash: short_hash(low, tag),
            }
        } else {
            Probe {
                key,
                tag: LONG | bytes.len() as u64,
                low: 0,
                hash: long_hash(bytes),
            }
        }
    }

    fn is_long(&self) -> bool {
        self.tag & LONG == LONG
    }
}

/// One key: written once by the writer, `tag` last.
struct Slot {
    tag: AtomicU64,
    /// A short key's bytes 0..8, or the address of a long key's bytes.
    low: AtomicU64,
    /// The address of the key's TAT.
    tat: AtomicUsize,
}

struct Table {
    slots: Box<[Slot]>,
    mask: usize,
}

impl Table {
    fn with_capacity(capacity: usize) -> Table {
        let slots = (0..capacity)
            .map(|_| Slot {
                tag: AtomicU64::new(EMPTY),
                low: AtomicU64::new(0),
                tat: AtomicUsize::new(0),
            })
            .collect();
        Table {
            slots,
            mask: capacity - 1,
        }
    }

    /// The key's slot (`Ok`), or the empty slot where its probe run ends
    /// (`Err`). The table always has an empty slot, so the walk ends.
    fn find(&self, probe: &Probe) -> Result<&Slot, &Slot> {
        let mut i = probe.hash as usize & self.mask;
        loop {
            let slot = &self.slots[i];
            let tag = slot.tag.load(Ordering::Acquire);
            if tag == EMPTY {
                return Err(slot);
            }
            if tag == probe.tag && Self::holds(slot, probe) {
                return Ok(slot);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Whether `slot`, whose tag equals the probe's, holds the probe's key.
    fn holds(slot: &Slot, probe: &Probe) -> bool {
        let low = slot.low.load(Ordering::Relaxed);
        if !probe.is_long() {
            return low == probe.low;
        }
        // SAFETY: a long key's bytes were leaked before its tag was published
        // (the `Acquire` load of the tag sees them) and are freed only when
        // the limiter is dropped; the tag holds their length.
        let bytes = unsafe { std::slice::from_raw_parts(low as *const u8, probe.key.len()) };
        bytes == probe.key.as_bytes()
    }

    /// The TAT a published slot points to.
    fn tat(slot: &Slot) -> &AtomicU64 {
        // SAFETY: the TAT was created before the slot's tag was published,
        // lives in a chunk that is neither moved nor freed before the limiter
        // is dropped, and `&self` of the limiter outlives this borrow.
        unsafe { &*(slot.tat.load(Ordering::Relaxed) as *const AtomicU64) }
    }

    /// Publishes a key in its empty slot. Only the writer calls this.
    fn publish(slot: &Slot, tag: u64, low: u64, tat: usize) {
        slot.low.store(low, Ordering::Relaxed);
        slot.tat.store(tat, Ordering::Relaxed);
        slot.tag.store(tag, Ordering::Release);
    }
}

/// The table at `address`.
///
/// # Safety
///
/// `address` is one of the limiter's tables (made by `Box::into_raw`, freed
/// only when the limiter is dropped), and `'a` ends before the limiter is
/// dropped.
unsafe fn table<'a>(address: usize) -> &'a Table {
    // SAFETY: the caller's promise.
    unsafe { &*(address as *const Table) }
}

/// What only the writer touches, behind the mutex.
struct Writer {
    /// Every table ever published, the current one last, as addresses
    /// (`Box::into_raw`): readers may still walk an old one.
    tables: Vec<usize>,
    keys: usize,
    /// The TATs, in chunks of growing size, never moved.
    chunks: Vec<Box<[AtomicU64]>>,
    /// How many TATs of the last chunk are handed out.
    used: usize,
}

impl Writer {
    fn current_address(&self) -> usize {
        *self.tables.last().expect("a table")
    }

    fn current(&self) -> &Table {
        // SAFETY: the writer lives inside the limiter.
        unsafe { table(self.current_address()) }
    }

    /// The address of a fresh TAT of 0.
    fn new_tat(&mut self) -> usize {
        let full = self.chunks.last().is_none_or(|c| self.used == c.len());
        if full {
            // Small first (a limiter of few keys stays small), then at most
            // 4,096 TATs (32 KiB), so that little is handed out unused.
            let size = self.chunks.last().map_or(4, |c| (c.len() * 2).min(4_096));
            self.chunks
                .push((0..size).map(|_| AtomicU64::new(0)).collect());
            self.used = 0;
        }
        let chunk = self.chunks.last().expect("a chunk");
        self.used += 1;
        &chunk[self.used - 1] as *const AtomicU64 as usize
    }

    /// Replaces the table by one twice its size, with every key's slot
    /// copied: the same tag, key and TAT address. Published only when full.
    fn grow(&mut self, table: &AtomicUsize) {
        let old = self.current();
        let new = Table::with_capacity(old.slots.len() * 2);
        for slot in old.slots.iter() {
            let tag = slot.tag.load(Ordering::Relaxed);
            if tag == EMPTY {
                continue;
            }
            let low = slot.low.load(Ordering::Relaxed);
            let hash = if tag & LONG == LONG {
                // SAFETY: as in `Table::holds`; the tag holds the length.
                long_hash(unsafe {
                    std::slice::from_raw_parts(low as *const u8, (tag & !LONG) as usize)
                })
            } else {
                short_hash(low, tag)
            };
            // Every key is distinct, so its walk ends at an empty slot.
            let mut i = hash as usize & new.mask;
            while new.slots[i].tag.load(Ordering::Relaxed) != EMPTY {
                i = (i + 1) & new.mask;
            }
            Table::publish(&new.slots[i], tag, low, slot.tat.load(Ordering::Relaxed));
        }
        let address = Box::into_raw(Box::new(new)) as usize;
        self.tables.push(address);
        // Readers that load the new address see every slot copied above.
        table.store(address, Ordering::Release);
    }
}

pub struct Gcra {
    interval: u64,
    tolerance: u64,
    /// The current table's address: readers start here.
    table: AtomicUsize,
    writer: Mutex<Writer>,
}

/// The first table's slots: small, so that a limiter of few keys stays
/// small (and the race checks' models stay small too).
const FIRST_CAPACITY: usize = 8;

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
        let first = Box::into_raw(Box::new(Table::with_capacity(FIRST_CAPACITY))) as usize;
        Ok(Gcra {
            interval,
            tolerance: (capacity - 1) * interval,
            table: AtomicUsize::new(first),
            writer: Mutex::new(Writer {
                tables: vec![first],
                keys: 0,
                chunks: Vec::new(),
                used: 0,
            }),
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

    /// The table at `address`, one of those published.
    fn table_at(&self, address: usize) -> &Table {
        // SAFETY: `&self` ends before the limiter is dropped.
        unsafe { table(address) }
    }

    /// The key's TAT, added under the writer's lock if no table has it yet.
    fn insert(&self, probe: &Probe) -> &AtomicU64 {
        let mut writer = self
            .writer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let table = self.table_at(writer.current_address());
        let mut slot = match table.find(probe) {
            // Another thread added the key since this one looked.
            Ok(slot) => return Table::tat(slot),
            Err(empty) => empty,
        };
        if (writer.keys + 1) * 4 > table.slots.len() * 3 {
            writer.grow(&self.table);
            let grown = self.table_at(writer.current_address());
            slot = grown.find(probe).err().expect("a new key is in no table");
        }
        let low = if probe.is_long() {
            // Freed in `Drop`.
            Box::into_raw(Box::<str>::from(probe.key)) as *const u8 as u64
        } else {
            probe.low
        };
        let tat = writer.new_tat();
        writer.keys += 1;
        Table::publish(slot, probe.tag, low, tat);
        Table::tat(slot)
    }
}

impl RateLimiter for Gcra {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let probe = Probe::of(key);
        let table = self.table_at(self.table.load(Ordering::Acquire));
        let tat = match table.find(&probe) {
            Ok(slot) => Table::tat(slot),
            Err(_) => self.insert(&probe),
        };
        self.decide(tat, now.as_nanos())
    }
}

impl Drop for Gcra {
    fn drop(&mut self) {
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // The long keys' bytes, once each: every table holds the same addresses.
        for slot in writer.current().slots.iter() {
            let tag = slot.tag.load(Ordering::Relaxed);
            if tag != EMPTY && tag & LONG == LONG {
                let bytes = slot.low.load(Ordering::Relaxed) as *mut u8;
                let len = (tag & !LONG) as usize;
                // SAFETY: leaked by `insert` as a `Box<str>` of `len` bytes,
                // freed here once.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(bytes, len)) });
            }
        }
        for &address in &writer.tables {
            // SAFETY: each made by `Box::into_raw`, freed here once.
            drop(unsafe { Box::from_raw(address as *mut Table) });
        }
    }
}
