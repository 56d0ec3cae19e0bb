//! What compiles a layer file into an [`HttpVariant`](super::drive::HttpVariant),
//! for the `http-layer` kind's `variant!` and for lesson 10's, whose file
//! holds a limiter and a layer.

/// `pub const VARIANT: HttpVariant` for the layer `$layer` of a file
/// already compiled as the module `$imp` (lesson 10's file holds a limiter
/// and a layer, compiled once).
#[doc(hidden)]
#[macro_export]
macro_rules! __http_variant_of {
    ($($imp:ident)::+, $path:literal, $file:literal, $layer:ident) => {
        #[allow(unused_imports)]
        use $crate::layer::drive::probe::{Fails as _, Works as _};
        use $crate::layer::drive::{Driven, HttpVariant, TestLimiter};
        use $crate::layer::ManualClock;

        pub const VARIANT: HttpVariant = HttpVariant {
            file: $path,
            source: include_str!($file),
            build: |p| {
                let layer = $($imp)::+::$layer::<TestLimiter, ManualClock>::new(
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
                (&&$crate::layer::drive::probe::Probe::<
                    $($imp)::+::$layer<$crate::layer::drive::probe::Unclonable, ManualClock>,
                >::new())
                    .works()
            },
            router: |router, limiter, policy, keys, clock| {
                let layer = $($imp)::+::$layer::<TestLimiter, ManualClock>::new(
                    ::std::sync::Arc::new(limiter),
                    policy,
                    keys,
                    clock,
                )?;
                Ok(router.layer(layer))
            },
        };
    };
}
