use super::*;

#[test]
fn a_key_s_slot_follows_its_hash_tag() {
    // The examples of the cluster specification.
    assert_eq!(crc16(b"123456789"), 0x31c3);
    assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
    assert_eq!(key_slot(b"foo{}{bar}"), crc16(b"foo{}{bar}") % SLOTS);
    assert_eq!(key_slot(b"foo{{bar}}zap"), key_slot(b"{bar"));
    assert_eq!(key_slot(b"foo{bar}{zap}"), key_slot(b"bar"));
    assert_eq!(key_slot(b"kata:7:{k:k}:fw"), key_slot(b"kata:9:{k:k}:log"));
}

/// The cluster forms, agrees with the harness on slots, refuses a
/// script whose keys span two slots, and leaves nothing behind.
#[test]
fn a_cluster_starts_serves_every_slot_and_stops() {
    let cluster = RedisCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let masters: Vec<usize> = (0..SLOTS)
        .step_by(1_000)
        .map(|slot| cluster.master_of(slot).unwrap())
        .collect();
    let mut distinct = masters.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct, [0, 1, 2], "{}", cluster.describe());
    for key in ["a", "kata:7:{k:k}:fw", "{user1000}.following", "x{}y"] {
        let theirs: u16 = cluster
            .ask(0, redis::cmd("CLUSTER").arg("KEYSLOT").arg(key))
            .unwrap();
        assert_eq!(key_slot(key.as_bytes()), theirs, "{key}");
    }
    // Keys in two slots: refused by name. One hash tag: served.
    let (a, b) = ("kata:{a}:x", "kata:{b}:x");
    assert_ne!(key_slot(a.as_bytes()), key_slot(b.as_bytes()));
    let node = cluster.master_of(key_slot(a.as_bytes())).unwrap();
    let two = cluster.ask::<redis::Value>(
        node,
        redis::cmd("EVAL")
            .arg("return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)")
            .arg(2)
            .arg(a)
            .arg(b),
    );
    let refused = two.expect_err("a script over two slots must be refused");
    assert!(refused.to_lowercase().contains("crossslot"), "{refused}");
    let one: String = cluster
        .ask(
            node,
            redis::cmd("EVAL")
                .arg("return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)")
                .arg(2)
                .arg(a)
                .arg("kata:{a}:y"),
        )
        .unwrap();
    assert_eq!(one, "OK");
    let ports: Vec<u16> = cluster.nodes().iter().map(|n| n.server.port()).collect();
    let dir = cluster.dir.clone();
    drop(cluster);
    for port in ports {
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "a node still listens on port {port}"
        );
    }
    assert!(!dir.exists(), "{} is left behind", dir.display());
}

/// The folder of a cluster whose process is gone goes at the next
/// start; one whose process lives stays.
#[test]
fn a_dead_process_s_cluster_folder_is_forgotten() {
    // A process that has ended: a child, waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let gone = std::env::temp_dir().join(format!("kata-cluster-{dead}-0"));
    let alive =
        std::env::temp_dir().join(format!("kata-cluster-{}-{}", std::process::id(), next_id()));
    for dir in [&gone, &alive] {
        std::fs::create_dir_all(dir).unwrap();
    }
    forget_dead_clusters();
    let (gone_now, alive_now) = (gone.exists(), alive.exists());
    let _ = std::fs::remove_dir_all(&alive);
    assert!(!gone_now, "{}", gone.display());
    assert!(alive_now, "{}", alive.display());
}

/// A slot moves to another master with its keys (`ASK` while it moves,
/// `MOVED` after), and a killed master's replica takes over.
#[test]
fn a_slot_moves_and_a_killed_master_s_replica_takes_over() {
    let cluster = RedisCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let key = "kata:10:{k:k}:fw";
    let slot = key_slot(key.as_bytes());
    let from = cluster.master_of(slot).unwrap();
    cluster
        .ask::<()>(from, redis::cmd("SET").arg(key).arg(7))
        .unwrap();
    let to = cluster.other_master(from).unwrap();
    cluster.begin_migration(slot, to).unwrap();
    let asked = cluster
        .ask::<String>(from, redis::cmd("GET").arg(key))
        .expect_err("a moving slot's key is asked for elsewhere");
    assert!(asked.to_lowercase().contains("ask"), "{asked}");
    cluster.finish_migration(slot, to).unwrap();
    assert_eq!(cluster.master_of(slot), Ok(to));
    let moved = cluster
        .ask::<String>(from, redis::cmd("GET").arg(key))
        .expect_err("a moved slot's key is elsewhere");
    assert!(moved.to_lowercase().contains("moved"), "{moved}");
    let seven: String = cluster.ask(to, redis::cmd("GET").arg(key)).unwrap();
    assert_eq!(seven, "7");
    // Written on its new master and replicated before the kill: WAIT,
    // on the connection that wrote, says the replica has it.
    let acked: i64 = cluster
        .on_node(to, |con| {
            redis::cmd("INCR").arg(key).query::<i64>(con)?;
            redis::cmd("WAIT").arg(1).arg(5_000).query(con)
        })
        .unwrap();
    assert_eq!(acked, 1);
    let killed = cluster.kill_master_of(slot).unwrap();
    assert_eq!(killed, to);
    let promoted = cluster.await_failover(slot, killed).unwrap();
    assert_ne!(promoted, killed);
    let still: String = cluster.ask(promoted, redis::cmd("GET").arg(key)).unwrap();
    assert_eq!(still, "8");
}
