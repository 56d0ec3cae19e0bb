//! The kata's runner and self-check, as a library their two binaries share:
//!
//! - [`suite`]: runs a lesson's test binary as a child process and reads its
//!   results;
//! - [`runner`]: what `cargo run` knows: lesson states, milestones, hints;
//! - [`staged`]: a lesson's checks run milestone by milestone and tier by
//!   tier, stopping at the first failure;
//! - [`report`]: the instructors' report, and the cache that keeps it quick;
//! - [`state`]: what the runner remembers of a learner (`.kata/`);
//! - [`forward`]: the arguments `class` hands to the class view;
//! - [`load`]: `cargo run -- load`, a running server validated under load;
//! - [`progress`]: the spinner the commands show while they work;
//! - [`points`]: a report's points, milestone by milestone (what CI prints).
//!
//! The lessons themselves come from `lessons/lessons.toml` through the
//! `kata-catalog` crate.

pub mod forward;
pub mod load;
pub mod points;
pub mod progress;
pub mod report;
pub mod runner;
pub mod staged;
pub mod state;
pub mod suite;
