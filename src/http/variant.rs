//! `variant!` of the `http-layer` kind: a layer file compiled over std and
//! wrapped as an [`HttpVariant`](super::drive::HttpVariant): built over the
//! harness's test limiter in process, probed for working over any limiter,
//! and put in an axum router.

#[doc(hidden)]
#[macro_export]
macro_rules! __http_variant {
    ($name:ident, $path:literal, $file:literal, $layer:ident) => {
        mod $name {
            $crate::__on_std!($file);
            $crate::__http_variant_of!(on_std::imp, $path, $file, $layer);
        }
    };
}
