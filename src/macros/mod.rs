//! The macros a lesson's test binary is made of: [`lesson!`](crate::lesson),
//! which includes the code the build script wrote, and the wrapping of each
//! implementation as a subject of its kind, what every kind's `variant!`
//! uses. The checks are not macros: each kind returns them as data
//! (`trials`, in its `suite.rs`; see [`crate::trial`]).
//!
//! Every macro is exported from the crate's root and names what it uses by
//! `$crate::` paths, so the file it is written in is no part of its name.

mod lesson;
mod variant;
