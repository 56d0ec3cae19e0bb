//! Examples, each a table of the contract's answers to a timeline, and the
//! policy's cases.

use std::time::Duration;

use super::replay;
use super::verdict::{contract, judge, short};
use super::HttpLesson;
use crate::layer::drive::{run, HttpVariant};
use crate::layer::exchange;
use crate::layer::{Policy, PolicyError};
use crate::models::Algorithm;
use crate::watchdog::{time_limit, watched};

impl HttpLesson {
    /// An example: a timeline in notation (`SETUP: CALL; CALL`) and the
    /// contract's answers, one per request, separated by `;`: `KEY 200 r=N`
    /// or `KEY 429 t=S`. The model must agree with the table before the
    /// subject is judged by it.
    pub fn example(&self, timeline: &str, answers: &str) {
        let timeline = exchange::parse(timeline).unwrap_or_else(|e| panic!("bad example: {e}"));
        let table: Vec<String> = answers.split(';').map(|a| a.trim().to_string()).collect();
        assert_eq!(
            table.len(),
            timeline.calls.len(),
            "bad example: one answer per request"
        );
        let model: Vec<String> = contract(self.facts.algorithm, &timeline)
            .iter()
            .map(|(keyed, e)| short(&keyed.key, e))
            .collect();
        assert_eq!(
            model, table,
            "bad example: the table contradicts the kata's model"
        );
        let ctx = self.ctx();
        let t = timeline.clone();
        let outcome = self.watched(&timeline, move || {
            judge(ctx.algorithm, &t, &run(ctx.tested, ctx.algorithm, &t)?)
        });
        if let Err(e) = outcome {
            panic!(
                "{} fails this example:\n{e}\n\nreplay it beside the reference:\n  {}",
                self.whose(),
                replay(self.facts.number, &timeline)
            );
        }
    }

    // ----------------------------------------------------------- configuration

    /// A policy case: `RateLimitLayer::new` must answer `expected`.
    pub fn policy(
        &self,
        name: &str,
        quota: u64,
        window: Duration,
        expected: Result<(), PolicyError>,
    ) {
        let policy = Policy::new(name, quota, window);
        assert_eq!(
            policy.validate(),
            expected,
            "bad policy case: the contract says otherwise"
        );
        let tested = self.tested();
        let algorithm = self.facts.algorithm;
        let shown =
            format!("RateLimitLayer::new(…, Policy::new({name:?}, {quota}, {window:?}), …)");
        let got = watched(
            time_limit(),
            |_| String::new(),
            move || build_only(tested, algorithm, policy),
        );
        match got {
            Ok(got) if got == expected => {}
            Ok(got) => panic!(
                "{shown} gave {got:?} in {}; the contract says {expected:?}{}",
                self.whose(),
                match expected {
                    Err(e) => format!(" ({e})"),
                    Ok(()) => String::new(),
                }
            ),
            Err(stop) => panic!("{shown}: {} {}", self.whose(), stop.text()),
        }
    }

    /// Every pair of a name, a quota and a window from the edges of each
    /// fault, judged by the contract's order of checks.
    pub fn policy_grid(&self) {
        let names = [
            "",
            "é",
            "限流",
            "tab\there",
            "del\x7f",
            "api",
            "say \"hi\"",
            " ",
        ];
        let quotas = [0, 1, u64::MAX];
        let windows = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_millis(999),
            Duration::from_secs(1),
            Duration::from_millis(1_500),
            Duration::new(1, 1),
            Duration::new(1 << 24, 1),
            Duration::from_secs(1 << 40),
            Duration::from_secs(60),
            Duration::from_secs(u64::MAX),
        ];
        for name in names {
            for quota in quotas {
                for window in windows {
                    let expected = Policy::new(name, quota, window).validate();
                    self.policy(name, quota, window, expected);
                }
            }
        }
    }
}

fn build_only(v: HttpVariant, algorithm: Algorithm, policy: Policy) -> Result<(), PolicyError> {
    let limiter = crate::layer::drive::TestLimiter::new(
        algorithm,
        &Policy::new("x", 1, Duration::from_secs(1)),
    );
    let parts = crate::layer::drive::Parts {
        limiter,
        policy,
        keys: crate::layer::KeyRule::by_address(),
        clock: crate::layer::ManualClock::default(),
        inner: crate::layer::drive::Echo::default(),
    };
    (v.build)(parts).map(|_| ())
}
