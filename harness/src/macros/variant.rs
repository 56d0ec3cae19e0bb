//! `__variant!`: one implementation compiled in as a subject of its kind,
//! over the std facade and, for the kinds raced under loom, over loom's.

/// One implementation compiled in as a subject, driven as its kind says:
/// `limiter` once over std; `shared_limiter` over std and again over loom;
/// `http_layer` as a tower layer over the harness's test limiter, in
/// process and in an axum router.
#[doc(hidden)]
#[macro_export]
macro_rules! __variant {
    (http_layer, $name:ident, $path:literal, $file:literal, $layer:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            use $crate::http::drive::{AnyClock, Driven, HttpVariant, TestLimiter};
            use $crate::http::ManualClock;
            #[allow(unused_imports)]
            use $crate::http::drive::probe::{Fails as _, Works as _};

            pub const VARIANT: HttpVariant = HttpVariant {
                file: $path,
                source: include_str!($file),
                build: |p| {
                    let layer = on_std::imp::$layer::<TestLimiter, ManualClock>::new(
                        ::std::sync::Arc::new(p.limiter),
                        p.policy,
                        p.keys,
                        p.clock,
                    )?;
                    Ok(Driven::boxed(layer, p.inner))
                },
                // Whether the layer is a `Layer` with a usable service over a
                // limiter that is not `Clone` (a compile-time fact, read
                // without failing the build of the other subjects).
                over_any_limiter: || {
                    (&&$crate::http::drive::probe::Probe::<
                        on_std::imp::$layer<$crate::http::drive::probe::Unclonable, ManualClock>,
                    >::new())
                        .works()
                },
                router: |router, limiter, policy, keys, clock| {
                    let layer = on_std::imp::$layer::<TestLimiter, AnyClock>::new(
                        ::std::sync::Arc::new(limiter),
                        policy,
                        keys,
                        clock,
                    )?;
                    Ok(router.layer(layer))
                },
            };
        }
    };
    (redis_limiter, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            use ::std::sync::Arc;
            use $crate::redis::checks::RedisImpl;
            use $crate::redis::drive::{Limiter, RedisVariant, RuleKind};

            struct Driven(on_std::imp::$limiter);

            impl Limiter for Driven {
                fn try_check(
                    &self,
                    key: &str,
                    now: $crate::Timestamp,
                ) -> Result<$crate::Decision, $crate::redis::RedisError> {
                    self.0.try_check(key, now)
                }

                fn check(&self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    $crate::RateLimiter::check(&self.0, key, now)
                }
            }

            const REDIS: RedisVariant = RedisVariant {
                file: $path,
                source: include_str!($file),
                build: |rule, settings| {
                    on_std::imp::$limiter::new(rule, settings)
                        .map(|l| Arc::new(Driven(l)) as Arc<dyn Limiter>)
                },
            };

            pub const VARIANT: RedisImpl = RedisImpl {
                redis: REDIS,
                single: [
                    $crate::__variant!(@redis $path, $file, single, FixedWindow),
                    $crate::__variant!(@redis $path, $file, single, SlidingLog),
                    $crate::__variant!(@redis $path, $file, single, Gcra),
                ],
                servers: [
                    $crate::__variant!(@redis $path, $file, servers, FixedWindow),
                    $crate::__variant!(@redis $path, $file, servers, SlidingLog),
                    $crate::__variant!(@redis $path, $file, servers, Gcra),
                ],
            };
        }
    };
    (bounded_limiter, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            $crate::__variant!(@loom shared_limiter, $file);

            use ::std::sync::Arc;
            use $crate::memory::checks::BoundedImpl;
            use $crate::memory::drive::{roomy, Bounded, BoundedVariant, RuleKind};
            use $crate::RateLimiter;

            $crate::__variant!(@bounded_driver Driven, on_std::imp::$limiter, |l| l);
            $crate::__variant!(@bounded_driver OnLoom, on_loom::imp::$limiter, |l| l);
            // The wrapper answers; its limiter is swept and counted.
            $crate::__variant!(@bounded_driver Shadowed, on_std::imp::Shadow, |s| s.limiter());

            const BOUNDED: BoundedVariant = BoundedVariant {
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

            pub const VARIANT: BoundedImpl = BoundedImpl {
                bounded: BOUNDED,
                rules: [
                    $crate::__variant!(@bounded $path, $file, $limiter, FixedWindow),
                    $crate::__variant!(@bounded $path, $file, $limiter, TokenBucket),
                ],
            };
        }
    };
    (@bounded_driver $name:ident, $ty:ty, |$it:ident| $limiter:expr) => {
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
    (@bounded $path:literal, $file:literal, $limiter:ident, $rule:ident) => {
        $crate::Variant {
            file: $path,
            source: include_str!($file),
            build: |limit, period| $crate::memory::drive::swept(BOUNDED, RuleKind::$rule, limit, period),
            build_loom: Some(|limit, period| {
                on_loom::imp::$limiter::new(RuleKind::$rule.rule(limit, period), roomy())
                    .map(|l| Arc::new(l) as Arc<dyn RateLimiter>)
            }),
        }
    };
    (@redis $path:literal, $file:literal, $how:ident, $rule:ident) => {
        $crate::Variant {
            file: $path,
            source: include_str!($file),
            build: |limit, period| $crate::redis::drive::$how(REDIS, RuleKind::$rule, limit, period),
            build_loom: None,
        }
    };
    ($kind:ident, $name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__variant!(@on_std $file);

            $crate::__variant!(@loom $kind, $file);

            pub struct Driven(on_std::imp::$limiter);

            impl $crate::Drive for Driven {
                fn check(&mut self, key: &str, now: $crate::Timestamp) -> $crate::Decision {
                    // Lesson 01's inherent `check(&mut self)`, or `RateLimiter::check`.
                    #[allow(unused_imports)]
                    use $crate::RateLimiter as _;
                    self.0.check(key, now)
                }
            }

            pub const VARIANT: $crate::Variant = $crate::Variant {
                file: $path,
                source: include_str!($file),
                build: |limit, period| {
                    on_std::imp::$limiter::new(limit, period)
                        .map(|l| Box::new(Driven(l)) as Box<dyn $crate::Drive>)
                },
                build_loom: $crate::__variant!(@build_loom $kind, $limiter),
            };
        }
    };
    (@on_std $file:literal) => {
        pub mod on_std {
            #[allow(unused_imports)]
            pub mod sync {
                pub use $crate::sync::std_backend::*;
            }
            #[path = $file]
            pub mod imp;
        }
    };
    (@loom limiter, $file:literal) => {};
    (@loom shared_limiter, $file:literal) => {
        // The same file over loom: its warnings were already shown once.
        #[allow(warnings, clippy::all)]
        pub mod on_loom {
            #[allow(unused_imports)]
            pub mod sync {
                pub use $crate::sync::loom_backend::*;
            }
            #[path = $file]
            pub mod imp;
        }
    };
    (@build_loom limiter, $limiter:ident) => {
        None
    };
    (@build_loom shared_limiter, $limiter:ident) => {
        Some(|limit, period| {
            on_loom::imp::$limiter::new(limit, period)
                .map(|l| ::std::sync::Arc::new(l) as ::std::sync::Arc<dyn $crate::RateLimiter>)
        })
    };
}
