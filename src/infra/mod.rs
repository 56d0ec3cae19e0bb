//! What the kinds run their subjects on, below every kind: a real
//! `redis-server` and a Redis Cluster the harness starts on loopback ports
//! it picks and always stops, the proxy that orders app servers' commands,
//! and the client every implementation connects with.
//!
//! - [`server`]: a `redis-server` the harness starts on a free loopback
//!   port, pauses, kills, restarts, and always stops;
//! - [`cluster`]: a Redis Cluster of three masters with a replica each,
//!   started the same way (lesson 10's), whose slots move and whose masters
//!   fail over on a check's command;
//! - [`proxy`]: a loopback proxy between limiter instances and the server
//!   that holds each instance's next command and releases commands in every
//!   order up to a bound (the loom scenarios, between clients).

pub mod cluster;
pub mod proxy;
pub mod server;

use ::redis::RedisError;

/// A client for `url` that sends nothing when it connects: the redis
/// crate would otherwise send `CLIENT SETINFO` twice and wait for each
/// reply, and a connection to a server that does not answer would then take
/// more than one timeout before the call's own command was even sent.
pub fn client(url: &str) -> Result<redis::Client, RedisError> {
    use redis::IntoConnectionInfo as _;
    let info = url.into_connection_info()?;
    let quiet = info.redis_settings().clone().set_skip_set_lib_name();
    redis::Client::open(info.set_redis_settings(quiet))
}
