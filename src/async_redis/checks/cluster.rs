//! On a Redis Cluster, what lesson 08's checks cannot show: a slot moved
//! between masters mid-run changes no answer (the client follows `ASK`,
//! then `MOVED`), and a master killed mid-run costs at most the writes its
//! replica had not received, the failure policy answering until the
//! replica takes over, within the timeout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::AsyncLesson;
use crate::async_redis::drive::{blocking, on_a_cluster, settings_on_cluster};
use crate::decision::{describe, Decision};
use crate::redis::cluster::{key_slot, RedisCluster, NODE_TIMEOUT};
use crate::redis::drive::{Limiter, RuleKind, RULES};
use crate::redis::server::next_id;
use crate::redis::OnFailure;
use crate::render::call;
use crate::time::Timestamp;
use crate::timeline::Config;

/// The limit of both checks, per hour.
const LIMIT: u64 = 4;
const HOUR: Duration = Duration::from_secs(3600);
/// The timeout of the failover check, and what a call may take past it.
const TIMEOUT: Duration = Duration::from_millis(300);
const MARGIN: Duration = Duration::from_millis(300);

/// A step of a slot's move: nothing, begin, finish.
type Move = fn(&RedisCluster, u16, usize) -> Result<(), String>;

/// One request of a check and what became of it, for a failure's table.
struct Row {
    phase: &'static str,
    key: String,
    at: Timestamp,
    answer: Result<Decision, String>,
    want: String,
}

fn table(rows: &[Row]) -> String {
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let got = match &r.answer {
                Ok(d) => describe(d),
                Err(e) => format!("Err({e})"),
            };
            format!(
                "  {:>2}. {:<28} {:<40} {got:<34} wanted: {}",
                i + 1,
                r.phase,
                call(&r.key, r.at),
                r.want
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl AsyncLesson {
    /// For each rule, a key's requests while its slot moves to another
    /// master: some before, some while the slot is migrating (`ASK`), some
    /// after (`MOVED`): every answer is the model's.
    pub fn answers_hold_while_a_slot_moves(&self) {
        let cluster = RedisCluster::shared();
        let mut rows = Vec::new();
        let mut wrong = false;
        for kind in RULES {
            let settings = settings_on_cluster(cluster);
            let key = format!("moving{}", next_id());
            let slot = key_slot(settings.key(&key, "x").as_bytes());
            let limiter = blocking(self.tested().build, kind.rule(LIMIT, HOUR), settings)
                .unwrap_or_else(|e| panic!("new returned Err({e:?})"));
            let mut model = kind.algorithm().model(Config {
                limit: LIMIT,
                period: HOUR,
            });
            let from = cluster.master_of(slot).unwrap_or_else(|e| panic!("{e}"));
            let to = cluster.other_master(from).unwrap_or_else(|e| panic!("{e}"));
            let phases: [(&str, Move); 3] = [
                ("before the move", |_, _, _| Ok(())),
                ("slot migrating (ASK)", |c, s, to| c.begin_migration(s, to)),
                ("slot moved (MOVED)", |c, s, to| c.finish_migration(s, to)),
            ];
            let mut n = 0u64;
            for (phase, change) in phases {
                change(cluster, slot, to).unwrap_or_else(|e| panic!("{e}"));
                for _ in 0..3 {
                    let at = Timestamp::from_secs(10 + n);
                    n += 1;
                    let want = model.decide(&key, at.as_nanos());
                    let answer = limiter
                        .try_check(&key, at)
                        .map_err(|e| format!("{e}{}", on_a_cluster(&e).replace('\n', " ")));
                    wrong |= answer.as_ref() != Ok(&want);
                    rows.push(Row {
                        phase,
                        key: key.clone(),
                        at,
                        answer,
                        want: describe(&want),
                    });
                }
            }
            if wrong {
                self.fail(
                    "the check that answers hold while a slot moves",
                    format!(
                        "{}, {LIMIT} per hour, on a Redis Cluster of three masters; the key's \
                         slot {slot} moves from master {} to master {} mid-run:\n{}\nA cluster \
                         client follows `ASK` (one command sent again to the node named, after \
                         `ASKING`) and `MOVED` (the slot map refreshed); a connection to one node \
                         follows neither.",
                        kind.name(),
                        from + 1,
                        to + 1,
                        table(&rows)
                    ),
                );
            }
            rows.clear();
        }
    }

    /// A master killed mid-run (SIGKILL), on a cluster of its own: until
    /// its replica takes over, each call gets the failure policy's answer
    /// within the timeout; once it has, Redis answers again, and the key's
    /// answers are those of a limiter that saw all of its requests but the
    /// last few, the writes the replica had not received (never more than
    /// were made before the kill, and none that were not made).
    pub fn a_failover_costs_at_most_the_writes_not_replicated(&self) {
        let cluster = RedisCluster::start().unwrap_or_else(|e| panic!("{e}"));
        let mut settings = settings_on_cluster(&cluster);
        settings.timeout = TIMEOUT;
        let retry_after = Duration::from_secs(7);
        settings.on_failure = OnFailure::Closed { retry_after };
        let policy = Decision::Denied { retry_after };
        let kind = RuleKind::FixedWindow;
        let key = "f".to_string();
        let slot = key_slot(settings.key(&key, "x").as_bytes());
        // Client keys whose slot `slot`'s master serves (found by trying
        // names: a third of them land there).
        let on_its_master = |cluster: &RedisCluster, master: usize, n: usize| -> Vec<String> {
            (0..)
                .map(|i| format!("g{i}"))
                .filter(|k| {
                    cluster.master_of(key_slot(settings.key(k, "x").as_bytes())) == Ok(master)
                })
                .take(n)
                .collect()
        };
        let limiter: Arc<dyn Limiter> = blocking(
            self.tested().build,
            kind.rule(LIMIT, HOUR),
            settings.clone(),
        )
        .unwrap_or_else(|e| panic!("new returned Err({e:?})"));
        let config = Config {
            limit: LIMIT,
            period: HOUR,
        };
        let mut rows = Vec::new();
        let mut problems = Vec::new();
        let mut n = 0u64;
        let mut next = || {
            n += 1;
            Timestamp::from_secs(10 + n)
        };
        // Warm: connected to every master, the script loaded (bounded: a
        // loaded machine may miss the first timeout).
        let fresh = Decision::Allowed {
            remaining: LIMIT - 1,
        };
        let warm = (0..10).any(|i| limiter.check(&format!("warm{i}"), next()) == fresh);
        if !warm {
            self.fail(
                "the check of a failover",
                "before any master was killed, 10 calls for new keys never got Redis's answer \
                 (allowed, 3 remaining) on a healthy cluster"
                    .into(),
            );
        }
        // Before: two of the limit used, so that the answers after show how
        // many of them the replica kept, and that it kept no more.
        let mut before = Vec::new();
        let mut model = kind.algorithm().model(config);
        for _ in 0..LIMIT - 2 {
            let at = next();
            let want = model.decide(&key, at.as_nanos());
            let answer = limiter.check(&key, at);
            if answer != want {
                problems.push(format!(
                    "{} answered {}; Redis's answer is {}",
                    call(&key, at),
                    describe(&answer),
                    describe(&want)
                ));
            }
            before.push(at);
            rows.push(Row {
                phase: "before the kill",
                key: key.clone(),
                at,
                answer: Ok(answer),
                want: describe(&want),
            });
        }
        let killed = cluster
            .kill_master_of(slot)
            .unwrap_or_else(|e| panic!("{e}"));
        let since = Instant::now();
        // No replica can take over before the node timeout has passed: at
        // least one call, and as many as fit before it.
        let mut first = true;
        while std::mem::take(&mut first) || since.elapsed() + TIMEOUT + MARGIN < NODE_TIMEOUT {
            let at = next();
            let started = Instant::now();
            let answer = limiter.check(&key, at);
            let took = started.elapsed();
            if took > TIMEOUT + MARGIN {
                problems.push(format!(
                    "{} took {took:?} with the key's master dead, past the timeout of {TIMEOUT:?}",
                    call(&key, at)
                ));
            }
            if answer != policy {
                problems.push(format!(
                    "{} answered {} with the key's master dead and no replica yet in its place; \
                     the failure policy's answer is {} (an error is not an answer from Redis)",
                    call(&key, at),
                    describe(&answer),
                    describe(&policy)
                ));
            }
            rows.push(Row {
                phase: "master dead",
                key: key.clone(),
                at,
                answer: Ok(answer),
                want: describe(&policy),
            });
        }
        let promoted = cluster
            .await_failover(slot, killed)
            .unwrap_or_else(|e| panic!("{e}"));
        // The client learns of the new master within a few calls: a new
        // key of a slot the promoted replica serves each time, answered by
        // the policy until then.
        let mut back = false;
        for probe in on_its_master(&cluster, promoted, 20) {
            let at = next();
            let answer = limiter.check(&probe, at);
            rows.push(Row {
                phase: "after the failover",
                key: probe.clone(),
                at,
                answer: Ok(answer),
                want: format!(
                    "{} (or the policy's, until the client learns)",
                    describe(&fresh)
                ),
            });
            if answer == fresh {
                back = true;
                break;
            }
            if answer != policy {
                problems.push(format!(
                    "{} answered {}: neither Redis's answer nor the policy's",
                    call(&probe, at),
                    describe(&answer)
                ));
                break;
            }
        }
        if !back {
            problems.push(format!(
                "after master {} failed over to its replica (now master {}), 20 calls for new \
                 keys still got the failure policy's answer: the limiter never went back to \
                 Redis. A cluster client refreshes its slot map after an error; a connection \
                 kept after it broke does not",
                killed + 1,
                promoted + 1
            ));
        }
        // After: answers of a limiter that saw the first `kept` requests.
        let after: Vec<Timestamp> = (0..LIMIT + 1).map(|_| next()).collect();
        let answers: Vec<Decision> = after.iter().map(|&at| limiter.check(&key, at)).collect();
        let kept = (0..=before.len()).rev().find(|&kept| {
            let mut m = kind.algorithm().model(config);
            for at in &before[..kept] {
                m.decide(&key, at.as_nanos());
            }
            after
                .iter()
                .zip(&answers)
                .all(|(at, a)| m.decide(&key, at.as_nanos()) == *a)
        });
        for (at, answer) in after.iter().zip(&answers) {
            rows.push(Row {
                phase: "the key, after",
                key: key.clone(),
                at: *at,
                answer: Ok(*answer),
                want: "as if the replica lost at most the last writes".into(),
            });
        }
        if let Some(kept) = kept {
            // What the failover cost, for `--nocapture`: requests the
            // replica forgot, each one more admission than the policy's.
            println!(
                "failover: the replica had {kept} of the {} writes before the kill; {} \
                 admitted beyond the limit after it",
                before.len(),
                before.len() - kept
            );
        }
        if back && kept.is_none() {
            problems.push(format!(
                "after the failover, the answers for {key:?} are not those of a limiter that saw \
                 any number of its first {LIMIT} requests: a failover may lose the writes the \
                 replica had not received (the last ones), never more, and never invents any"
            ));
        }
        if !problems.is_empty() {
            self.fail(
                "the check of a failover",
                format!(
                    "a fixed window of {LIMIT} per hour, timeout {TIMEOUT:?}, on_failure Closed \
                     {{ retry_after: 7s }}, on a Redis Cluster of three masters with a replica \
                     each; the key's master (master {}) killed mid-run:\n{}\n- {}",
                    killed + 1,
                    table(&rows),
                    problems.join("\n- ")
                ),
            );
        }
    }
}
