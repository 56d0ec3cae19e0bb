//! A real Redis Cluster, started by the harness the way an operator makes
//! one: three masters, each with a replica, every node a `redis-server`
//! with `--cluster-enabled yes` on loopback ports it picks (its cluster bus
//! on another), the 16,384 hash slots split in three, the nodes introduced
//! with `CLUSTER MEET` and the replicas attached with `CLUSTER REPLICATE`
//! (what `redis-cli --cluster create` sends). It is ready when every node
//! says `cluster_state:ok` and every replica's link to its master is up,
//! and it is always torn down: each node is a [`RedisServer`], stopped when
//! the cluster is dropped and, on Linux, when the process ends in any way;
//! the folder of the nodes' `nodes.conf` files goes with it.
//!
//! What a check of lesson 10 does to it: finds which node serves a slot
//! ([`RedisCluster::master_of`]), moves a slot to another master with keys
//! and all ([`RedisCluster::begin_migration`], then
//! [`RedisCluster::finish_migration`]: between the two a client is sent
//! `ASK`, after them `MOVED`), and kills a master so that its replica takes
//! over ([`RedisCluster::kill_master_of`], [`RedisCluster::await_failover`]).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::infra::server::{free_port, next_id, RedisServer};

/// The masters of a cluster; each has one replica.
pub const MASTERS: usize = 3;

/// The hash slots of every Redis Cluster.
pub const SLOTS: u16 = 16_384;

/// How long a node may go unheard before the others count it as failed:
/// short, so that a failover takes a second or two, not fifteen.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// How long the cluster may take to form, or to fail over.
const SETTLES_WITHIN: Duration = Duration::from_secs(30);

/// How often the harness asks the nodes how far they are.
const POLL: Duration = Duration::from_millis(20);

/// One node of the cluster.
pub struct Node {
    pub server: RedisServer,
    /// Its node id (`CLUSTER MYID`).
    pub id: String,
    /// Its cluster bus port.
    pub bus: u16,
}

/// A Redis Cluster of [`MASTERS`] masters with a replica each.
pub struct RedisCluster {
    /// The masters first (`0..MASTERS`), then their replicas in the same
    /// order.
    nodes: Vec<Node>,
    dir: PathBuf,
}

/// The slot of `key`, as every cluster node and client computes it:
/// CRC16 (XMODEM) of the key modulo 16,384, or of its hash tag, the part
/// between the first `{` and the first `}` after it when that part is not
/// empty (`{k:k}:fw` and `{k:k}:log` share a slot).
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % SLOTS
}

/// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc = 0u16;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster's commands here (`ADDSLOTSRANGE`, `--cluster-port`) are
/// Redis 7's: an older `redis-server` is refused with a sentence.
fn version_7_or_later() -> Result<(), String> {
    let program = crate::infra::server::program();
    let out = std::process::Command::new(&program)
        .arg("--version")
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => crate::infra::server::INSTALL.to_string(),
            _ => format!("{program} --version did not run: {e}"),
        })?;
    let said = String::from_utf8_lossy(&out.stdout);
    let major = said
        .split("v=")
        .nth(1)
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok());
    match major {
        Some(m) if m >= 7 => Ok(()),
        _ => Err(format!(
            "a Redis Cluster needs redis-server 7 or later, and {program} says: {}",
            said.trim()
        )),
    }
}

/// Removes the folders of clusters whose test process is gone: a process
/// killed outright (SIGKILL, at a time limit) drops nothing, and its
/// nodes die with it (they are tied to it) but their folder stays.
fn forget_dead_clusters() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("kata-cluster-")
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // SAFETY: kill(2) with signal 0 only asks whether `pid` exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
        if gone {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The slots master `i` of [`MASTERS`] serves at first.
fn first_slots(i: usize) -> (u16, u16) {
    let per = SLOTS as usize / MASTERS;
    let start = i * per;
    let end = if i + 1 == MASTERS {
        SLOTS as usize - 1
    } else {
        (i + 1) * per - 1
    };
    (start as u16, end as u16)
}

/// The shared cluster's node processes and folder, for the exit handler.
static SHARED_PARTS: std::sync::Mutex<(Vec<u32>, Option<PathBuf>)> =
    std::sync::Mutex::new((Vec::new(), None));

impl RedisCluster {
    /// The cluster every check of this test binary that kills no node
    /// shares (each check keeps to keys of its own). A check may move a
    /// slot: the others' clients must follow `ASK` and `MOVED` as they
    /// would in production.
    /// Panics with the error's sentence when it cannot start.
    pub fn shared() -> &'static RedisCluster {
        static SHARED: std::sync::OnceLock<Result<RedisCluster, String>> =
            std::sync::OnceLock::new();
        let started = SHARED.get_or_init(|| {
            let cluster = RedisCluster::start()?;
            *SHARED_PARTS.lock().unwrap_or_else(|e| e.into_inner()) = (
                cluster
                    .nodes
                    .iter()
                    .filter_map(|n| n.server.pid())
                    .collect(),
                Some(cluster.dir.clone()),
            );
            // A static is never dropped: its nodes are killed and its
            // folder removed when the process exits (and the nodes die
            // with it however it ends; a folder left then goes at the next
            // start).
            extern "C" fn stop_shared() {
                let parts = SHARED_PARTS.lock().unwrap_or_else(|e| e.into_inner());
                for &pid in &parts.0 {
                    // SAFETY: kill(2) on a node of the shared cluster.
                    unsafe {
                        libc::kill(pid as libc::pid_t, libc::SIGKILL);
                    }
                }
                if let Some(dir) = &parts.1 {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            // SAFETY: registers a function with no captures.
            unsafe {
                libc::atexit(stop_shared);
            }
            Ok(cluster)
        });
        match started {
            Ok(cluster) => cluster,
            Err(e) => panic!("{e}"),
        }
    }

    /// Starts a cluster and waits until it serves every slot. An error is
    /// a sentence (no `redis-server`: the install sentence).
    pub fn start() -> Result<RedisCluster, String> {
        version_7_or_later()?;
        forget_dead_clusters();
        let dir =
            std::env::temp_dir().join(format!("kata-cluster-{}-{}", std::process::id(), next_id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
        // Dropped on an error below: every node started so far is stopped.
        let mut cluster = RedisCluster {
            nodes: Vec::new(),
            dir,
        };
        for _ in 0..2 * MASTERS {
            let node = cluster.node()?;
            cluster.nodes.push(node);
        }
        for i in 0..MASTERS {
            let (start, end) = first_slots(i);
            cluster.ask::<()>(
                i,
                redis::cmd("CLUSTER")
                    .arg("ADDSLOTSRANGE")
                    .arg(start)
                    .arg(end),
            )?;
        }
        let first = (cluster.nodes[0].server.port(), cluster.nodes[0].bus);
        for i in 1..cluster.nodes.len() {
            cluster.ask::<()>(
                i,
                redis::cmd("CLUSTER")
                    .arg("MEET")
                    .arg("127.0.0.1")
                    .arg(first.0)
                    .arg(first.1),
            )?;
        }
        let everyone = cluster.nodes.len();
        cluster.settle("every node knows every other", |c| {
            (0..everyone).all(|i| {
                c.ask::<String>(i, redis::cmd("CLUSTER").arg("NODES"))
                    .is_ok_and(|nodes| {
                        nodes.lines().count() == everyone && !nodes.contains("handshake")
                    })
            })
        })?;
        for k in 0..MASTERS {
            let master = cluster.nodes[k].id.clone();
            cluster.ask::<()>(
                MASTERS + k,
                redis::cmd("CLUSTER").arg("REPLICATE").arg(master),
            )?;
        }
        cluster.settle(
            "the cluster serves every slot, every replica in sync",
            |c| c.healthy(),
        )?;
        Ok(cluster)
    }

    /// One node, on a port and a bus port of its own.
    fn node(&self) -> Result<Node, String> {
        let mut last = String::new();
        for _ in 0..5 {
            let bus = free_port().map_err(|e| format!("no free loopback port: {e}"))?;
            let conf = format!("nodes-{bus}.conf");
            let timeout = NODE_TIMEOUT.as_millis().to_string();
            let bus_arg = bus.to_string();
            let started = RedisServer::start_with(
                &self.dir,
                &[
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    &conf,
                    "--cluster-port",
                    &bus_arg,
                    "--cluster-node-timeout",
                    &timeout,
                    // A replica that lost its master long ago still takes
                    // over: the checks kill masters on purpose.
                    "--cluster-replica-validity-factor",
                    "0",
                    // Each node's own file for a replica's full sync.
                    "--dbfilename",
                    &format!("dump-{bus}.rdb"),
                ],
            );
            match started {
                Ok(server) => {
                    let id: String = redis::cmd("CLUSTER")
                        .arg("MYID")
                        .query(&mut server.admin())
                        .map_err(|e| format!("a cluster node did not say its id: {e}"))?;
                    return Ok(Node { server, id, bus });
                }
                Err(e) if e == crate::infra::server::INSTALL => return Err(e),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends `command` to node `i` and reads its answer as `T`.
    fn ask<T: redis::FromRedisValue>(&self, i: usize, command: &redis::Cmd) -> Result<T, String> {
        self.on_node(i, |con| command.query(con))
    }

    /// Runs `talk` on a connection of its own to node `i` (commands that
    /// belong together, as `WAIT` after the write it waits for).
    pub fn on_node<T>(
        &self,
        i: usize,
        talk: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T, String> {
        let node = &self.nodes[i];
        let said =
            |e: redis::RedisError| format!("node {} (port {}): {e}", i + 1, node.server.port());
        let mut con = crate::infra::client(&node.server.url())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_secs(2)))
            .map_err(said)?;
        let _ = con.set_read_timeout(Some(Duration::from_secs(5)));
        talk(&mut con).map_err(said)
    }

    /// Waits (bounded) until `ready` holds; the error names `what`.
    fn settle(&self, what: &str, ready: impl Fn(&RedisCluster) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + SETTLES_WITHIN;
        while Instant::now() < deadline {
            if ready(self) {
                return Ok(());
            }
            std::thread::sleep(POLL);
        }
        Err(format!(
            "the Redis Cluster the harness started did not reach \"{what}\" within {} s:\n{}",
            SETTLES_WITHIN.as_secs(),
            self.describe()
        ))
    }

    /// Every running node says `cluster_state:ok`, and every running
    /// replica's link to its master is up.
    fn healthy(&self) -> bool {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].server.is_running())
            .all(|i| {
                let ok = self
                    .ask::<String>(i, redis::cmd("CLUSTER").arg("INFO"))
                    .is_ok_and(|info| info.contains("cluster_state:ok"));
                let linked = self
                    .ask::<String>(i, redis::cmd("INFO").arg("replication"))
                    .is_ok_and(|info| {
                        info.contains("role:master") || info.contains("master_link_status:up")
                    });
                ok && linked
            })
    }

    /// Each node as `CLUSTER NODES` of the first running node says it, for
    /// a message.
    pub fn describe(&self) -> String {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].server.is_running())
            .find_map(|i| {
                self.ask::<String>(i, redis::cmd("CLUSTER").arg("NODES"))
                    .ok()
            })
            .unwrap_or_else(|| "(no node answers)".into())
    }

    /// Every node, masters first.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The URLs of the running nodes, for a cluster client to start from.
    pub fn urls(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.server.is_running())
            .map(|n| n.server.url())
            .collect()
    }

    /// The node (index into [`RedisCluster::nodes`]) that serves `slot` now,
    /// as a running node's `CLUSTER SLOTS` says.
    pub fn master_of(&self, slot: u16) -> Result<usize, String> {
        use redis::Value;
        let running = (0..self.nodes.len())
            .find(|&i| self.nodes[i].server.is_running())
            .ok_or("no node of the cluster is running")?;
        let ranges: Value = self.ask(running, redis::cmd("CLUSTER").arg("SLOTS"))?;
        let int = |v: &Value| match v {
            Value::Int(n) => Some(*n),
            _ => None,
        };
        // Each range: [start, end, [ip, port, id, …], replicas…].
        let port = match &ranges {
            Value::Array(ranges) => ranges.iter().find_map(|range| {
                let Value::Array(parts) = range else {
                    return None;
                };
                let (start, end) = (int(parts.first()?)?, int(parts.get(1)?)?);
                let Value::Array(master) = parts.get(2)? else {
                    return None;
                };
                (start..=end)
                    .contains(&i64::from(slot))
                    .then(|| int(master.get(1)?))
                    .flatten()
            }),
            _ => None,
        }
        .ok_or_else(|| format!("no node serves slot {slot}:\n{}", self.describe()))?;
        (0..self.nodes.len())
            .find(|&i| i64::from(self.nodes[i].server.port()) == port)
            .ok_or_else(|| format!("slot {slot} is served on port {port}, no node of ours"))
    }

    /// A master other than `i`, running.
    pub fn other_master(&self, i: usize) -> Result<usize, String> {
        (0..self.nodes.len())
            .filter(|&j| j != i && self.nodes[j].server.is_running())
            .find(|&j| {
                self.ask::<String>(j, redis::cmd("INFO").arg("replication"))
                    .is_ok_and(|info| info.contains("role:master"))
            })
            .ok_or_else(|| format!("no master but node {} is running", i + 1))
    }

    /// Starts moving `slot` to master `to`: the slot is `IMPORTING` there
    /// and `MIGRATING` on its master, and every key it holds moves (with
    /// `MIGRATE`). Until [`RedisCluster::finish_migration`] its old master
    /// answers a command on a key it no longer holds with `ASK`.
    pub fn begin_migration(&self, slot: u16, to: usize) -> Result<(), String> {
        let from = self.master_of(slot)?;
        let (from_id, to_id) = (self.nodes[from].id.clone(), self.nodes[to].id.clone());
        self.ask::<()>(
            to,
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("IMPORTING")
                .arg(&from_id),
        )?;
        self.ask::<()>(
            from,
            redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg("MIGRATING")
                .arg(&to_id),
        )?;
        let port = self.nodes[to].server.port();
        // Bounded: each round moves up to 100 keys; a slot holds few here.
        for _ in 0..10_000 {
            let keys: Vec<String> = self.ask(
                from,
                redis::cmd("CLUSTER")
                    .arg("GETKEYSINSLOT")
                    .arg(slot)
                    .arg(100),
            )?;
            if keys.is_empty() {
                return Ok(());
            }
            self.ask::<()>(
                from,
                redis::cmd("MIGRATE")
                    .arg("127.0.0.1")
                    .arg(port)
                    .arg("")
                    .arg(0)
                    .arg(5_000)
                    .arg("KEYS")
                    .arg(&keys),
            )?;
        }
        Err(format!(
            "slot {slot} still holds keys after 10,000 rounds of MIGRATE"
        ))
    }

    /// Ends a move [`RedisCluster::begin_migration`] began: every master
    /// learns that `to` serves `slot`; its old master answers `MOVED`.
    pub fn finish_migration(&self, slot: u16, to: usize) -> Result<(), String> {
        let to_id = self.nodes[to].id.clone();
        let masters: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].server.is_running())
            .filter(|&i| {
                self.ask::<String>(i, redis::cmd("INFO").arg("replication"))
                    .is_ok_and(|info| info.contains("role:master"))
            })
            .collect();
        // The new owner first, as redis-cli does.
        for i in std::iter::once(to).chain(masters.into_iter().filter(|&i| i != to)) {
            self.ask::<()>(
                i,
                redis::cmd("CLUSTER")
                    .arg("SETSLOT")
                    .arg(slot)
                    .arg("NODE")
                    .arg(&to_id),
            )?;
        }
        self.settle("every node agrees on the moved slot", |c| {
            c.master_of(slot) == Ok(to) && c.healthy()
        })
    }

    /// Takes `slot` from the master that serves it (`CLUSTER DELSLOTS`):
    /// that master no longer covers every slot, so it says
    /// `cluster_state:fail` and answers every command with `CLUSTERDOWN`.
    /// Returns the master, for [`RedisCluster::give_slot_back`].
    pub fn take_slot_away(&self, slot: u16) -> Result<usize, String> {
        let master = self.master_of(slot)?;
        let _: () = self.ask(master, redis::cmd("CLUSTER").arg("DELSLOTS").arg(slot))?;
        self.settle(
            "the master without the slot says the cluster is down",
            |c| {
                c.ask::<String>(master, redis::cmd("CLUSTER").arg("INFO"))
                    .is_ok_and(|info| info.contains("cluster_state:fail"))
            },
        )?;
        Ok(master)
    }

    /// Gives `slot` back to `master` (`CLUSTER ADDSLOTS`) and waits until
    /// the cluster is healthy again.
    pub fn give_slot_back(&self, slot: u16, master: usize) -> Result<(), String> {
        let _: () = self.ask(master, redis::cmd("CLUSTER").arg("ADDSLOTS").arg(slot))?;
        self.settle("the slot served again and the cluster healthy", |c| {
            c.master_of(slot) == Ok(master) && c.healthy()
        })
    }

    /// Kills the master that serves `slot` (SIGKILL: what it had not yet
    /// sent its replica is lost) and returns its index.
    pub fn kill_master_of(&self, slot: u16) -> Result<usize, String> {
        let master = self.master_of(slot)?;
        self.nodes[master].server.kill();
        Ok(master)
    }

    /// Waits until a replica serves `slot` in place of the killed master
    /// `was`, and the cluster is healthy again; returns the new master.
    pub fn await_failover(&self, slot: u16, was: usize) -> Result<usize, String> {
        self.settle("a replica took over from the killed master", |c| {
            c.master_of(slot).is_ok_and(|m| m != was) && c.healthy()
        })?;
        self.master_of(slot)
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &self.nodes {
            node.server.resume();
            node.server.kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests;
