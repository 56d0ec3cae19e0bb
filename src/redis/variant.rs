//! `variant!` of the `redis-limiter` kind: a limiter file compiled over std
//! and wrapped as a [`RedisVariant`](super::drive::RedisVariant), built from
//! a rule and settings. The variants the shared checks drive (one per rule,
//! as one app server and as three) are built from it in Rust
//! ([`RedisLesson`](super::checks::RedisLesson)).

#[doc(hidden)]
#[macro_export]
macro_rules! __redis_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__on_std!($file);

            use ::std::sync::Arc;
            use $crate::redis::drive::{Limiter, RedisVariant};

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

            pub const VARIANT: RedisVariant = RedisVariant {
                file: $path,
                source: include_str!($file),
                build: |rule, settings| {
                    on_std::imp::$limiter::new(rule, settings)
                        .map(|l| Arc::new(Driven(l)) as Arc<dyn Limiter>)
                },
            };
        }
    };
}
