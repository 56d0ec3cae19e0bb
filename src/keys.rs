//! Keys a limiter can confuse: names a limiter might use for the empty key,
//! keys that end in digits (a name made of a key and a window number without
//! a separator merges them), long keys around the lengths at which keys get
//! cut or hashed (multi-byte characters straddling each cut), and keys that
//! collide under the hashes people key state by: FNV-1a, FxHash and std's
//! `DefaultHasher::new()` (SipHash-1-3 with fixed keys). The collisions are
//! computed here, not pasted, so they hold for exactly the hashes written
//! below.
//!
//! A full 64-bit collision is computed for FxHash only (its rounds can be
//! inverted); for FNV-1a 64 and SipHash the pairs collide in 32 of their 64
//! bits, which is what a state keyed by a truncated hash (`as u32`) merges.
//! A state keyed by a whole 64-bit SipHash or FNV-1a 64 merges no key a
//! test can find: it is wrong, and that is said in the lesson texts.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

/// A group of keys a limiter must keep apart, and what makes them alike.
#[derive(Clone, Debug)]
pub struct LookAlike {
    pub keys: Vec<String>,
    pub why: String,
    /// Whether the keys end in digits: each pair of them whose names with a
    /// window number appended meet (`a1` and 0, `a` and 10) is also asked
    /// in those two windows, each key on its own clock.
    pub numbered: bool,
}

/// Names a limiter might give a request without a key; each beside `""`.
pub const SENTINELS: [&str; 14] = [
    "anonymous",
    "anon",
    "unknown",
    "default",
    "guest",
    "-",
    "_",
    "*",
    "0",
    "null",
    "none",
    "nil",
    "undefined",
    "(none)",
];

/// Lengths at which keys get cut, or from which they get hashed.
pub const CUTS: [usize; 6] = [8, 16, 32, 64, 128, 256];

/// Every group of look-alike keys, in a fixed order.
pub fn look_alikes() -> &'static [LookAlike] {
    static ALL: OnceLock<Vec<LookAlike>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = vec![
            LookAlike {
                keys: std::iter::once("")
                    .chain(SENTINELS)
                    .map(String::from)
                    .collect(),
                why: "the empty key and names a limiter might use for it".into(),
                numbered: false,
            },
            LookAlike {
                keys: ["a", "a1", "a11", "a111", "1", "11", "", "user:1", "user:11"]
                    .map(String::from)
                    .to_vec(),
                why: "keys that end in digits and are prefixes of each other, each asked in a \
                      window of its own: a state named by key and window number without a \
                      separator (`a1` in window 0 and `a` in window 10 are both `a10`) merges them"
                    .into(),
                numbered: true,
            },
        ];
        all.extend(long_keys());
        all.extend(collisions());
        all
    })
}

/// The pairs of a numbered group whose names meet once a window number is
/// appended, each with its window: `(a1, 0, a, 10)`. Window numbers up to
/// 112; both orders of each pair.
pub fn meeting_names(group: &LookAlike) -> Vec<(&str, u64, &str, u64)> {
    let mut out = Vec::new();
    for x in &group.keys {
        for i in 0..=112u64 {
            let name = format!("{x}{i}");
            for y in &group.keys {
                // `y` then the decimal digits of a window number `j`.
                let Some(digits) = name.strip_prefix(y.as_str()) else {
                    continue;
                };
                let j = match digits.parse::<u64>() {
                    Ok(j) if digits == j.to_string() && j <= 112 => j,
                    _ => continue,
                };
                if x != y && i != j {
                    out.push((x.as_str(), i, y.as_str(), j));
                }
            }
        }
    }
    out
}

/// For each cut: ASCII keys that agree on their first `cut` bytes (and
/// one of exactly `cut` bytes), and keys whose byte `cut` falls inside a
/// two-, three- or four-byte character at every offset.
fn long_keys() -> Vec<LookAlike> {
    let ascii = |n: usize| -> String {
        "tenant-00042/user-0000000001/route-"
            .chars()
            .cycle()
            .take(n)
            .collect()
    };
    let mut out = Vec::new();
    for cut in CUTS {
        let base = ascii(cut);
        out.push(LookAlike {
            keys: vec![format!("{base}1"), format!("{base}2"), base.clone()],
            why: format!(
                "keys that agree on their first {cut} bytes: a key cut to {cut} bytes, or hashed \
                 from there on, merges them"
            ),
            numbered: false,
        });
        for c in ['\u{e9}', '\u{20ac}', '\u{1f600}'] {
            let width = c.len_utf8();
            for before in 1..width {
                // Byte `cut` is `before` bytes into a character.
                let head = ascii(cut - before);
                let tail: String = std::iter::repeat_n(c, 3).collect();
                out.push(LookAlike {
                    keys: vec![format!("{head}{tail}1"), format!("{head}{tail}2")],
                    why: format!(
                        "keys of {}-byte characters in which byte {cut} falls {} into a \
                         character: cutting there (`&key[..{cut}]`) panics",
                        width,
                        crate::text::count(before, "byte")
                    ),
                    numbered: false,
                });
            }
        }
    }
    out
}

/// Pairs of keys that collide under each hash, found by searching.
fn collisions() -> Vec<LookAlike> {
    let mut out = Vec::new();
    // Numbered keys, their numbers spread by an odd multiplier (a bijection,
    // so no two are the same): sequential names collide late under FNV-1a.
    let numbered = |i: u64| format!("client-{:x}", i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut pair = |name: &str, hash: &dyn Fn(&str) -> u32| {
        let (a, b) = birthday(numbered, hash);
        out.push(LookAlike {
            keys: vec![a, b],
            why: format!("keys whose {name} is the same"),
            numbered: false,
        });
    };
    pair("32-bit FNV-1a of the bytes", &|k| fnv1a_32(k.as_bytes()));
    pair("64-bit FNV-1a of the bytes, cut to 32 bits", &|k| {
        fnv1a_64(k.as_bytes()) as u32
    });
    pair(
        "64-bit FNV-1a as a Hasher (fnv crate), cut to 32 bits",
        &|k| hash_with(fnv::Fnv64::default(), k) as u32,
    );
    pair(
        "std DefaultHasher::new() (SipHash-1-3), cut to 32 bits",
        &|k| hash_with(std::hash::DefaultHasher::new(), k) as u32,
    );
    pair(
        "std DefaultHasher::new() (SipHash-1-3), its high 32 bits",
        &|k| (hash_with(std::hash::DefaultHasher::new(), k) >> 32) as u32,
    );
    for len in [24, 40, 72, 136, 264] {
        let (a, b) = fx_collision(len);
        out.push(LookAlike {
            keys: vec![a, b],
            why: format!(
                "keys of {len} bytes whose 64-bit FxHash (rustc's FxHasher, via `str`'s Hash) \
                 is the same: a state keyed by a fast 64-bit hash of long keys merges them"
            ),
            numbered: false,
        });
    }
    out
}

/// The first two numbered keys whose hashes agree.
fn birthday(name: impl Fn(u64) -> String, hash: &dyn Fn(&str) -> u32) -> (String, String) {
    let mut seen: HashMap<u32, u64> = HashMap::new();
    for i in 0.. {
        let key = name(i);
        if let Some(j) = seen.insert(hash(&key), i) {
            return (name(j), key);
        }
    }
    unreachable!("a 32-bit hash collides within 2^32 + 1 keys")
}

/// 32-bit FNV-1a.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// 64-bit FNV-1a.
pub fn fnv1a_64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn hash_with(mut hasher: impl Hasher, key: &str) -> u64 {
    key.hash(&mut hasher);
    hasher.finish()
}

mod fnv {
    /// FNV-1a 64 as a `Hasher`, as the `fnv` crate writes it.
    pub struct Fnv64(pub u64);

    impl Default for Fnv64 {
        fn default() -> Self {
            Fnv64(0xcbf2_9ce4_8422_2325)
        }
    }

    impl std::hash::Hasher for Fnv64 {
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
            }
        }
        fn finish(&self) -> u64 {
            self.0
        }
    }
}

/// rustc's FxHasher (rustc-hash 1, the `fxhash` crate) as `str`'s `Hash`
/// drives it: the bytes eight at a time, then four, two and one, then `0xff`.
pub fn fx_str(key: &str) -> u64 {
    fx_finish(fx_words(0, key.as_bytes()))
}

const FX_K: u64 = 0x517c_c1b7_2722_0a95;

fn fx_add(h: u64, word: u64) -> u64 {
    (h.rotate_left(5) ^ word).wrapping_mul(FX_K)
}

fn fx_words(mut h: u64, mut bytes: &[u8]) -> u64 {
    while bytes.len() >= 8 {
        h = fx_add(h, u64::from_le_bytes(bytes[..8].try_into().unwrap()));
        bytes = &bytes[8..];
    }
    if bytes.len() >= 4 {
        h = fx_add(
            h,
            u64::from(u32::from_le_bytes(bytes[..4].try_into().unwrap())),
        );
        bytes = &bytes[4..];
    }
    if bytes.len() >= 2 {
        h = fx_add(
            h,
            u64::from(u16::from_le_bytes(bytes[..2].try_into().unwrap())),
        );
        bytes = &bytes[2..];
    }
    if let Some(&b) = bytes.first() {
        h = fx_add(h, u64::from(b));
    }
    h
}

fn fx_finish(h: u64) -> u64 {
    fx_add(h, 0xff)
}

/// Two ASCII keys of `len` bytes (`len` ≥ 24) with the same [`fx_str`]:
/// they differ in bytes 8–23 and share the rest.
fn fx_collision(len: usize) -> (String, String) {
    assert!(len >= 24);
    let (a, b) = fx_words_that_collide();
    let tail: String = "-abcdefghijklmnopqrstuvwxyz0123456789"
        .chars()
        .cycle()
        .take(len - 24)
        .collect();
    (format!("{FX_HEAD}{a}{tail}"), format!("{FX_HEAD}{b}{tail}"))
}

const FX_HEAD: &str = "tenant/0";

/// Sixteen bytes each, after [`FX_HEAD`], that leave FxHash's state the
/// same: after the first differing word the two states differ by a known
/// value, which the second words cancel (the state before the
/// multiplication is the same). Whatever follows is then hashed alike.
fn fx_words_that_collide() -> (String, String) {
    static FOUND: OnceLock<(String, String)> = OnceLock::new();
    FOUND.get_or_init(search_fx_words).clone()
}

fn search_fx_words() -> (String, String) {
    let h0 = fx_words(0, FX_HEAD.as_bytes());
    let first = "aaaaaaaa";
    let h1 = fx_add(h0, u64::from_le_bytes(first.as_bytes().try_into().unwrap()));
    // First words spread over the alphanumerics (digits alone leave some
    // bits of the difference always set).
    const ALNUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for i in 1u64.. {
        let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let other: String = (0..8)
            .map(|_| {
                let c = ALNUM[(x % 62) as usize] as char;
                x /= 62;
                c
            })
            .collect();
        let h2 = fx_add(h0, u64::from_le_bytes(other.as_bytes().try_into().unwrap()));
        // Second words w and w ^ d, both printable ASCII.
        let d = (h1.rotate_left(5) ^ h2.rotate_left(5)).to_le_bytes();
        let pick = |db: u8| {
            (b'0'..=b'z').find(|&b| b.is_ascii_alphanumeric() && (0x21..=0x7e).contains(&(b ^ db)))
        };
        let Some(w) = d.iter().map(|&db| pick(db)).collect::<Option<Vec<u8>>>() else {
            continue;
        };
        let w2: Vec<u8> = w.iter().zip(d).map(|(a, b)| a ^ b).collect();
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).expect("ASCII");
        return (
            format!("{first}{}", text(w)),
            format!("{other}{}", text(w2)),
        );
    }
    unreachable!("one in 256 differences has every byte below 0x80")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pairs_collide_under_their_hashes() {
        for group in look_alikes() {
            let mut keys = group.keys.clone();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), group.keys.len(), "{group:?}");
        }
        let pairs: Vec<_> = collisions().into_iter().map(|g| g.keys).collect();
        assert_eq!(
            fnv1a_32(pairs[0][0].as_bytes()),
            fnv1a_32(pairs[0][1].as_bytes())
        );
        let sip = |k: &str| hash_with(std::hash::DefaultHasher::new(), k);
        assert_eq!(sip(&pairs[3][0]) as u32, sip(&pairs[3][1]) as u32);
        for p in &pairs[5..] {
            assert_eq!(fx_str(&p[0]), fx_str(&p[1]), "{p:?}");
            assert!(p[0].is_ascii() && p[0] != p[1]);
        }
    }

    #[test]
    fn the_hashes_are_the_crates() {
        for key in ["", "a", "hello", "tenant/0aaaaaaaa", &"\u{e9}".repeat(37)] {
            assert_eq!(
                fx_str(key),
                hash_with(rustc_hash::FxHasher::default(), key),
                "{key:?}"
            );
            assert_eq!(
                hash_with(fnv::Fnv64::default(), key),
                hash_with(::fnv::FnvHasher::default(), key)
            );
        }
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn numbered_keys_meet_in_later_windows() {
        let group = look_alikes().iter().find(|g| g.numbered).unwrap();
        let pairs = meeting_names(group);
        assert!(pairs.contains(&("a1", 0, "a", 10)) && pairs.contains(&("a", 10, "a1", 0)));
        assert!(pairs.iter().any(|p| p.3 >= 100));
    }

    #[test]
    fn multibyte_keys_straddle_every_cut() {
        for cut in CUTS {
            for width in 2..=4 {
                for before in 1..width {
                    assert!(look_alikes().iter().any(|g| {
                        let k = &g.keys[0];
                        k.len() > cut
                            && !k.is_char_boundary(cut)
                            && k.is_char_boundary(cut - before)
                            && k[cut - before..].chars().next().unwrap().len_utf8() == width
                    }));
                }
            }
        }
    }
}
