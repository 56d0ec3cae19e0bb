//! The kind's properties on generated cases: against the model under a
//! bound, sweeps at the instant a key becomes fresh, and shadow mode.

use proptest::prelude::*;

use super::case::{compare_run, nth_step, Case, Step};
use super::BoundedLesson;
use crate::gen::{timelines, Shape};
use crate::memory::drive::RuleKind;
use crate::memory::{Bounds, Overflow};
use crate::run::run_cases;
use crate::store::model::BoundedModel;
use crate::time::Timestamp;
use crate::timeline::{Request, Timeline};

impl BoundedLesson {
    /// Step by step against the model, on timelines with late requests
    /// over three keys, stores of 1 to 3 keys (mostly 1 or 2, so that they
    /// fill), both overflow answers, and sweeps never, whenever the clock
    /// moves on, before every other request, or half a period ahead of
    /// every third request (so that the requests after it are late): each
    /// answer, `keys_held()` and every metric after every step.
    pub fn agrees_with_model_under_a_bound(&self, kind: RuleKind) {
        let strategy = (
            prop_oneof![exact(kind, Shape::InOrder), exact(kind, Shape::OutOfOrder)],
            small_stores(),
            any::<bool>(),
            0u8..4,
        )
            .prop_map(move |(t, max_keys, admit, sweeps)| {
                let steps = with_sweeps(kind, &t, sweeps);
                Case {
                    rule: kind.rule(t.config.limit, t.config.period),
                    bounds: Bounds::new("api", max_keys, overflow(admit)),
                    shadow: false,
                    steps,
                }
            });
        self.property(
            &format!("agrees with the model under a bound ({})", kind.name()),
            &strategy,
        );
    }

    /// A sweep one nanosecond before, at, or after the instant a key's
    /// state becomes a fresh key's, then a request of that key at the same
    /// instant: forgetting it a nanosecond early hands it a fresh quota,
    /// keeping it after that instant keeps a key the contract forgets.
    pub fn forgets_a_key_exactly_when_it_is_fresh(&self, kind: RuleKind) {
        let strategy = (
            exact(kind, Shape::InOrder),
            any::<prop::sample::Index>(),
            -1i8..=1,
        )
            .prop_map(move |(t, at, offset)| {
                let t = t.on_one_clock();
                let rule = kind.rule(t.config.limit, t.config.period);
                let bounds = Bounds::new("api", 1 << 20, Overflow::Deny);
                let n = at.index(t.requests.len().max(1)).min(t.requests.len());
                let mut steps: Vec<Step> =
                    t.requests[..n].iter().cloned().map(Step::Check).collect();
                let mut model = BoundedModel::new(rule, bounds.clone());
                for r in &t.requests[..n] {
                    model.decide(&r.key, r.now.as_nanos());
                }
                // The last request's key, or "a" on an empty timeline.
                let key = t.requests[..n].last().map_or("a", |r| r.key.as_str());
                let fresh = model.fresh_from(key).unwrap_or(u128::from(model.clock()));
                let probe = (fresh as i128 + i128::from(offset))
                    .clamp(i128::from(model.clock()), i128::from(u64::MAX))
                    as u64;
                steps.push(Step::Sweep(Timestamp::from_nanos(probe)));
                steps.push(Step::Check(Request::new(key, probe)));
                Case {
                    rule,
                    bounds,
                    shadow: false,
                    steps,
                }
            });
        self.property(
            &format!("forgets a key exactly when it is fresh ({})", kind.name()),
            &strategy,
        );
    }

    /// The shadow wrapper never denies: what the limit would deny is
    /// allowed with nothing remaining and counted as shadowed.
    pub fn shadow_never_denies(&self, kind: RuleKind) {
        let strategy = (exact(kind, Shape::InOrder), small_stores(), any::<bool>()).prop_map(
            move |(t, max_keys, admit)| {
                // Swept whenever the clock moves on, through its limiter.
                let steps = with_sweeps(kind, &t, 1);
                Case {
                    rule: kind.rule(t.config.limit, t.config.period),
                    bounds: Bounds::new("next", max_keys, overflow(admit)),
                    shadow: true,
                    steps,
                }
            },
        );
        self.property(
            &format!("shadow mode never denies ({})", kind.name()),
            &strategy,
        );
    }

    fn property(&self, name: &str, strategy: &impl Strategy<Value = Case>) {
        let v = self.tested();
        let cases = 128;
        let result = run_cases(
            self.subjects.subject,
            cases,
            2048,
            strategy,
            nth_step,
            move |case| compare_run(v, case),
        );
        if let Err(failed) = result {
            self.fail(
                &format!("property \"{name}\""),
                format!(
                    "{}: {:?}\n\n{}{}",
                    if failed.hung {
                        "case (not shrunk: it hung)"
                    } else {
                        "minimal case"
                    },
                    failed.value,
                    failed.reason,
                    failed.value.replay().unwrap_or_default()
                ),
            );
        }
    }
}

/// Timelines whose every answer the contract fixes exactly (where `now +
/// C·T`, or `now + 2·W`, fits in u64): beyond, the checks every lesson
/// shares judge only that nothing panics and no wait is zero.
fn exact(kind: RuleKind, shape: Shape) -> impl Strategy<Value = Timeline> {
    let algorithm = kind.algorithm();
    timelines(algorithm, shape).prop_filter("answers the contract fixes exactly", move |t| {
        t.requests
            .iter()
            .all(|r| algorithm.exact_at(&t.config, r.now.as_nanos()))
    })
}

/// A timeline's requests with sweeps among them: never (0), whenever the
/// clock moves on (1), before every other request (2), or half a period
/// ahead of every third request, where the arithmetic stays exact (3).
fn with_sweeps(kind: RuleKind, t: &Timeline, mode: u8) -> Vec<Step> {
    let algorithm = kind.algorithm();
    let half = t.config.period_nanos() / 2 + 1;
    let mut steps = Vec::new();
    let mut last = None;
    for (i, r) in t.requests.iter().enumerate() {
        let at = r.now.as_nanos();
        let sweep = match mode {
            1 => (last != Some(r.now)).then_some(at),
            2 => (i % 2 == 1).then_some(at),
            3 => (i % 3 == 0)
                .then(|| at.saturating_add(half))
                .filter(|ahead| algorithm.exact_at(&t.config, *ahead)),
            _ => None,
        };
        if let Some(at) = sweep {
            steps.push(Step::Sweep(Timestamp::from_nanos(at)));
        }
        last = Some(r.now);
        steps.push(Step::Check(r.clone()));
    }
    steps
}

/// `max_keys` for timelines of three keys: mostly stores that fill.
fn small_stores() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 1usize..=2, 1 => Just(3usize)]
}

fn overflow(admit: bool) -> Overflow {
    if admit {
        Overflow::Admit
    } else {
        Overflow::Deny
    }
}
