//! `kata`: the harness of the ratelimit kata.
//!
//! Every lesson's test binary is built from one `tests/lesson_NN.rs` that
//! calls [`lesson!`] and adds its examples. The lesson itself is described
//! once, in `lessons/lessons.toml` (read by the `kata-catalog` crate);
//! everything else lives here, once:
//!
//! - [`text`]: how messages count things, a leaf every module may use;
//! - [`trial`]: checks as data, a leaf too: a lesson's checks are trials
//!   its kind returns, run by [`trial::main`] as libtest runs tests, each
//!   result also written as a JSON line for the runner;
//! - [`time`], [`decision`]: the contract's types (`Timestamp`, `Decision`,
//!   `ConfigError`, `RateLimiter`);
//! - [`sync`]: the facade a learner file takes its primitives from, over std
//!   and over loom;
//! - [`kind`]: a kind of lesson as a type, the seam where a new kind plugs
//!   in (`Kind`, `Facts`, `Subjects`); [`drive`]: a subject driven one
//!   request at a time, and one compiled implementation (`Variant`);
//! - [`models`], [`rules`]: an executable model of each algorithm, straight
//!   from the contract (`lessons/CONTRACT.md`), and the rules the kinds built
//!   from a rule are checked under;
//! - [`store`]: the bounded store lessons 09 and 10 keep, its model and
//!   the metrics recorder the checks install;
//! - [`timeline`], [`gen`], [`keys`]: timelines, their notation and their
//!   generators, and the keys a limiter can confuse;
//! - [`render`]: tables and strip charts of timelines;
//! - [`run`], [`snapshot`]: how the checks of every kind run their cases
//!   (each watched, a test alone in a child process) and compare drawings
//!   with their committed snapshots;
//! - [`checks`], [`scenarios`]: the checks every limiter passes and the loom
//!   scenarios;
//! - [`virtual_time`]: time that moves only when every task waits on it,
//!   a driver of futures for the kinds whose subjects wait (lesson 11's
//!   client, lesson 12's limits on what is in flight), below the kinds too;
//! - [`layer`], [`redis_limiter`]: what two kinds share, below the kinds: a
//!   rate-limit layer in front of an HTTP service (lesson 07's contract,
//!   model, driver and checks) and a limiter whose state is in Redis
//!   (lesson 08's), which lesson 10's kind checks its own layer and limiter
//!   with;
//! - [`subject`], [`source`], [`watchdog`], [`files`]: which file is
//!   tested, what its source may use, how its panics and hangs become
//!   readable failures, and file names as learners see them;
//! - [`signals`]: a stack overflow reported as Rust reports it, once loom
//!   has run in the process too; [`heartbeat`]: whether async code blocks
//!   its runtime's thread;
//! - [`infra`]: the real servers subjects run on, below every kind: a
//!   `redis-server`, a Redis Cluster, the proxy that orders app servers'
//!   commands, and the client;
//! - the kinds, a module each, holding its `variant!`, `Lesson` and `trials`:
//!   [`limiter`] (lesson 01) and [`shared_limiter`] (02–06), whose lesson is
//!   [`checks::Lesson`]; [`http`], the `http-layer` kind of lesson 07, a
//!   tower layer, and [`redis`], the `redis-limiter` kind of lesson 08, its
//!   state in a real `redis-server` (each the seam over [`layer`] and
//!   [`redis_limiter`]); [`memory`], the `bounded-limiter` kind of lesson 09,
//!   at most `max_keys` keys, reporting through `metrics`; [`async_redis`],
//!   the `async-redis-limiter` kind of lesson 10, an async limiter on one
//!   Redis or a cluster, behind a layer, in three app server processes;
//!   [`client`], the `http-client` kind of lesson 11, a client's layer that
//!   meets 429s without making them worse, in front of lesson 07's layer;
//!   [`inflight`], the `in-flight` kind of lesson 12, permits, a
//!   concurrency limit, a load shedder, a delay queue and adaptive limits;
//!   [`cost`], the `cost` kind of lesson 13, requests that cost more than
//!   one and several limits at once, in process and on Redis;
//! - [`kinds`]: what the runner asks of a lesson's kind, by the name of
//!   its module, so that the runner names no kind (`KINDS` below: a new
//!   kind is its `pub mod` line and a line there);
//! - `macros`: [`lesson!`], and what every kind's `variant!` uses.
//!
//! Modules depend on each other in one direction only, in the layers that
//! `LAYERS` of `catalog/src/layers.rs` lists and checks (the catalog's
//! tests fail on a use that looks up a layer, on an import circle, and on a
//! module this index or ARCHITECTURE.md leaves out): the leaves and the
//! contract's types, then the facade, then the watchdog, then the real
//! servers (`infra`), then timelines and models, then rendering,
//! generators and drivers, then scenarios and how checks run, then the
//! checks, then what two kinds share (`layer`, `redis_limiter`,
//! `virtual_time`), then the kinds, which use no other kind, then the macros.

pub mod async_redis;
pub mod checks;
pub mod client;
pub mod cost;
pub mod decision;
pub mod drive;
pub mod files;
pub mod gen;
pub mod heartbeat;
pub mod http;
pub mod inflight;
pub mod infra;
pub mod keys;
pub mod kind;
pub mod kinds;
pub mod layer;
pub mod limiter;
mod macros;
pub mod memory;
pub mod models;
pub mod redis;
pub mod redis_limiter;
pub mod render;
pub mod rules;
pub mod run;
pub mod scenarios;
pub mod shared_limiter;
pub mod signals;
pub mod snapshot;
pub mod source;
pub mod store;
pub mod subject;
pub mod sync;
pub mod text;
pub mod time;
pub mod timeline;
pub mod trial;
pub mod virtual_time;
pub mod watchdog;

/// What the runner asks of the kinds (each a `pub mod` above), by the name
/// of its module: what `cargo run -- compare` draws ([`kinds::comparison`]).
type Comparison = fn(Option<&str>) -> Result<String, String>;
const KINDS: [(&str, Comparison); 9] = [
    ("limiter", limiter::comparison),
    ("shared_limiter", shared_limiter::comparison),
    ("http", http::comparison),
    ("redis", redis::comparison),
    ("memory", memory::comparison),
    ("async_redis", async_redis::comparison),
    ("client", client::comparison),
    ("inflight", inflight::comparison),
    ("cost", cost::comparison),
];

pub use checks::Lesson;
pub use decision::{AsyncRateLimiter, ConfigError, Decision, RateLimiter};
pub use drive::{Drive, Variant};
pub use scenarios::Scenario;
pub use time::Timestamp;
