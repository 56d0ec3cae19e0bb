//! `kata`: the harness of the ratelimit kata.
//!
//! Every lesson's test binary is built from one `tests/lesson_NN.rs` that
//! calls [`lesson!`] and adds its examples. The lesson itself is described
//! once, in `lessons/lessons.toml` (read by the `kata-catalog` crate);
//! everything else lives here, once:
//!
//! - [`time`], [`decision`]: the contract's types (`Timestamp`, `Decision`,
//!   `ConfigError`, `RateLimiter`);
//! - [`sync`]: the facade a learner file takes its primitives from, over std
//!   and over loom;
//! - [`drive`]: how a timeline drives each kind of subject (the seam where
//!   a new kind of lesson plugs in);
//! - [`models`]: an executable model of each algorithm, straight from the
//!   contract (`lessons/CONTRACT.md`);
//! - [`timeline`], [`gen`]: timelines, their notation and their generators;
//! - [`render`]: tables and strip charts of timelines;
//! - [`run`], [`snapshot`]: how the checks of every kind run their cases
//!   (each watched, a test alone in a child process) and compare drawings
//!   with their committed snapshots;
//! - [`checks`], [`scenarios`]: the generic checks and the loom scenarios;
//! - [`subject`], [`source`], [`watchdog`], [`files`]: which file is
//!   tested, what its source may use, how its panics and hangs become
//!   readable failures, and file names as learners see them;
//! - [`signals`]: a stack overflow reported as Rust reports it, once loom
//!   has run in the process too;
//! - [`http`]: the `http-layer` kind of lesson 07, whose subject is a tower
//!   layer: its contract types, model, timelines, driver and checks;
//! - [`redis`]: the `redis-limiter` kind of lesson 08, whose state lives in a
//!   real `redis-server`: its contract types, the server, the proxy that
//!   orders app servers' commands, the driver and checks;
//! - [`memory`]: the `bounded-limiter` kind of lesson 09, a limiter that
//!   holds at most `max_keys` keys and reports through `metrics`: its
//!   contract types, model, driver and checks;
//! - `macros`: [`lesson!`] and what it expands to, the tests every kind of
//!   limiter shares (each kind's own are in its folder's `suite.rs`).
//!
//! Modules depend on each other in one direction only: the contract's types
//! and file names, then the facade, then the watchdog, then timelines and
//! models, then rendering, generators, drivers and scenarios, then how
//! checks run and snapshots compare, then the checks; [`http`], [`redis`]
//! and [`memory`] build on all of them, and nothing else depends on them
//! but [`http`], whose demo server's limiter is [`memory`]'s model.

pub mod checks;
pub mod decision;
pub mod drive;
pub mod files;
pub mod gen;
pub mod http;
pub mod kind;
pub mod limiter;
mod macros;
pub mod memory;
pub mod models;
pub mod redis;
pub mod render;
pub mod rules;
pub mod run;
pub mod scenarios;
pub mod shared_limiter;
pub mod signals;
pub mod snapshot;
pub mod source;
pub mod subject;
pub mod sync;
pub mod time;
pub mod timeline;
pub mod watchdog;

pub use checks::Lesson;
pub use decision::{ConfigError, Decision, RateLimiter};
pub use drive::{Drive, Variant};
pub use scenarios::Scenario;
pub use time::Timestamp;
