//! How an async Redis limiter is built and driven. The learner's type is
//! built from a [`Rule`] and [`Settings`]; `variant!` wraps it as an
//! [`AsyncLimiter`] (its futures boxed, so that the harness holds every
//! subject as one type). For lesson 08's checks it is also a synchronous
//! limiter ([`blocking`]): each call is run to its end on a current-thread
//! tokio runtime of its own, as a blocking caller would.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use super::{Rule, Settings};
use crate::decision::{ConfigError, Decision};
use crate::drive::Drive;
use crate::infra::cluster::RedisCluster;
use crate::redis_limiter::drive::{settings_at, Limiter, RedisVariant, RuleKind};
use crate::redis_limiter::RedisError;
use crate::render::call;
use crate::time::Timestamp;

pub use axum::Router;

/// A future of a subject's, boxed.
pub type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the harness asks of a learner's async Redis limiter.
pub trait AsyncLimiter: Send + Sync {
    /// Redis's answer, or why there is none.
    fn try_check<'a>(
        &'a self,
        key: &'a str,
        now: Timestamp,
    ) -> Boxed<'a, Result<Decision, RedisError>>;
    /// The answer with the failure policy applied (`AsyncRateLimiter`).
    fn check<'a>(&'a self, key: &'a str, now: Timestamp) -> Boxed<'a, Decision>;
}

/// Builds one instance (one app server) of an implementation.
pub type BuildAsync = fn(Rule, Settings) -> Result<Arc<dyn AsyncLimiter>, ConfigError>;

/// The file's whole stack on `router`: its `AsyncRateLimitLayer` over its
/// `AsyncRedisLimiter` (built from the rule and settings), keyed by the
/// peer's address, timed by the clock.
pub type BuildStack = fn(
    Router,
    Rule,
    Settings,
    crate::layer::Policy,
    crate::layer::ManualClock,
) -> Result<Router, String>;

/// One implementation of lesson 10 compiled into its test binary: built as
/// itself, as lesson 08's kind sees it ([`blocking`]), its layer as lesson
/// 07's kind sees one, and the two together as an app server serves them.
#[derive(Clone, Copy)]
pub struct AsyncVariant {
    pub file: &'static str,
    pub source: &'static str,
    pub build: BuildAsync,
    pub blocking: RedisVariant,
    /// The file's `AsyncRateLimitLayer`, over the harness's test limiter.
    pub layer: crate::layer::drive::HttpVariant,
    pub stack: BuildStack,
}

impl crate::kind::Compiled for AsyncVariant {
    fn file(&self) -> &'static str {
        self.file
    }

    fn source(&self) -> &'static str {
        self.source
    }
}

/// An async limiter called from synchronous code: each call runs on the
/// instance's own current-thread runtime until it ends. The instance is
/// built inside that runtime, so whatever it starts there (a multiplexed
/// connection's task) runs while a call does.
struct Blocking {
    limiter: Arc<dyn AsyncLimiter>,
    runtime: tokio::runtime::Runtime,
}

/// `build`'s instance as a synchronous lesson 08 limiter.
pub fn blocking(
    build: BuildAsync,
    rule: Rule,
    settings: Settings,
) -> Result<Arc<dyn Limiter>, ConfigError> {
    let runtime = runtime();
    let limiter = {
        let _inside = runtime.enter();
        build(rule, settings)?
    };
    Ok(Arc::new(Blocking { limiter, runtime }))
}

/// A current-thread runtime with timers and I/O.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("cannot start a tokio runtime: {e}"))
}

impl Limiter for Blocking {
    fn try_check(&self, key: &str, now: Timestamp) -> Result<Decision, RedisError> {
        self.runtime.block_on(self.limiter.try_check(key, now))
    }

    fn check(&self, key: &str, now: Timestamp) -> Decision {
        self.runtime.block_on(self.limiter.check(key, now))
    }
}

/// Settings for a check on `cluster`: every node's URL, and the rest as
/// lesson 08's checks set it ([`settings_at`]).
pub fn settings_on_cluster(cluster: &RedisCluster) -> Settings {
    let urls = cluster.urls();
    Settings {
        redis: super::Redis::Cluster(urls.clone()),
        ..Settings::from(settings_at(&urls[0]))
    }
}

/// One app server on the shared Redis Cluster, driven through `try_check`:
/// an error fails the check with Redis's message and what it means on a
/// cluster.
pub fn on_cluster(
    v: AsyncVariant,
    kind: RuleKind,
    limit: u64,
    period: Duration,
) -> Result<Box<dyn Drive>, ConfigError> {
    let cluster = RedisCluster::shared();
    let limiter = blocking(
        v.build,
        kind.rule(limit, period),
        settings_on_cluster(cluster),
    )?;
    Ok(Box::new(OnCluster(limiter)))
}

struct OnCluster(Arc<dyn Limiter>);

impl Drive for OnCluster {
    fn check(&mut self, key: &str, now: Timestamp) -> Decision {
        match self.0.try_check(key, now) {
            Ok(d) => d,
            Err(e) => panic!(
                "{} returned Err from try_check on the Redis Cluster: {e}{}",
                call(key, now),
                on_a_cluster(&e)
            ),
        }
    }
}

/// What an error from a cluster says about the limiter, as a sentence to
/// add to it (empty for errors that say it themselves).
pub fn on_a_cluster(e: &RedisError) -> String {
    let text = e.to_string();
    if text.contains("CROSSSLOT") {
        "\nThe script's keys are in different hash slots, and a cluster runs a script only on \
         keys of one slot (on one node). Give every key of a client the same hash tag, the \
         part between the first `{` and the next `}`: `Settings::key` names them \
         `{prefix}{k:KEY}:part`, so `k:KEY` is the tag and every part of one client lands in \
         one slot."
            .into()
    } else if text.contains("MOVED") || text.contains("ASK") {
        "\nThe node asked does not serve the key's slot and said which one does. A \
         connection to one node cannot follow that: talk to a cluster through the redis \
         crate's cluster client (`redis::cluster::ClusterClient` and its \
         `get_async_connection`), which knows every node's slots and follows `MOVED` and `ASK`."
            .into()
    } else {
        String::new()
    }
}
