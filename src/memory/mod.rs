//! The `bounded-limiter` kind (lesson 09): a limiter that holds at most
//! `max_keys` keys, forgets a key only when forgetting it changes no answer,
//! and says what it does through the `metrics` facade.
//!
//! - this module: the contract's types ([`Rule`], [`Bounds`], [`Overflow`])
//!   and the metrics' names ([`metric`]), named here as the contract names
//!   them (they, the model of the store and the recorder the checks install
//!   live below the kinds, in [`crate::store`], as lesson 10's fallback keeps
//!   the same store), and the allocator that counts the bytes a test binary
//!   holds ([`Counting`]);
//! - [`drive`]: how the learner's type is built and driven;
//! - [`checks`]: the checks of the kind, with [`races`](checks::races)
//!   (sweeps and a full store under loom);
//! - `suite`: its checks as data, `trials` (see [`crate::trial`]).

pub mod checks;
pub mod drive;
mod suite;
mod variant;

// The kind, as the code the build script writes uses it (see `crate::kind`).
pub use crate::__bounded_variant as variant;
pub use suite::trials;
/// A lesson of this kind.
pub type Lesson = checks::BoundedLesson;

/// What `cargo run -- compare 9 [TIMELINE]` draws: the store under
/// pressure (the default), a store's steps (`a@0 sweep@1000`), a case as a
/// failure prints it, or a timeline every lesson shares, drawn for each
/// rule; anything else is refused with the timelines' words.
pub fn comparison(timeline: Option<&str>) -> Result<String, String> {
    let which = timeline
        .map_or(checks::STORE_DRAWING, str::trim)
        .to_string();
    let drawn = which == checks::STORE_DRAWING
        || checks::parse_steps(&which).is_ok()
        || checks::Case::read(&which).is_ok();
    if !drawn {
        crate::timeline::Standard::resolve(&which).map_err(|e| {
            format!(
                "{e}; or name lesson 09's drawing, {}",
                checks::STORE_DRAWING
            )
        })?;
    }
    Ok(which)
}

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

pub use crate::store::{metric, Bounds, Overflow, Rule};

/// The system allocator, counting the bytes held at any moment: a lesson 09
/// test binary installs it (`#[global_allocator]`) so that the flood check
/// can weigh what a limiter holds without trusting what it says.
pub struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);

impl Counting {
    /// The bytes allocated and not yet freed, by every thread.
    pub fn held() -> usize {
        HELD.load(Ordering::Relaxed)
    }
}

// SAFETY: every call is passed to the system allocator unchanged; the
// counter is only arithmetic on the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
            HELD.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}
