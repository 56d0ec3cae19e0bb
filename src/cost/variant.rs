//! `variant!` of the `cost` kind: a file compiled over std (its buckets,
//! its limits and its Redis limits) and over loom (its GCRA and its
//! limits, raced), wrapped as a [`CostVariant`](super::drive::CostVariant)
//! by the functions of [`super::drive`].

#[doc(hidden)]
#[macro_export]
#[rustfmt::skip] // one line per constructor, as the line count of macros asks
macro_rules! __cost_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            use $crate::cost::drive::{several as m, single as s, CostVariant};
            $crate::__on_std!($file);
            $crate::__on_loom!($file);
            pub const VARIANT: CostVariant = CostVariant { file: $path, source: include_str!($file),
                bucket: |c, t| Ok(s(on_std::imp::TokenBucket::new(c, t)?, |b, k, n, at| b.check_n(k, n, at), |b, k, n, at| b.peek_n(k, n, at))),
                gcra: |c, t| Ok(s(on_std::imp::Gcra::new(c, t)?, |b, k, n, at| b.check_n(k, n, at), |b, k, n, at| b.peek_n(k, n, at))),
                gcra_loom: |c, t| Ok(s(on_loom::imp::Gcra::new(c, t)?, |b, k, n, at| b.check_n(k, n, at), |b, k, n, at| b.peek_n(k, n, at))),
                limits: |l| Ok(m(on_std::imp::$limiter::new(l)?, |x, k, n, t| x.check(k, n, t), |x, k, n, t| x.peek(k, n, t))),
                limits_loom: |l| Ok(m(on_loom::imp::$limiter::new(l)?, |x, k, n, t| x.check(k, n, t), |x, k, n, t| x.peek(k, n, t))),
                redis: |l, r| Ok(m(on_std::imp::RedisLimits::new(l, r)?, |x, k, n, t| x.check(k, n, t), |x, k, n, t| x.peek(k, n, t))),
            };
        }
    };
}
