//! How messages count things: `1 token`, `2 entries`, `twice`. A leaf: it
//! uses nothing of the harness, and every module that writes a message may
//! use it.

/// A number a message counts things with.
pub trait Number: Copy + std::fmt::Display {
    fn is_one(self) -> bool;
}

impl<T: Copy + std::fmt::Display + PartialEq + From<u8>> Number for T {
    fn is_one(self) -> bool {
        self == T::from(1)
    }
}

/// The noun for `n` of it: `noun` for exactly one, else its plural, which
/// adds an `s` or, for a noun that does not (`entry|entries`), is written
/// after a `|`.
pub fn plural(n: impl Number, noun: &str) -> String {
    let (one, many) = match noun.split_once('|') {
        Some((one, many)) => (one.to_string(), many.to_string()),
        None => (noun.to_string(), format!("{noun}s")),
    };
    if n.is_one() {
        one
    } else {
        many
    }
}

/// `1 token`, `0 tokens`, `2 entries`: a count with its noun, as every
/// message prints one (see [`plural`]).
pub fn count(n: impl Number, noun: &str) -> String {
    format!("{n} {}", plural(n, noun))
}

/// How many times something happened: `once`, `twice`, `3 times`,
/// `0 times`.
pub fn times(n: impl Number) -> String {
    match n.to_string().as_str() {
        "1" => "once".to_string(),
        "2" => "twice".to_string(),
        n => format!("{n} times"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1, "token"), "1 token");
        assert_eq!(count(0, "token"), "0 tokens");
        assert_eq!(count(12, "request"), "12 requests");
        assert_eq!(count(1, "entry|entries"), "1 entry");
        assert_eq!(count(2, "entry|entries"), "2 entries");
        assert_eq!(count(u64::MAX, "key"), "18446744073709551615 keys");
        assert_eq!(plural(1, "key"), "key");
        assert_eq!(plural(3, "key"), "keys");
        assert_eq!(plural(3, "branch|branches"), "branches");
        assert_eq!(times(0), "0 times");
        assert_eq!(times(1), "once");
        assert_eq!(times(2), "twice");
        assert_eq!(times(7), "7 times");
    }
}
