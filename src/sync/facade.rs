//! The macro both backends are generated from: std's API for the names the
//! kata uses, each operation recorded, watched and checked.

/// An atomic of the facade: std's operations, each recorded and watched.
macro_rules! atomic_common {
    ($backend:expr, $sync:ident, $name:ident, $int:ty, $zero:expr) => {
        /// Same API as the `std::sync::atomic` type of the same name.
        pub struct $name {
            inner: $sync::atomic::$name,
        }

        impl $name {
            pub fn new(v: $int) -> Self {
                $name {
                    inner: $sync::atomic::$name::new(v),
                }
            }

            pub fn into_inner(self) -> $int {
                self.inner.into_inner()
            }

            #[track_caller]
            pub fn load(&self, order: Ordering) -> $int {
                check_ordering("load", Role::Load, order);
                op(
                    $backend,
                    "load",
                    || self.inner.load(order),
                    |v| format!("load -> {v}"),
                )
            }

            #[track_caller]
            pub fn store(&self, val: $int, order: Ordering) {
                check_ordering("store", Role::Store, order);
                op(
                    $backend,
                    "store",
                    || self.inner.store(val, order),
                    |_| format!("store {val}"),
                )
            }

            #[track_caller]
            pub fn swap(&self, val: $int, order: Ordering) -> $int {
                op(
                    $backend,
                    "swap",
                    || self.inner.swap(val, order),
                    |v| format!("swap {v} -> {val}"),
                )
            }

            #[track_caller]
            pub fn compare_exchange(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                check_ordering("compare_exchange", Role::Failure, failure);
                op(
                    $backend,
                    "compare_exchange",
                    || self.inner.compare_exchange(current, new, success, failure),
                    |r| cas_text("compare_exchange", current, new, r),
                )
            }

            #[track_caller]
            pub fn compare_exchange_weak(
                &self,
                current: $int,
                new: $int,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$int, $int> {
                check_ordering("compare_exchange_weak", Role::Failure, failure);
                op(
                    $backend,
                    "compare_exchange_weak",
                    || {
                        self.inner
                            .compare_exchange_weak(current, new, success, failure)
                    },
                    |r| cas_text("compare_exchange_weak", current, new, r),
                )
            }

            #[track_caller]
            pub fn fetch_update<F>(
                &self,
                set_order: Ordering,
                fetch_order: Ordering,
                f: F,
            ) -> Result<$int, $int>
            where
                F: FnMut($int) -> Option<$int>,
            {
                check_ordering("fetch_update", Role::Failure, fetch_order);
                op(
                    $backend,
                    "fetch_update",
                    || self.inner.fetch_update(set_order, fetch_order, f),
                    |r| match r {
                        Ok(v) => format!("fetch_update: {v} replaced"),
                        Err(v) => format!("fetch_update: {v} kept"),
                    },
                )
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new($zero)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(concat!(stringify!($name), " { .. }"))
            }
        }
    };
}

/// An integer atomic: the common operations and the arithmetic ones.
macro_rules! atomic_int {
    ($backend:expr, $sync:ident, $name:ident, $int:ty) => {
        atomic_common!($backend, $sync, $name, $int, 0);

        impl $name {
            #[track_caller]
            pub fn fetch_add(&self, val: $int, order: Ordering) -> $int {
                op(
                    $backend,
                    "fetch_add",
                    || self.inner.fetch_add(val, order),
                    |v| format!("fetch_add {val}: {v} -> {}", v.wrapping_add(val)),
                )
            }

            #[track_caller]
            pub fn fetch_sub(&self, val: $int, order: Ordering) -> $int {
                op(
                    $backend,
                    "fetch_sub",
                    || self.inner.fetch_sub(val, order),
                    |v| format!("fetch_sub {val}: {v} -> {}", v.wrapping_sub(val)),
                )
            }

            #[track_caller]
            pub fn fetch_max(&self, val: $int, order: Ordering) -> $int {
                op(
                    $backend,
                    "fetch_max",
                    || self.inner.fetch_max(val, order),
                    |v| format!("fetch_max {val}: was {v}"),
                )
            }

            #[track_caller]
            pub fn fetch_min(&self, val: $int, order: Ordering) -> $int {
                op(
                    $backend,
                    "fetch_min",
                    || self.inner.fetch_min(val, order),
                    |v| format!("fetch_min {val}: was {v}"),
                )
            }
        }
    };
}

/// `Debug` and `Display` for a guard, as std gives them.
macro_rules! guard_fmt {
    ($guard:ident) => {
        impl<T: std::fmt::Debug> std::fmt::Debug for $guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&*self.inner, f)
            }
        }

        impl<T: std::fmt::Display> std::fmt::Display for $guard<'_, T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Display::fmt(&*self.inner, f)
            }
        }
    };
}

/// Generates one backend of the facade over `$sync` (`std::sync` or `loom::sync`).
macro_rules! facade {
    ($backend:expr, $sync:ident) => {
        use std::panic::Location;
        pub use std::sync::atomic::Ordering;
        pub use std::sync::{LockResult, PoisonError, TryLockError, TryLockResult};
        pub use $sync::Arc;

        use $crate::sync::{acquire, check_ordering, record, watch_point, Access, HeldToken, Role};

        #[track_caller]
        fn op<R>(
            backend: $crate::sync::Backend,
            name: &'static str,
            run: impl FnOnce() -> R,
            text: impl FnOnce(&R) -> String,
        ) -> R {
            let at = Location::caller();
            watch_point(at, name);
            let r = run();
            record(backend, at, || text(&r));
            r
        }

        fn cas_text<T: std::fmt::Display>(
            name: &str,
            current: T,
            new: T,
            r: &Result<T, T>,
        ) -> String {
            match r {
                Ok(_) => format!("{name} {current} -> {new}: ok"),
                Err(found) => format!("{name} {current} -> {new}: failed, found {found}"),
            }
        }

        fn map_lock<G, H>(r: LockResult<G>, wrap: impl FnOnce(G) -> H) -> LockResult<H> {
            match r {
                Ok(g) => Ok(wrap(g)),
                Err(poisoned) => Err(PoisonError::new(wrap(poisoned.into_inner()))),
            }
        }

        fn map_try_lock<G, H>(r: TryLockResult<G>, wrap: impl FnOnce(G) -> H) -> TryLockResult<H> {
            match r {
                Ok(g) => Ok(wrap(g)),
                Err(TryLockError::Poisoned(p)) => Err(TryLockError::Poisoned(PoisonError::new(
                    wrap(p.into_inner()),
                ))),
                Err(TryLockError::WouldBlock) => Err(TryLockError::WouldBlock),
            }
        }

        /// Takes a lock that may wait: fails at once on a self-deadlock,
        /// records the acquisition when it is obtained.
        #[track_caller]
        fn blocking<G, H>(
            point: &$sync::atomic::AtomicUsize,
            access: Access,
            kind: &'static str,
            take: impl FnOnce() -> LockResult<G>,
            wrap: impl FnOnce(G, HeldToken) -> H,
        ) -> LockResult<H> {
            let addr = point as *const _ as usize;
            let held = acquire($backend, addr, access, kind, Location::caller(), true);
            let r = map_lock(take(), |guard| wrap(guard, held.obtained()));
            holding(point);
            r
        }

        /// Before a `try_` call: writes the lock's point, so that loom sees
        /// the attempt depend on the read a holder makes while it holds the
        /// lock, and also explores the attempt there, where it fails.
        fn asking(point: &$sync::atomic::AtomicUsize) {
            point.fetch_add(1, Ordering::Relaxed);
        }

        /// While the lock is held: reads its point, a branch point of loom's
        /// scheduler inside the critical section. (Reads do not depend on
        /// each other, so holders add no interleavings among themselves.)
        fn holding(point: &$sync::atomic::AtomicUsize) {
            point.load(Ordering::Relaxed);
        }

        /// Tries a lock without waiting.
        #[track_caller]
        fn non_blocking<G, H>(
            point: &$sync::atomic::AtomicUsize,
            access: Access,
            kind: &'static str,
            take: impl FnOnce() -> TryLockResult<G>,
            wrap: impl FnOnce(G, HeldToken) -> H,
        ) -> TryLockResult<H> {
            let addr = point as *const _ as usize;
            let at = Location::caller();
            watch_point(at, kind);
            asking(point);
            match take() {
                Err(TryLockError::WouldBlock) => {
                    record($backend, at, || format!("{kind}: would block"));
                    Err(TryLockError::WouldBlock)
                }
                r => {
                    let r = map_try_lock(r, |guard| {
                        wrap(
                            guard,
                            acquire($backend, addr, access, kind, at, false).obtained(),
                        )
                    });
                    holding(point);
                    r
                }
            }
        }

        /// Same API as `std::sync::Mutex`.
        pub struct Mutex<T> {
            inner: $sync::Mutex<T>,
            /// Names the lock, and gives loom a branch point while it is held.
            point: $sync::atomic::AtomicUsize,
        }

        impl<T: Default> Default for Mutex<T> {
            fn default() -> Self {
                Self::new(T::default())
            }
        }

        /// Same API as `std::sync::MutexGuard`.
        pub struct MutexGuard<'a, T> {
            inner: $sync::MutexGuard<'a, T>,
            _held: HeldToken,
        }

        impl<T> Mutex<T> {
            pub fn new(value: T) -> Self {
                Mutex {
                    inner: $sync::Mutex::new(value),
                    point: $sync::atomic::AtomicUsize::new(0),
                }
            }

            #[track_caller]
            pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
                blocking(
                    &self.point,
                    Access::Exclusive,
                    "Mutex::lock",
                    || self.inner.lock(),
                    |inner, _held| MutexGuard { inner, _held },
                )
            }

            #[track_caller]
            pub fn try_lock(&self) -> TryLockResult<MutexGuard<'_, T>> {
                non_blocking(
                    &self.point,
                    Access::Exclusive,
                    "Mutex::try_lock",
                    || self.inner.try_lock(),
                    |inner, _held| MutexGuard { inner, _held },
                )
            }

            pub fn into_inner(self) -> LockResult<T> {
                self.inner.into_inner()
            }

            pub fn get_mut(&mut self) -> LockResult<&mut T> {
                self.inner.get_mut()
            }
        }

        impl<T> std::fmt::Debug for Mutex<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("Mutex { .. }")
            }
        }

        impl<T> std::ops::Deref for MutexGuard<'_, T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T> std::ops::DerefMut for MutexGuard<'_, T> {
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }

        /// Same API as `std::sync::RwLock`.
        pub struct RwLock<T> {
            inner: $sync::RwLock<T>,
            /// Names the lock, and gives loom a branch point while it is held.
            point: $sync::atomic::AtomicUsize,
        }

        impl<T: Default> Default for RwLock<T> {
            fn default() -> Self {
                Self::new(T::default())
            }
        }

        /// Same API as `std::sync::RwLockReadGuard`.
        pub struct RwLockReadGuard<'a, T> {
            inner: $sync::RwLockReadGuard<'a, T>,
            _held: HeldToken,
        }

        /// Same API as `std::sync::RwLockWriteGuard`.
        pub struct RwLockWriteGuard<'a, T> {
            inner: $sync::RwLockWriteGuard<'a, T>,
            _held: HeldToken,
        }

        impl<T> RwLock<T> {
            pub fn new(value: T) -> Self {
                RwLock {
                    inner: $sync::RwLock::new(value),
                    point: $sync::atomic::AtomicUsize::new(0),
                }
            }

            #[track_caller]
            pub fn read(&self) -> LockResult<RwLockReadGuard<'_, T>> {
                blocking(
                    &self.point,
                    Access::Shared,
                    "RwLock::read",
                    || self.inner.read(),
                    |inner, _held| RwLockReadGuard { inner, _held },
                )
            }

            #[track_caller]
            pub fn write(&self) -> LockResult<RwLockWriteGuard<'_, T>> {
                blocking(
                    &self.point,
                    Access::Exclusive,
                    "RwLock::write",
                    || self.inner.write(),
                    |inner, _held| RwLockWriteGuard { inner, _held },
                )
            }

            #[track_caller]
            pub fn try_read(&self) -> TryLockResult<RwLockReadGuard<'_, T>> {
                non_blocking(
                    &self.point,
                    Access::Shared,
                    "RwLock::try_read",
                    || self.inner.try_read(),
                    |inner, _held| RwLockReadGuard { inner, _held },
                )
            }

            #[track_caller]
            pub fn try_write(&self) -> TryLockResult<RwLockWriteGuard<'_, T>> {
                non_blocking(
                    &self.point,
                    Access::Exclusive,
                    "RwLock::try_write",
                    || self.inner.try_write(),
                    |inner, _held| RwLockWriteGuard { inner, _held },
                )
            }

            pub fn into_inner(self) -> LockResult<T> {
                self.inner.into_inner()
            }

            pub fn get_mut(&mut self) -> LockResult<&mut T> {
                self.inner.get_mut()
            }
        }

        impl<T> std::fmt::Debug for RwLock<T> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("RwLock { .. }")
            }
        }

        impl<T> std::ops::Deref for RwLockReadGuard<'_, T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T> std::ops::Deref for RwLockWriteGuard<'_, T> {
            type Target = T;
            fn deref(&self) -> &T {
                &self.inner
            }
        }

        impl<T> std::ops::DerefMut for RwLockWriteGuard<'_, T> {
            fn deref_mut(&mut self) -> &mut T {
                &mut self.inner
            }
        }

        // Like std's guards: shown as the data they guard.
        guard_fmt!(MutexGuard);
        guard_fmt!(RwLockReadGuard);
        guard_fmt!(RwLockWriteGuard);

        atomic_int!($backend, $sync, AtomicU64, u64);
        atomic_int!($backend, $sync, AtomicUsize, usize);
        atomic_int!($backend, $sync, AtomicU32, u32);

        atomic_common!($backend, $sync, AtomicBool, bool, false);
    };
}
