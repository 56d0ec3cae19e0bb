//! The limiter's clock: a point in time passed in by the caller, never read.

use std::fmt;
use std::ops::Add;
use std::time::Duration;

/// A point on the limiter's clock, in nanoseconds since an arbitrary origin.
///
/// Limiters never read a clock: every call is given its `now`. That is what
/// makes each lesson deterministic, replayable and model-checkable.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The clock's origin. Fixed windows are aligned to it.
    pub const ZERO: Timestamp = Timestamp(0);
    /// The last representable instant.
    pub const MAX: Timestamp = Timestamp(u64::MAX);

    pub const fn from_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }

    /// Saturates at [`Timestamp::MAX`] instead of overflowing.
    pub const fn from_millis(millis: u64) -> Self {
        Timestamp(millis.saturating_mul(1_000_000))
    }

    /// Saturates at [`Timestamp::MAX`] instead of overflowing.
    pub const fn from_secs(secs: u64) -> Self {
        Timestamp(secs.saturating_mul(1_000_000_000))
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }
}

/// Moves forward by a duration, saturating at [`Timestamp::MAX`]: no call
/// can make the clock wrap around to the origin.
impl Add<Duration> for Timestamp {
    type Output = Timestamp;

    fn add(self, rhs: Duration) -> Timestamp {
        let rhs = u64::try_from(rhs.as_nanos()).unwrap_or(u64::MAX);
        Timestamp(self.0.saturating_add(rhs))
    }
}

/// Nanoseconds with `_` between thousands, so `1_000_000_001ns` reads at a glance
/// as one second and one nanosecond.
pub fn group_digits(n: u128) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('_');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ns", group_digits(u128::from(self.0)))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Timestamp({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_agree_and_saturate() {
        assert_eq!(Timestamp::from_secs(2), Timestamp::from_millis(2_000));
        assert_eq!(Timestamp::from_millis(3).as_nanos(), 3_000_000);
        assert_eq!(Timestamp::from_secs(u64::MAX), Timestamp::MAX);
        assert_eq!(Timestamp::MAX + Duration::from_nanos(1), Timestamp::MAX);
        assert_eq!(Timestamp::ZERO + Duration::MAX, Timestamp::MAX);
        assert_eq!(
            Timestamp::from_nanos(5) + Duration::from_nanos(7),
            Timestamp::from_nanos(12)
        );
    }

    #[test]
    fn display_groups_thousands() {
        assert_eq!(Timestamp::from_nanos(0).to_string(), "0ns");
        assert_eq!(Timestamp::from_nanos(999).to_string(), "999ns");
        assert_eq!(Timestamp::from_nanos(1000).to_string(), "1_000ns");
        assert_eq!(Timestamp::from_secs(1).to_string(), "1_000_000_000ns");
    }
}
