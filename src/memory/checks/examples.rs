//! Examples, each a table of the contract's answers to steps, and the
//! configuration's cases.

use std::time::Duration;

use super::case::{model_run, parse_answers, parse_steps, Answer, Case};
use super::BoundedLesson;
use crate::decision::ConfigError;
use crate::memory::drive::RuleKind;
use crate::memory::{Bounds, Overflow, Rule};

impl BoundedLesson {
    /// An example: steps as `key@nanos` (a request) or `sweep@nanos`, and
    /// what each gives: `+remaining` / `-retry_after_nanos` for a request,
    /// `=n` for a sweep that forgot n keys. The model must agree with the
    /// table before the subject is judged by it.
    pub fn example(
        &self,
        kind: RuleKind,
        (limit, period_nanos): (u64, u64),
        (max_keys, overflow): (usize, Overflow),
        steps: &str,
        expected: &str,
    ) {
        let case = Case {
            rule: kind.rule(limit, Duration::from_nanos(period_nanos)),
            bounds: Bounds::new("example", max_keys, overflow),
            shadow: false,
            steps: parse_steps(steps).unwrap_or_else(|e| panic!("bad example: {e}")),
        };
        let expected = parse_answers(expected).unwrap_or_else(|e| panic!("bad example: {e}"));
        assert_eq!(
            case.steps.len(),
            expected.len(),
            "bad example: one answer per step"
        );
        let model = model_run(&case);
        let contract: Vec<Answer> = model.iter().map(|s| s.answer).collect();
        assert_eq!(
            contract, expected,
            "bad example: the kata's model disagrees with the table"
        );
        if let Err(e) = self.compare(&case, &model) {
            let replay = case.replay().unwrap_or_default();
            self.fail("an example", format!("{case:?}\n\n{e}{replay}"));
        }
    }

    // ----------------------------------------------------------- configuration

    /// `max_keys: 0` is `ZeroKeys`, after the rule's own errors.
    pub fn refuses_zero_keys(&self) {
        let v = self.tested();
        let cases = [
            (
                Rule::TokenBucket {
                    capacity: 3,
                    refill_every: Duration::from_secs(1),
                },
                0,
                Err(ConfigError::ZeroKeys),
            ),
            (
                Rule::FixedWindow {
                    limit: 0,
                    window: Duration::from_secs(1),
                },
                0,
                Err(ConfigError::ZeroLimit),
            ),
            (
                Rule::FixedWindow {
                    limit: 1,
                    window: Duration::ZERO,
                },
                0,
                Err(ConfigError::ZeroPeriod),
            ),
            (
                Rule::FixedWindow {
                    limit: 1,
                    window: Duration::from_secs(1),
                },
                1,
                Ok(()),
            ),
        ];
        for (rule, max_keys, want) in cases {
            let bounds = Bounds::new("p", max_keys, Overflow::Deny);
            let got = (v.build)(rule, bounds.clone()).map(|_| ());
            if got != want {
                self.fail(
                    "the configuration check",
                    format!(
                        "new({rule:?}, {bounds:?}) returned {got:?}; the contract says {want:?}: \
                         the rule's errors first, in lesson 01's order, then ZeroKeys"
                    ),
                );
            }
            let shadow = (v.shadow)(rule, bounds.clone()).map(|_| ());
            if shadow != want {
                self.fail(
                    "the configuration check",
                    format!(
                        "the shadow wrapper over new({rule:?}, {bounds:?}) returned {shadow:?}; \
                         the contract says {want:?}"
                    ),
                );
            }
        }
    }
}
