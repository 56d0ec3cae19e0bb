//! Lesson 09, going further: the same contract as `solutions/lesson_09.rs`,
//! built for speed and memory.
//!
//! governor's keyed limiter keeps every key it meets until you call
//! `retain_recent`, which looks at every key; the reference keeps its keys
//! in a `BTreeMap` ordered by fresh instant, and moves a key in that map on
//! every allowed request (for a token bucket, every allowed request moves
//! the TAT). This file changes three things, each measured in `bench/`:
//!
//! - **A lazy queue of fresh instants.** Each held key is filed once in a
//!   queue, at the fresh instant it had when filed, and is *not* moved when a
//!   request moves that instant later: a decision on a held key touches only
//!   the key. Fresh instants only move later, so the instant a key is filed
//!   at is never after its real one: the queue can be late, never early.
//!   Only when the queue reaches a key (in a sweep, or when the store is
//!   full) is the key looked at: forgotten if its real fresh instant has
//!   come, filed again at that instant if not. Each re-filing follows at
//!   least one decision that moved the key, so the queue costs O(1)
//!   amortised per decision (an entry drops through at most 128 buckets,
//!   one per bit of the instant: a constant, not a function of the keys),
//!   and a key is forgotten exactly when the contract says, never before
//!   its fresh instant.
//! - **A radix heap as the queue.** The instants it hands out never go
//!   back (a sweep never looks at an instant before the clock), which is
//!   what a radix heap needs: bucket `b` holds the entries whose instant
//!   first differs from the last one taken out at bit `b − 1`. Filing is a
//!   push on a `Vec`; taking the earliest empties the first non-empty
//!   bucket into lower ones, and an entry can only go down, 128 buckets at
//!   most. It is a timing wheel whose levels are the instant's bits: exact
//!   in `u128` (a fresh instant past `u64::MAX` is filed like any other, in
//!   a bucket no clock reaches), whatever the range of the instants.
//! - **A compact store, split in shards.** The keys are spread by hash over
//!   a few shards, each with its own `Mutex`: a decision on a held key locks
//!   its shard only. Each shard keeps its keys in a `Vec` of entries (the
//!   key's name held once, inline when it has at most 15 bytes), found
//!   through an open-addressing table of 8-byte slots (the hash and the
//!   entry's index) with a fast hash instead of std's SipHash. Everything
//!   that counts keys or forgets them (a new key, a sweep) takes one more
//!   lock, the room's, which holds the count and the queue; a call that
//!   must forget takes every shard's lock too, so that no decision moves a
//!   key or the clock while it does. Locks are always taken room first, then
//!   shards in order, so no two calls can each wait for a lock the other
//!   holds: a call may wait, but never forever.
//!
//! The clock is one `AtomicU64` moved on with `fetch_max` while the caller
//! holds the lock of every shard it reads, so that calls see the clock in
//! the order they change the store (lesson 06's `lazy_heap` alternative does
//! the same under its one lock).
//!
//! A fast hash is a trade-off, as in `solutions/lesson_06_further.rs`: keys
//! chosen by an attacker could pile up in one run of the table.

use std::time::Duration;

use super::sync::{AtomicU64, Mutex, Ordering};
use kata::memory::{metric, Bounds, Overflow, Rule};
use kata::{ConfigError, Decision, RateLimiter, Timestamp};
use metrics::{Counter, Gauge};

/// log2 of the number of shards: 8 are enough for a few cores to rarely
/// meet, and few enough that locking them all stays cheap.
const SHARD_BITS: u32 = 3;
const SHARDS: usize = 1 << SHARD_BITS;

pub struct BoundedLimiter {
    rule: Kind,
    max_keys: usize,
    overflow: Overflow,
    policy: String,
    /// The latest instant the limiter was given: it never looks back.
    clock: Padded<AtomicU64>,
    shards: [Padded<Mutex<Shard>>; SHARDS],
    room: Mutex<Room>,
    metrics: Metrics,
}

/// A value alone on its cache lines (two of 64 bytes: CPUs fetch lines in
/// pairs). Each call writes the clock and its shard's lock word: were they
/// on the lines of the settings or of another shard, two cores working on
/// different keys would take those lines from each other on every call.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

#[derive(Clone, Copy)]
enum Kind {
    FixedWindow { limit: u64, window: u64 },
    Gcra { interval: u64, tolerance: u64 },
}

/// A key's state in two words: `[window, count]` for a fixed window, the
/// TAT as `[low half, high half]` for the GCRA (a TAT can lie past
/// `u64::MAX`). Two `u64`s rather than a `u128`, which would align the
/// entry to 16 bytes and pad it. A fresh key's is all zeros.
#[derive(Clone, Copy, Default)]
struct State([u64; 2]);

fn split(x: u128) -> [u64; 2] {
    [x as u64, (x >> 64) as u64]
}

fn join([low, high]: [u64; 2]) -> u128 {
    (u128::from(high) << 64) | u128::from(low)
}

impl Kind {
    /// The rule's answer for a state at `now`, and the state after it when
    /// the request is allowed.
    fn decide(self, state: State, now: u64) -> (Decision, Option<State>) {
        match self {
            Kind::FixedWindow { limit, window } => {
                let k = now / window;
                let [held_k, held_count] = state.0;
                let count = if held_count > 0 && held_k == k {
                    held_count
                } else {
                    0
                };
                if count < limit {
                    let allowed = Decision::Allowed {
                        remaining: limit - count - 1,
                    };
                    (allowed, Some(State([k, count + 1])))
                } else {
                    let retry_after = Duration::from_nanos(window - now % window);
                    (Decision::Denied { retry_after }, None)
                }
            }
            Kind::Gcra {
                interval,
                tolerance,
            } => {
                let start = join(state.0).max(u128::from(now));
                // A TAT is never more than C·T ahead of the clock, so this
                // fits in u64, and so does everything below.
                let ahead = (start - u128::from(now)) as u64;
                if ahead > tolerance {
                    let retry_after = Duration::from_nanos(ahead - tolerance);
                    return (Decision::Denied { retry_after }, None);
                }
                // The room left after this request: now + τ − TAT′.
                let used = ahead + interval;
                let remaining = match tolerance.checked_sub(used) {
                    Some(room) => room / interval + 1,
                    None => 0,
                };
                let tat = start + u128::from(interval);
                (Decision::Allowed { remaining }, Some(State(split(tat))))
            }
        }
    }

    /// From this instant on, `state` answers as a fresh key's would.
    fn fresh_from(self, state: State) -> u128 {
        match self {
            Kind::FixedWindow { window, .. } => (u128::from(state.0[0]) + 1) * u128::from(window),
            Kind::Gcra { .. } => join(state.0),
        }
    }
}

/// A key's name, held once: up to 15 bytes in two words (bytes 0..8, then
/// bytes 8..15 with the length in the top byte, so that "a" and "a\0"
/// differ), a longer one on the heap.
enum Name {
    Short([u64; 2]),
    Long(Box<str>),
}

/// A key being looked for: its hash, and its short form if it has one.
struct Probe<'a> {
    key: &'a str,
    short: Option<[u64; 2]>,
    hash: u64,
}

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

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

/// One step of an Fx-style hash: a few cycles per word.
fn mix(hash: u64, word: u64) -> u64 {
    (hash.rotate_left(5) ^ word).wrapping_mul(SEED)
}

/// The last step of MurmurHash3: the multiplications above carry entropy
/// only upward, and the table picks slots with the low bits.
fn finish(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn hash_short([low, high]: [u64; 2]) -> u64 {
    finish(mix(mix(0, low), high))
}

fn hash_long(key: &str) -> u64 {
    let mut chunks = key.as_bytes().chunks_exact(8);
    let mut hash = 0;
    for chunk in &mut chunks {
        hash = mix(hash, word(chunk));
    }
    finish(mix(hash, word(chunks.remainder()) ^ key.len() as u64))
}

impl<'a> Probe<'a> {
    fn new(key: &'a str) -> Self {
        let bytes = key.as_bytes();
        let short = (bytes.len() < 16).then(|| {
            let (low, high) = bytes.split_at(bytes.len().min(8));
            [word(low), word(high) | (bytes.len() as u64) << 56]
        });
        let hash = match short {
            Some(words) => hash_short(words),
            None => hash_long(key),
        };
        Probe { key, short, hash }
    }

    /// The shard: bits of the hash the table does not use for its slots.
    fn shard(&self) -> usize {
        (self.hash >> 32) as usize & (SHARDS - 1)
    }
}

impl Name {
    fn is(&self, probe: &Probe) -> bool {
        match (self, probe.short) {
            (Name::Short(words), Some(short)) => *words == short,
            (Name::Long(name), None) => **name == *probe.key,
            _ => false,
        }
    }

    fn hash(&self) -> u64 {
        match self {
            Name::Short(words) => hash_short(*words),
            Name::Long(name) => hash_long(name),
        }
    }
}

/// A held key: 56 bytes, its name included when short.
struct Entry {
    name: Name,
    state: State,
    /// The instant the key is filed at in the room's queue: at or before
    /// the fresh instant of `state`.
    filed: [u64; 2],
}

/// A slot of the table: the low 32 bits of the key's hash, and the index of
/// its entry (`VACANT` for none).
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    entry: u32,
}

const VACANT: Slot = Slot {
    hash: 0,
    entry: u32::MAX,
};

/// Some of the held keys: entries in a `Vec` (freed ones reused), found
/// through an open-addressing table with linear probing, at most 3/4 full.
#[derive(Default)]
struct Shard {
    slots: Vec<Slot>,
    entries: Vec<Entry>,
    free: Vec<u32>,
    len: usize,
}

impl Shard {
    fn find(&self, probe: &Probe) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let hash = probe.hash as u32;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot.entry == VACANT.entry {
                return None;
            }
            if slot.hash == hash && self.entries[slot.entry as usize].name.is(probe) {
                return Some(slot.entry as usize);
            }
            at = (at + 1) & mask;
        }
    }

    /// Puts `slot` in the first vacant slot from its home on.
    fn place(slots: &mut [Slot], slot: Slot) {
        let mask = slots.len() - 1;
        let mut at = slot.hash as usize & mask;
        while slots[at].entry != VACANT.entry {
            at = (at + 1) & mask;
        }
        slots[at] = slot;
    }

    fn insert(&mut self, probe: &Probe, state: State, filed: u128) -> usize {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let mut slots = vec![VACANT; (self.slots.len() * 2).max(8)];
            for slot in self.slots.iter().filter(|s| s.entry != VACANT.entry) {
                Shard::place(&mut slots, *slot);
            }
            self.slots = slots;
        }
        let name = match probe.short {
            Some(words) => Name::Short(words),
            None => Name::Long(probe.key.into()),
        };
        let entry = Entry {
            name,
            state,
            filed: split(filed),
        };
        let index = match self.free.pop() {
            Some(index) => {
                self.entries[index as usize] = entry;
                index as usize
            }
            None => {
                self.entries.push(entry);
                self.entries.len() - 1
            }
        };
        let slot = Slot {
            hash: probe.hash as u32,
            entry: u32::try_from(index).expect("fewer than 2^32 keys in a shard"),
        };
        Shard::place(&mut self.slots, slot);
        self.len += 1;
        index
    }

    /// Forgets the key of entry `index`. Linear probing needs no tombstone:
    /// the slots after the hole that may move back into it do.
    fn remove(&mut self, index: usize) {
        let mask = self.slots.len() - 1;
        let hash = self.entries[index].name.hash() as u32;
        let mut hole = hash as usize & mask;
        while self.slots[hole].entry as usize != index {
            hole = (hole + 1) & mask;
        }
        let mut next = (hole + 1) & mask;
        loop {
            let slot = self.slots[next];
            if slot.entry == VACANT.entry {
                break;
            }
            // It may move back if its home is not after the hole: its
            // distance from home is at least the hole's distance.
            let home = slot.hash as usize & mask;
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.slots[hole] = slot;
                hole = next;
            }
            next = (next + 1) & mask;
        }
        self.slots[hole] = VACANT;
        // Drops a long name now, not when the entry is reused.
        self.entries[index].name = Name::Short([0; 2]);
        self.free.push(index as u32);
        self.len -= 1;
    }
}

/// A queue entry: the shard in the low bits, the entry's index above.
fn item(shard: usize, index: usize) -> u32 {
    u32::try_from(index << SHARD_BITS | shard).expect("fewer than 2^29 keys in a shard")
}

fn unitem(item: u32) -> (usize, usize) {
    (item as usize & (SHARDS - 1), item as usize >> SHARD_BITS)
}

/// A radix heap of the held keys by the instant each is filed at. Every
/// instant it holds is at or after `last`; bucket 0 holds those equal to
/// `last`, bucket `b` those whose highest bit that differs from `last` is
/// bit `b − 1`.
struct Queue {
    last: u128,
    buckets: Vec<Vec<u32>>,
}

impl Queue {
    fn new() -> Self {
        Queue {
            last: 0,
            buckets: (0..=128).map(|_| Vec::new()).collect(),
        }
    }

    fn bucket(&self, at: u128) -> usize {
        (128 - (at ^ self.last).leading_zeros()) as usize
    }

    fn push(&mut self, at: u128, item: u32) {
        debug_assert!(at >= self.last, "a radix heap never goes back");
        let bucket = self.bucket(at);
        self.buckets[bucket].push(item);
    }

    /// The earliest instant filed, if it is at or before `upto`: then bucket
    /// 0 holds the entries filed at it. `filed` tells an entry's instant.
    ///
    /// Emptying a bucket moves `last` up, to the earliest instant in it but
    /// never past `upto`: new keys are filed after the clock, so `last` may
    /// pass the clock only when no new key can come before the clock
    /// reaches it (see `earliest`).
    fn front(&mut self, upto: u128, filed: impl Fn(u32) -> u128) -> Option<u128> {
        loop {
            if !self.buckets[0].is_empty() {
                return (self.last <= upto).then_some(self.last);
            }
            let b = self.buckets.iter().position(|b| !b.is_empty())?;
            // The least instant bucket b can hold: last's bits above b − 1,
            // then bit b − 1 set.
            let above = self.last.checked_shr(b as u32).unwrap_or(0);
            let least = above.checked_shl(b as u32).unwrap_or(0) | 1 << (b - 1);
            if least > upto {
                return None;
            }
            let items = std::mem::take(&mut self.buckets[b]);
            let earliest = items.iter().map(|&i| filed(i)).min().expect("not empty");
            // At least `least`: every entry goes to a lower bucket.
            self.last = earliest.min(upto);
            for i in items {
                let bucket = self.bucket(filed(i));
                self.buckets[bucket].push(i);
            }
        }
    }
}

/// What counting and forgetting keys need: under a lock of its own, taken
/// before any shard's.
struct Room {
    held: usize,
    queue: Queue,
}

impl Room {
    /// Forgets every key whose fresh instant is at or before `now`; returns
    /// how many. Keys the queue reaches that are still live are filed again
    /// at their fresh instant.
    fn forget_fresh<S>(&mut self, shards: &mut [S], rule: Kind, now: u64) -> usize
    where
        S: std::ops::DerefMut<Target = Shard>,
    {
        let now = u128::from(now);
        let mut forgotten = 0;
        while self.queue.front(now, |i| filed(shards, i)).is_some() {
            let i = self.queue.buckets[0].pop().expect("a front entry");
            let (s, index) = unitem(i);
            let shard = &mut *shards[s];
            let fresh = rule.fresh_from(shard.entries[index].state);
            if fresh <= now {
                shard.remove(index);
                forgotten += 1;
            } else {
                shard.entries[index].filed = split(fresh);
                self.queue.push(fresh, i);
            }
        }
        self.held -= forgotten;
        forgotten
    }

    /// The earliest fresh instant of the held keys, in a full store where
    /// none is forgettable. The queue may then move `last` past the clock:
    /// a new key comes only once a key is forgotten, that is once the clock
    /// has reached a fresh instant, and none is before this one.
    fn earliest<S>(&mut self, shards: &mut [S], rule: Kind) -> u128
    where
        S: std::ops::DerefMut<Target = Shard>,
    {
        loop {
            let first = self
                .queue
                .front(u128::MAX, |i| filed(shards, i))
                .expect("a full store holds a key");
            let i = *self.queue.buckets[0].last().expect("a front entry");
            let (s, index) = unitem(i);
            let entry = &mut shards[s].entries[index];
            let fresh = rule.fresh_from(entry.state);
            if fresh == first {
                return first;
            }
            self.queue.buckets[0].pop();
            entry.filed = split(fresh);
            self.queue.push(fresh, i);
        }
    }
}

fn filed<S: std::ops::Deref<Target = Shard>>(shards: &[S], i: u32) -> u128 {
    let (s, index) = unitem(i);
    join(shards[s].entries[index].filed)
}

struct Metrics {
    allowed: Counter,
    denied: Counter,
    keys: Gauge,
    evictions: Counter,
    overflows: Counter,
}

fn lock<T>(m: &Mutex<T>) -> impl std::ops::DerefMut<Target = T> + '_ {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl BoundedLimiter {
    /// The rule's errors first (lesson 01's order), then `ZeroKeys`.
    pub fn new(rule: Rule, bounds: Bounds) -> Result<Self, ConfigError> {
        rule.validate()?;
        bounds.validate()?;
        let kind = match rule {
            Rule::FixedWindow { limit, window } => Kind::FixedWindow {
                limit,
                window: window.as_nanos() as u64,
            },
            Rule::TokenBucket {
                capacity,
                refill_every,
            } => {
                let interval = refill_every.as_nanos() as u64;
                Kind::Gcra {
                    interval,
                    tolerance: (capacity - 1) * interval,
                }
            }
        };
        let policy = bounds.policy;
        let outcome = |o: &'static str| metrics::counter!(metric::DECISIONS, metric::POLICY => policy.clone(), metric::OUTCOME => o);
        let metrics = Metrics {
            allowed: outcome(metric::ALLOWED),
            denied: outcome(metric::DENIED),
            keys: metrics::gauge!(metric::KEYS, metric::POLICY => policy.clone()),
            evictions: metrics::counter!(metric::EVICTIONS, metric::POLICY => policy.clone()),
            overflows: metrics::counter!(metric::OVERFLOWS, metric::POLICY => policy.clone()),
        };
        Ok(BoundedLimiter {
            rule: kind,
            max_keys: bounds.max_keys,
            overflow: bounds.overflow,
            policy,
            clock: Padded(AtomicU64::new(0)),
            shards: std::array::from_fn(|_| Padded(Mutex::new(Shard::default()))),
            room: Mutex::new(Room {
                held: 0,
                queue: Queue::new(),
            }),
            metrics,
        })
    }

    /// The name the metrics carry.
    pub fn policy(&self) -> &str {
        &self.policy
    }

    /// Moves the clock on to `now`; the instant to answer at. Called only
    /// with the lock of every shard the call reads.
    fn tick(&self, now: u64) -> u64 {
        // A load first: a call behind the clock leaves its line shared
        // instead of taking it from the other cores to write what is there.
        let seen = self.clock.load(Ordering::Acquire);
        if now <= seen {
            return seen;
        }
        self.clock.fetch_max(now, Ordering::AcqRel).max(now)
    }

    /// The rule's answer for a held key. Its place in the queue stays where
    /// it is, before its fresh instant: the queue files it again when it
    /// gets there.
    fn answer(&self, entry: &mut Entry, now: u64) -> Decision {
        let (decision, next) = self.rule.decide(entry.state, now);
        if let Some(state) = next {
            entry.state = state;
        }
        decision
    }

    /// A new key, with room for it: its first answer.
    fn add(
        &self,
        room: &mut Room,
        shard: &mut Shard,
        s: usize,
        probe: &Probe,
        now: u64,
    ) -> Decision {
        let (decision, next) = self.rule.decide(State::default(), now);
        let state = next.expect("a fresh key's first request is allowed");
        let fresh = self.rule.fresh_from(state);
        let index = shard.insert(probe, state, fresh);
        room.queue.push(fresh, item(s, index));
        room.held += 1;
        self.metrics.keys.set(room.held as f64);
        decision
    }

    /// The answer, with the store's bound, without counting it in the
    /// decision metric (`check` and `Shadow` count it each their way).
    pub fn decide(&self, key: &str, now: Timestamp) -> Decision {
        let now = now.as_nanos();
        let probe = Probe::new(key);
        let s = probe.shard();
        // A held key: its shard's lock is all it needs.
        {
            let mut shard = lock(&self.shards[s]);
            if let Some(index) = shard.find(&probe) {
                let now = self.tick(now);
                return self.answer(&mut shard.entries[index], now);
            }
        }
        // A key not held (or not yet: another call may add it meanwhile,
        // so look again under the locks).
        let mut room = lock(&self.room);
        if room.held < self.max_keys {
            let mut shard = lock(&self.shards[s]);
            let now = self.tick(now);
            if let Some(index) = shard.find(&probe) {
                return self.answer(&mut shard.entries[index], now);
            }
            return self.add(&mut room, &mut shard, s, &probe, now);
        }
        // A full store: forget what can be, with every shard locked (in
        // order) so that no call moves a key or the clock meanwhile.
        let mut shards: [_; SHARDS] = std::array::from_fn(|i| lock(&self.shards[i]));
        let now = self.tick(now);
        if let Some(index) = shards[s].find(&probe) {
            return self.answer(&mut shards[s].entries[index], now);
        }
        let forgotten = room.forget_fresh(&mut shards, self.rule, now);
        if forgotten > 0 {
            self.metrics.evictions.increment(forgotten as u64);
            return self.add(&mut room, &mut shards[s], s, &probe, now);
        }
        self.metrics.overflows.increment(1);
        match self.overflow {
            Overflow::Admit => Decision::Allowed { remaining: 0 },
            Overflow::Deny => {
                let wait = room.earliest(&mut shards, self.rule) - u128::from(now);
                Decision::Denied {
                    retry_after: Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)),
                }
            }
        }
    }

    /// Forgets every key whose state is a fresh key's at `now` (or at the
    /// latest instant given, if later); returns how many.
    pub fn sweep(&self, now: Timestamp) -> usize {
        let mut room = lock(&self.room);
        let mut shards: [_; SHARDS] = std::array::from_fn(|i| lock(&self.shards[i]));
        let now = self.tick(now.as_nanos());
        let forgotten = room.forget_fresh(&mut shards, self.rule, now);
        if forgotten > 0 {
            self.metrics.evictions.increment(forgotten as u64);
            self.metrics.keys.set(room.held as f64);
        }
        forgotten
    }

    /// How many keys are held.
    pub fn keys_held(&self) -> usize {
        lock(&self.room).held
    }
}

impl RateLimiter for BoundedLimiter {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let decision = self.decide(key, now);
        match decision {
            Decision::Allowed { .. } => self.metrics.allowed.increment(1),
            Decision::Denied { .. } => self.metrics.denied.increment(1),
        }
        decision
    }
}

/// Decides and counts, but never denies: a new limit watched on real
/// traffic before it is enforced.
pub struct Shadow {
    limiter: BoundedLimiter,
    allowed: Counter,
    shadowed: Counter,
}

impl Shadow {
    pub fn new(limiter: BoundedLimiter) -> Self {
        let outcome = |o: &'static str| metrics::counter!(metric::DECISIONS, metric::POLICY => limiter.policy().to_string(), metric::OUTCOME => o);
        Shadow {
            allowed: outcome(metric::ALLOWED),
            shadowed: outcome(metric::SHADOWED),
            limiter,
        }
    }

    /// The limiter it decides with, to sweep it or ask how many keys it holds.
    pub fn limiter(&self) -> &BoundedLimiter {
        &self.limiter
    }
}

impl RateLimiter for Shadow {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        match self.limiter.decide(key, now) {
            allowed @ Decision::Allowed { .. } => {
                self.allowed.increment(1);
                allowed
            }
            Decision::Denied { .. } => {
                self.shadowed.increment(1);
                Decision::Allowed { remaining: 0 }
            }
        }
    }
}
