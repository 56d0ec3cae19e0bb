//! `variant!` of the `http-client` kind: a client file compiled over std
//! (its `server_wait`, its `RetryLayer` around the checks' inner service,
//! its `RetryBudget`) and over loom (its `RetryBudget`, raced), wrapped as a
//! [`ClientVariant`](super::checks::ClientVariant).

#[doc(hidden)]
#[macro_export]
macro_rules! __client_variant {
    ($name:ident, $path:literal, $file:literal, $layer:ident) => {
        mod $name {
            $crate::__on_std!($file);
            $crate::__on_loom!($file);
            $crate::__client_variant!(@budget Std, on_std::imp::RetryBudget);
            $crate::__client_variant!(@budget Loom, on_loom::imp::RetryBudget);
            pub const VARIANT: $crate::client::drive::ClientVariant =
                $crate::client::drive::ClientVariant {
                    file: $path,
                    source: include_str!($file),
                    server_wait: on_std::imp::server_wait,
                    build: |policy, clock, inner| {
                        let layer = on_std::imp::$layer::<$crate::client::ManualClock>::new(policy, clock)?;
                        Ok($crate::client::drive::layered(&layer, inner))
                    },
                    budget: |p| on_std::imp::RetryBudget::new(p).map(|b| Box::new(Std(b)) as _),
                    budget_loom: |p| on_loom::imp::RetryBudget::new(p).map(|b| Box::new(Loom(b)) as _),
                };
        }
    };
    (@budget $name:ident, $ty:ty) => {
        struct $name($ty);
        impl $crate::client::drive::Budget for $name {
            fn deposit(&self, now: $crate::Timestamp) {
                self.0.deposit(now)
            }
            fn withdraw(&self, now: $crate::Timestamp) -> bool {
                self.0.withdraw(now)
            }
            fn give_back(&self, taken_at: $crate::Timestamp, now: $crate::Timestamp) {
                self.0.give_back(taken_at, now)
            }
        }
    };
}
