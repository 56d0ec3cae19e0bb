//! `variant!` of the `in-flight` kind: a file compiled over std (its
//! permits, layers, delay queue and controllers) and over loom (its
//! permits, raced), wrapped as an
//! [`InflightVariant`](super::drive::InflightVariant) by the functions of
//! [`super::drive`].

#[doc(hidden)]
#[macro_export]
macro_rules! __inflight_variant {
    ($name:ident, $path:literal, $file:literal, $layer:ident) => {
        mod $name {
            use $crate::inflight::drive::{controller, layered, permits, InflightVariant};
            $crate::__on_std!($file);
            $crate::__on_loom!($file);

            pub const VARIANT: InflightVariant = InflightVariant {
                file: $path,
                source: include_str!($file),
        permits: $crate::__inflight_variant!(@permits on_std),
        permits_loom: $crate::__inflight_variant!(@permits on_loom),
                concurrency: |l, inner| Ok(layered(&on_std::imp::$layer::new(l)?, inner)),
                shed: |p, inner| Ok(layered(&on_std::imp::ShedLayer::new(p)?, inner)),
                delay: |p, c, inner| Ok(layered(&on_std::imp::DelayLayer::new(p, c)?, inner)),
                queue: |p| {
                    let q = on_std::imp::DelayQueue::new(p)?;
                    Ok($crate::inflight::drive::queue(q, |q, now| q.admit(now)))
                },
                aimd: |p| {
                    Ok(controller(
                        on_std::imp::Aimd::new(p)?,
                        |c| c.limit(),
                        |c, s| c.on_sample(s),
                    ))
                },
                gradient: |p| {
                    let g = on_std::imp::Gradient::new(p)?;
                    Ok(controller(g, |c| c.limit(), |c, s| c.on_sample(s)))
                },
            };
        }
    };
    (@permits $on:ident) => {
        |l, r| {
            Ok(permits(
                $on::imp::Permits::new(l, r)?,
                |p, pr| p.try_acquire(pr).map(|x| Box::new(x) as _),
                |p, pr, cx| p.poll_acquire(pr, cx).map(|x| Box::new(x) as _),
                |p| p.in_flight(),
                |p, n| p.set_limit(n),
            ))
        }
    };
}
