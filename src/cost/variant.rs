//! `variant!` of the `cost` kind: a file compiled over std (its buckets,
//! its limits and its Redis limits) and over loom (its GCRA and its
//! limits, raced), wrapped as a [`CostVariant`](super::drive::CostVariant)
//! by the functions of [`super::drive`].

#[doc(hidden)]
#[macro_export]
macro_rules! __cost_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            use on_loom::imp::{$limiter as M, Gcra as H};
            use on_std::imp::{$limiter as L, Gcra as G, RedisLimits as R, TokenBucket as B};
            use $crate::cost::drive::CostVariant as V;
            $crate::__on_std!($file);
            $crate::__on_loom!($file);
            pub const VARIANT: V = V {
                file: ($path, include_str!($file)),
                bucket: |c, t| V::one(B::new(c, t), B::check_n, B::peek_n),
                gcra: |c, t| V::one(G::new(c, t), G::check_n, G::peek_n),
                gcra_loom: |c, t| V::one(H::new(c, t), H::check_n, H::peek_n),
                limits: |l| V::many(L::new(l), L::check, L::peek),
                limits_loom: |l| V::many(M::new(l), M::check, M::peek),
                redis: |l, r| V::many(R::new(l, r), R::check, R::peek),
            };
        }
    };
}
