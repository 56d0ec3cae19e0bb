//! Races between app servers: the loom scenarios, explored over the order
//! in which their Redis commands reach the server.

use std::sync::Arc;

use super::RedisLesson;
use crate::decision::Decision;
use crate::infra::proxy::Proxy;
use crate::infra::proxy::Step;
use crate::infra::server::RedisServer;
use crate::redis_limiter::drive::{settings_on, Limiter, RuleKind};
use crate::render::call;
use crate::scenarios::{
    compact, first_wrong_in_order, linearizable, linearizations, not_a_race, show_answers,
    show_order, Answers, Scenario,
};
use crate::timeline::Request;
use crate::watchdog::time_limit;

/// How many orders of commands a race scenario explores at most.
const MOST_SCHEDULES: usize = 400;

/// How many times an order may pass over a server that has a command
/// waiting (loom's default bound, for the same reason: races between a few
/// commands need few switches).
const PREEMPTIONS: usize = 2;

impl RedisLesson {
    /// Explores a loom scenario between app servers: each of the scenario's
    /// threads is an instance of its own with a connection of its own, and
    /// the proxy releases their commands in every order (up to
    /// [`MOST_SCHEDULES`]), for each rule. The answers must be those of some
    /// one-at-a-time order of the same calls.
    pub fn race(&self, kind: RuleKind, scenario: Scenario) {
        if let Err(e) = self.explore(kind, &scenario) {
            self.fail(
                &format!("the race scenario \"{}\" ({})", scenario.name, kind.name()),
                e,
            );
        }
    }

    fn explore(&self, kind: RuleKind, s: &Scenario) -> Result<(), String> {
        let server = RedisServer::shared();
        let proxy = Proxy::start(server.addr(), s.threads.len());
        let algorithm = kind.algorithm();
        let allowed = linearizations(algorithm, s);
        let build = self.tested().build;
        let rule = kind.rule(s.config.limit, s.config.period);
        let instances = |prefix: &str| -> Result<Vec<Arc<dyn Limiter>>, String> {
            (0..s.threads.len())
                .map(|i| {
                    let mut settings = settings_on(server);
                    settings.prefix = prefix.to_string();
                    settings.client =
                        crate::redis_limiter::client(&proxy.url(i)).expect("a valid URL");
                    build(rule, settings).map_err(|e| format!("new({rule:?}) returned Err({e:?})"))
                })
                .collect()
        };
        let calls = |l: &dyn Limiter, reqs: &[Request]| -> Result<Vec<Decision>, String> {
            reqs.iter()
                .map(|r| {
                    l.try_check(&r.key, r.now).map_err(|e| {
                        format!("{} returned Err from try_check: {e}", call(&r.key, r.now))
                    })
                })
                .collect()
        };
        // One run first, unscheduled, so that every run after it finds the
        // scripts loaded and sends the same commands.
        {
            let warm = instances(&settings_on(server).prefix)?;
            for (i, reqs) in s.threads.iter().enumerate() {
                calls(&*warm[i], &s.before)?;
                calls(&*warm[i], reqs)?;
            }
            proxy.close_all();
        }
        let mut replay: Vec<usize> = Vec::new();
        for _ in 0..MOST_SCHEDULES {
            let prefix = settings_on(server).prefix;
            let servers = instances(&prefix)?;
            let before = calls(&*servers[0], &s.before)?;
            let mut trace: Vec<(usize, usize)> = Vec::new();
            // Who went last, and how often a server with a command waiting
            // was passed over: orders with more than PREEMPTIONS such
            // switches are not tried (as loom bounds its own).
            let (mut last, mut preempted) = (None::<usize>, 0);
            let mut choose = |ready: &[usize]| {
                // The options: the server that went last first (no switch),
                // then the others in order.
                let mut options: Vec<usize> = (0..ready.len()).collect();
                if let Some(p) = last.and_then(|l| ready.iter().position(|&r| r == l)) {
                    options.retain(|&o| o != p);
                    options.insert(0, p);
                    if preempted >= PREEMPTIONS {
                        options.truncate(1);
                    }
                }
                let c = if options.len() == 1 {
                    0
                } else {
                    let c = replay
                        .get(trace.len())
                        .copied()
                        .unwrap_or(0)
                        .min(options.len() - 1);
                    trace.push((c, options.len()));
                    c
                };
                let pick = options[c];
                if last.is_some_and(|l| ready.contains(&l) && ready[pick] != l) {
                    preempted += 1;
                }
                last = Some(ready[pick]);
                pick
            };
            let clients = s
                .threads
                .iter()
                .enumerate()
                .map(|(i, reqs)| {
                    let (l, reqs) = (servers[i].clone(), reqs.clone());
                    Box::new(move || calls(&*l, &reqs)) as Box<dyn FnOnce() -> _ + Send>
                })
                .collect();
            let (results, steps) = proxy
                .run(clients, &mut choose, None, time_limit())
                .map_err(|(e, steps)| format!("{e}\n{}", self.schedule(&steps)))?;
            let mut threads = Vec::new();
            for (i, r) in results.into_iter().enumerate() {
                match r {
                    Ok(Ok(ds)) => threads.push(ds),
                    Ok(Err(e)) | Err(e) => {
                        return Err(format!(
                            "app server {}: {e}\n{}",
                            i + 1,
                            self.schedule(&steps)
                        ))
                    }
                }
            }
            let after = calls(&*servers[0], &s.after)?;
            let got = Answers {
                before,
                threads,
                after,
            };
            if !linearizable(algorithm, s, &got) {
                let setting = format!(
                    "a {} of limit {} and period {:?}; each app server is an instance of your \
                     limiter with a connection of its own",
                    kind.name(),
                    s.config.limit,
                    s.config.period
                );
                let answers = show_answers(s, &got, "app server");
                let wrong = one_at_a_time(s, &steps).and_then(|order| {
                    let w = first_wrong_in_order(algorithm, s, &got, &order, "app server")?;
                    Some(not_a_race(
                        &w,
                        &show_order(s, &order, "app server"),
                        "order of Redis commands",
                    ))
                });
                if let Some(wrong) = wrong {
                    return Err(format!(
                        "{wrong}({setting})\n{answers}{}",
                        self.schedule(&steps)
                    ));
                }
                let mut text = format!(
                    "In this order of Redis commands the answers match no one-at-a-time order of the same calls ({setting}):\n{answers}One-at-a-time orders give one of these (a call that comes late for its key in that order may also be denied):\n",
                );
                for a in &allowed {
                    text.push_str(&format!("  {}\n", compact(a, "app server")));
                }
                text.push_str(&self.schedule(&steps));
                text.push_str(
                    "\nA decision that takes several commands can be cut in between by another \
                     app server's: make it one command (a Lua script, run with EVALSHA).",
                );
                return Err(text);
            }
            drop(servers);
            proxy.close_all();
            // The next order: the last pick that had another option takes it.
            loop {
                match trace.pop() {
                    None => return Ok(()),
                    Some((c, n)) if c + 1 < n => {
                        replay = trace.iter().map(|(c, _)| *c).collect();
                        replay.push(c + 1);
                        break;
                    }
                    Some(_) => {}
                }
            }
        }
        // Shown with `--nocapture`: the bound was reached before every order.
        crate::trial::println(format_args!(
            "race scenario \"{}\" ({}): stopped after {MOST_SCHEDULES} orders",
            s.name,
            kind.name()
        ));
        Ok(())
    }
}

/// The app servers' calls in the order their commands reached Redis, if
/// no two overlapped: each server makes one call, and the commands of each
/// came one after the other, none of another server's between them.
fn one_at_a_time(s: &Scenario, steps: &[Step]) -> Option<Vec<(usize, usize)>> {
    if s.threads.iter().any(|calls| calls.len() != 1) {
        return None;
    }
    let mut order: Vec<usize> = Vec::new();
    for step in steps {
        if order.last() != Some(&step.client) {
            if order.contains(&step.client) {
                return None;
            }
            order.push(step.client);
        }
    }
    (order.len() == s.threads.len()).then(|| order.into_iter().map(|c| (c, 0)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::infra::proxy::Command;

    fn steps(clients: &[usize]) -> Vec<Step> {
        clients
            .iter()
            .map(|&client| Step {
                client,
                command: Command {
                    raw: Vec::new(),
                    args: vec![b"GET".to_vec(), b"k".to_vec()],
                },
                reply: "nil".into(),
            })
            .collect()
    }

    /// Servers whose commands come together ran one call at a time, in the
    /// order their commands came; interleaved commands did not.
    #[test]
    fn calls_whose_commands_come_together_ran_one_at_a_time() {
        let s = Scenario::burst();
        assert_eq!(
            one_at_a_time(&s, &steps(&[1, 1, 0, 0, 2])),
            Some(vec![(1, 0), (0, 0), (2, 0)])
        );
        assert_eq!(one_at_a_time(&s, &steps(&[1, 0, 1, 0, 2])), None);
        // A server that sent nothing cannot be placed.
        assert_eq!(one_at_a_time(&s, &steps(&[1, 1, 0])), None);
    }
}
