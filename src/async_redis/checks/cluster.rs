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
use crate::infra::cluster::{key_slot, RedisCluster, NODE_TIMEOUT};
use crate::infra::server::next_id;
use crate::redis_limiter::drive::{Limiter, RuleKind, RULES};
use crate::redis_limiter::OnFailure;
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

/// The rows and problems of a check, and the answers it expects: the
/// failure policy's, and a fresh key's from Redis.
struct Run<'a> {
    limiter: &'a dyn Limiter,
    policy: Decision,
    fresh: Decision,
    rows: Vec<Row>,
    problems: Vec<String>,
    /// Calls made: each is a second after the one before.
    calls: u64,
}

/// The policy of the checks on a cluster of their own.
const RETRY_AFTER: Duration = Duration::from_secs(7);

/// A cluster of a check's own, and settings on it: the check's timeout,
/// closed with [`RETRY_AFTER`].
fn own_cluster() -> (RedisCluster, crate::async_redis::Settings) {
    let cluster = RedisCluster::start().unwrap_or_else(|e| panic!("{e}"));
    let mut settings = settings_on_cluster(&cluster);
    settings.timeout = TIMEOUT;
    settings.on_failure = OnFailure::Closed {
        retry_after: RETRY_AFTER,
    };
    (cluster, settings)
}

impl<'a> Run<'a> {
    fn new(limiter: &'a dyn Limiter) -> Run<'a> {
        Run {
            limiter,
            policy: Decision::Denied {
                retry_after: RETRY_AFTER,
            },
            fresh: Decision::Allowed {
                remaining: LIMIT - 1,
            },
            rows: Vec::new(),
            problems: Vec::new(),
            calls: 0,
        }
    }

    /// The instant of the next call.
    fn next(&mut self) -> Timestamp {
        self.calls += 1;
        Timestamp::from_secs(10 + self.calls)
    }

    /// Connected to every master, the script loaded: a fresh key's answer
    /// within 10 calls (bounded: a loaded machine may miss the first
    /// timeout).
    fn warmed(&mut self) -> bool {
        (0..10).any(|i| {
            let (key, at) = (format!("warm{i}"), self.next());
            let answer = self.limiter.check(&key, at);
            self.rows.push(Row {
                phase: "warming up",
                key,
                at,
                answer: Ok(answer),
                want: describe(&self.fresh),
            });
            answer == self.fresh
        })
    }

    /// A call while Redis cannot answer (`why`): the policy's answer within
    /// the timeout.
    fn policy_call(&mut self, phase: &'static str, why: &str, key: &str, at: Timestamp) {
        let started = Instant::now();
        let answer = self.limiter.check(key, at);
        let took = started.elapsed();
        if took > TIMEOUT + MARGIN {
            self.problems.push(format!(
                "{} took {took:?} {why}, past the timeout of {TIMEOUT:?}",
                call(key, at)
            ));
        }
        if answer != self.policy {
            self.problems.push(format!(
                "{} answered {} {why}; the failure policy's answer is {} (an error is not an \
                 answer from Redis)",
                call(key, at),
                describe(&answer),
                describe(&self.policy)
            ));
        }
        self.rows.push(Row {
            phase,
            key: key.to_string(),
            at,
            answer: Ok(answer),
            want: describe(&self.policy),
        });
    }

    /// Calls, one per key, until one gets a fresh key's answer from Redis
    /// (the client learns of the change within a few), the policy's
    /// accepted until then; whether Redis answered.
    fn until_redis_answers(
        &mut self,
        phase: &'static str,
        keys: impl IntoIterator<Item = String>,
    ) -> bool {
        for key in keys {
            let at = self.next();
            let answer = self.limiter.check(&key, at);
            self.rows.push(Row {
                phase,
                key: key.clone(),
                at,
                answer: Ok(answer),
                want: format!(
                    "{} (or the policy's, until the client learns)",
                    describe(&self.fresh)
                ),
            });
            if answer == self.fresh {
                return true;
            }
            if answer != self.policy {
                self.problems.push(format!(
                    "{} answered {}: neither Redis's answer nor the policy's",
                    call(&key, at),
                    describe(&answer)
                ));
                return false;
            }
        }
        false
    }
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
        let (cluster, settings) = own_cluster();
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
        let mut run = Run::new(&*limiter);
        // Warm: connected to every master, the script loaded (bounded: a
        // loaded machine may miss the first timeout).
        if !run.warmed() {
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
            let at = run.next();
            let want = model.decide(&key, at.as_nanos());
            let answer = limiter.check(&key, at);
            if answer != want {
                run.problems.push(format!(
                    "{} answered {}; Redis's answer is {}",
                    call(&key, at),
                    describe(&answer),
                    describe(&want)
                ));
            }
            before.push(at);
            run.rows.push(Row {
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
            let at = run.next();
            run.policy_call(
                "master dead",
                "with the key's master dead and no replica yet in its place",
                &key,
                at,
            );
        }
        let promoted = cluster
            .await_failover(slot, killed)
            .unwrap_or_else(|e| panic!("{e}"));
        // The client learns of the new master within a few calls: a new
        // key of a slot the promoted replica serves each time, answered by
        // the policy until then.
        let back =
            run.until_redis_answers("after the failover", on_its_master(&cluster, promoted, 20));
        if !back {
            run.problems.push(format!(
                "after master {} failed over to its replica (now master {}), 20 calls for new \
                 keys still got the failure policy's answer: the limiter never went back to \
                 Redis. A cluster client refreshes its slot map after an error; a connection \
                 kept after it broke does not",
                killed + 1,
                promoted + 1
            ));
        }
        // After: answers of a limiter that saw the first `kept` requests.
        let after: Vec<Timestamp> = (0..LIMIT + 1).map(|_| run.next()).collect();
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
            run.rows.push(Row {
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
            crate::trial::println(format_args!(
                "failover: the replica had {kept} of the {} writes before the kill; {} \
                 admitted beyond the limit after it",
                before.len(),
                before.len() - kept
            ));
        }
        if back && kept.is_none() {
            run.problems.push(format!(
                "after the failover, the answers for {key:?} are not those of a limiter that saw \
                 any number of its first {LIMIT} requests: a failover may lose the writes the \
                 replica had not received (the last ones), never more, and never invents any"
            ));
        }
        if !run.problems.is_empty() {
            self.fail(
                "the check of a failover",
                format!(
                    "a fixed window of {LIMIT} per hour, timeout {TIMEOUT:?}, on_failure Closed \
                     {{ retry_after: 7s }}, on a Redis Cluster of three masters with a replica \
                     each; the key's master (master {}) killed mid-run:\n{}\n- {}",
                    killed + 1,
                    table(&run.rows),
                    run.problems.join("\n- ")
                ),
            );
        }
    }

    /// A master that stops covering a slot (`CLUSTER DELSLOTS`) says
    /// `cluster_state:fail` and answers `CLUSTERDOWN`: each call for a key
    /// it serves gets the failure policy's answer within the timeout, and
    /// counts as a fallback decision (reason `cluster_down`, or `timeout`
    /// when the cluster client retried until the timeout); once the slot
    /// is back, Redis answers again.
    pub fn cluster_down_gets_the_policy(&self) {
        use crate::async_redis::{metric, Reason};
        use crate::store::metrics::Recorded;
        let (cluster, settings) = own_cluster();
        let kind = RuleKind::FixedWindow;
        let key = "d".to_string();
        let slot = key_slot(settings.key(&key, "x").as_bytes());
        let recorder = Recorded::default();
        let mut back = false;
        let mut master = 0;
        let (rows, mut problems) = metrics::with_local_recorder(&recorder, || {
            let limiter: Arc<dyn Limiter> = blocking(
                self.tested().build,
                kind.rule(LIMIT, HOUR),
                settings.clone(),
            )
            .unwrap_or_else(|e| panic!("new returned Err({e:?})"));
            let mut run = Run::new(&*limiter);
            // Warm: connected, the script loaded (bounded).
            if !run.warmed() {
                run.problems.push(
                    "before the slot was taken away, 10 calls for new keys never got Redis's \
                     answer (allowed, 3 remaining) on a healthy cluster"
                        .to_string(),
                );
                return (run.rows, run.problems);
            }
            master = cluster
                .take_slot_away(slot)
                .unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..3 {
                let at = run.next();
                run.policy_call(
                    "the slot unserved",
                    "while the key's master answered CLUSTERDOWN",
                    &key,
                    at,
                );
            }
            cluster
                .give_slot_back(slot, master)
                .unwrap_or_else(|e| panic!("{e}"));
            back = run.until_redis_answers(
                "the slot served again",
                std::iter::repeat_n(key.clone(), 20),
            );
            (run.rows, run.problems)
        });
        if problems.is_empty() && !back {
            problems.push(
                "after the slot was served again, 20 calls still got the failure policy's \
                 answer: the limiter never went back to Redis"
                    .to_string(),
            );
        }
        // Every call with the cluster down was a fallback decision, counted
        // as `cluster_down` (or `timeout`, when the client retried until
        // the timeout); the calls after it as many as got the policy.
        let counted = recorder.read();
        let fallbacks = |reason: Reason| {
            let series = crate::store::metrics::series(
                metric::FALLBACKS,
                &[
                    (metric::POLICY, settings.local.policy.as_str()),
                    (metric::REASON, reason.label()),
                ],
            );
            counted
                .get(&series)
                .map_or(0, |v| f64::from_bits(v.0) as u64)
        };
        let policy = Decision::Denied {
            retry_after: RETRY_AFTER,
        };
        let by_policy = rows.iter().filter(|r| r.answer == Ok(policy)).count() as u64;
        let (down_counted, timeouts) = (fallbacks(Reason::ClusterDown), fallbacks(Reason::Timeout));
        let others: u64 = Reason::ALL
            .iter()
            .filter(|r| !matches!(r, Reason::ClusterDown | Reason::Timeout))
            .map(|&r| fallbacks(r))
            .sum();
        if problems.is_empty() && (down_counted + timeouts != by_policy || others > 0) {
            problems.push(format!(
                "the answers are right, the metrics are not (`fault::fallback_decisions_counted_by_reason` \
                 checks them alone): {by_policy} calls got the failure policy's answer (3 with \
                 the cluster down); {} counts {down_counted} with reason `cluster_down`, {timeouts} with \
                 `timeout` and {others} with another reason. Each fallback decision counts \
                 once, by `Reason::of(&error)` (a `CLUSTERDOWN` reply is `cluster_down`), or \
                 `timeout` if your timeout ran out first",
                metric::FALLBACKS
            ));
        }
        if !problems.is_empty() {
            self.fail(
                "the check of a cluster that is down",
                format!(
                    "a fixed window of {LIMIT} per hour, timeout {TIMEOUT:?}, on_failure Closed \
                     {{ retry_after: 7s }}, on a Redis Cluster of three masters; slot {slot} \
                     (the key's) taken from master {} (`CLUSTER DELSLOTS`), which then answers \
                     `CLUSTERDOWN`, then given back:\n{}\n- {}",
                    master + 1,
                    table(&rows),
                    problems.join("\n- ")
                ),
            );
        }
    }
}
