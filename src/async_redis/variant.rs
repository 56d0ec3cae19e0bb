//! `variant!` of the `async-redis-limiter` kind: a limiter file compiled
//! over std and wrapped as an [`AsyncVariant`](super::drive::AsyncVariant),
//! built from a rule and settings, as itself and blocked on as lesson 08's
//! kind sees a limiter; and its layer, `AsyncRateLimitLayer`, as lesson
//! 07's kind drives a layer.

#[doc(hidden)]
#[macro_export]
macro_rules! __async_redis_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident) => {
        mod $name {
            $crate::__on_std!($file);

            use ::std::sync::Arc;
            use $crate::async_redis::drive::{blocking, AsyncLimiter, AsyncVariant, Boxed};
            use $crate::async_redis::{RedisError, Rule, Settings};
            use $crate::redis_limiter::drive::RedisVariant;
            use $crate::{ConfigError, Decision, Timestamp};

            struct Driven(on_std::imp::$limiter);

            impl AsyncLimiter for Driven {
                fn try_check<'a>(
                    &'a self,
                    key: &'a str,
                    now: Timestamp,
                ) -> Boxed<'a, Result<Decision, RedisError>> {
                    Box::pin(self.0.try_check(key, now))
                }

                fn check<'a>(&'a self, key: &'a str, now: Timestamp) -> Boxed<'a, Decision> {
                    Box::pin($crate::AsyncRateLimiter::check(&self.0, key, now))
                }
            }

            fn build(rule: Rule, settings: Settings) -> Result<Arc<dyn AsyncLimiter>, ConfigError> {
                on_std::imp::$limiter::new(rule, settings)
                    .map(|l| Arc::new(Driven(l)) as Arc<dyn AsyncLimiter>)
            }

            /// The file's layer over the file's limiter, on `router`.
            fn stack(
                router: $crate::async_redis::drive::Router,
                rule: Rule,
                settings: Settings,
                policy: $crate::layer::Policy,
                clock: $crate::layer::ManualClock,
            ) -> Result<$crate::async_redis::drive::Router, String> {
                let limiter = on_std::imp::$limiter::new(rule, settings)
                    .map_err(|e| format!("new returned Err({e:?})"))?;
                let layer = on_std::imp::AsyncRateLimitLayer::new(
                    Arc::new(limiter),
                    policy,
                    $crate::layer::KeyRule::by_address(),
                    clock,
                )
                .map_err(|e| format!("AsyncRateLimitLayer::new returned Err({e:?})"))?;
                Ok(router.layer(layer))
            }

            /// The file's layer, as lesson 07's kind drives one.
            mod layer {
                $crate::__http_variant_of!(super::on_std::imp, $path, $file, AsyncRateLimitLayer);
            }

            pub const VARIANT: AsyncVariant = AsyncVariant {
                file: $path,
                source: include_str!($file),
                build,
                layer: layer::VARIANT,
                stack,
                blocking: RedisVariant {
                    file: $path,
                    source: include_str!($file),
                    build: |rule, settings| blocking(build, rule, settings.into()),
                },
            };
        }
    };
}
