//! `variant!` of the `bounded-limiter` kind: a limiter file compiled over
//! std and over loom and wrapped as a
//! [`BoundedVariant`](super::drive::BoundedVariant): built from a rule and
//! bounds, alone or in its shadow wrapper, swept and counted. The variants
//! the shared checks drive (one per rule) are built from it in Rust
//! ([`BoundedLesson`](super::checks::BoundedLesson)).

#[doc(hidden)]
#[macro_export]
macro_rules! __bounded_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__on_std!($file);

            $crate::__on_loom!($file);

            use ::std::sync::Arc;
            use $crate::memory::drive::{Bounded, BoundedVariant};
            use $crate::RateLimiter;

            $crate::__bounded_variant!(@driver Driven, on_std::imp::$limiter, |l| l);
            $crate::__bounded_variant!(@driver OnLoom, on_loom::imp::$limiter, |l| l);
            // The wrapper answers; its limiter is swept and counted.
            $crate::__bounded_variant!(@driver Shadowed, on_std::imp::Shadow, |s| s.limiter());

            pub const VARIANT: BoundedVariant = BoundedVariant {
                file: $path,
                source: include_str!($file),
                build: |rule, bounds| {
                    on_std::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(Driven(l)) as Arc<dyn Bounded>)
                },
                shadow: |rule, bounds| {
                    on_std::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(Shadowed(on_std::imp::Shadow::new(l))) as Arc<dyn Bounded>)
                },
                build_loom: |rule, bounds| {
                    on_loom::imp::$limiter::new(rule, bounds)
                        .map(|l| Arc::new(OnLoom(l)) as Arc<dyn Bounded>)
                },
            };
        }
    };
    (@driver $name:ident, $ty:ty, |$it:ident| $limiter:expr) => {
        struct $name($ty);

        impl Bounded for $name {
            fn check(&self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                RateLimiter::check(&self.0, key, now)
            }

            fn sweep(&self, now: $crate::Timestamp) -> usize {
                let $it = &self.0;
                $limiter.sweep(now)
            }

            fn keys_held(&self) -> usize {
                let $it = &self.0;
                $limiter.keys_held()
            }
        }
    };
}
