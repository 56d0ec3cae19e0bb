//! What only a macro can do for every kind: compile a subject's file as a
//! module over the std facade (`__on_std!`) and again over loom's
//! (`__on_loom!`), and wrap a limiter's inherent `new(limit, period)` and
//! `check` into a [`Variant`](crate::Variant) (`__driven_variant!`, for the
//! `limiter` and `shared-limiter` kinds). Each kind's own `variant!` is in
//! its folder and uses these.

/// `pub mod on_std { pub mod sync; pub mod imp }`: the file at `$file` as
/// `imp`, its `super::sync` the std facade.
#[doc(hidden)]
#[macro_export]
macro_rules! __on_std {
    ($file:literal) => {
        pub mod on_std {
            #[allow(unused_imports)]
            pub mod sync {
                pub use $crate::sync::std_backend::*;
            }
            #[path = $file]
            pub mod imp;
        }
    };
}

/// `pub mod on_loom`: the same file over loom's facade, for the race
/// checks.
#[doc(hidden)]
#[macro_export]
macro_rules! __on_loom {
    ($file:literal) => {
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
}

/// A limiter built by `new(limit, period)` and asked by `check(key, now)`
/// (lesson 01's inherent `check(&mut self)` or `RateLimiter::check`), over
/// std (`std`) or over std and loom (`loom`).
#[doc(hidden)]
#[macro_export]
macro_rules! __driven_variant {
    ($name:ident, $path:literal, $file:literal, $limiter:ident, $backends:ident) => {
        mod $name {
            $crate::__on_std!($file);
            $crate::__driven_variant!(@on_loom $backends, $file);

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
                build: &|limit, period| {
                    on_std::imp::$limiter::new(limit, period)
                        .map(|l| Box::new(Driven(l)) as Box<dyn $crate::Drive>)
                },
                build_loom: $crate::__driven_variant!(@build_loom $backends, $limiter),
                pace: $crate::drive::Pace::IN_PROCESS,
            };
        }
    };
    (@on_loom std, $file:literal) => {};
    (@on_loom loom, $file:literal) => {
        $crate::__on_loom!($file);
    };
    (@build_loom std, $limiter:ident) => {
        None
    };
    (@build_loom loom, $limiter:ident) => {
        Some(&|limit, period| {
            on_loom::imp::$limiter::new(limit, period)
                .map(|l| ::std::sync::Arc::new(l) as ::std::sync::Arc<dyn $crate::RateLimiter>)
        })
    };
}
