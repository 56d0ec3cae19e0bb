//! The macros a lesson's test binary is made of: [`lesson!`](crate::lesson)
//! and what it expands to, the wrapping of each implementation as a subject
//! of its kind, and the tests every kind of limiter shares. Each kind's own
//! tests are next to its checks (`http/suite.rs`, `redis/suite.rs`,
//! `memory/suite.rs`).
//!
//! Every macro is exported from the crate's root and names what it uses by
//! `$crate::` paths, so the file it is written in is no part of its name.

mod lesson;
mod variant;
