//! Lesson 13's loom races: two requests at the last tokens of one GCRA,
//! and two requests through several limits at once, where a denial may
//! charge nothing, not even for a moment another thread could see.

use std::sync::Arc;
use std::time::Duration;

use super::draw::answer;
use super::drive::{Answer, CostVariant, Limiter};
use super::{Decision, Limit, Timestamp};

#[derive(Clone, Copy, Debug)]
pub enum Race {
    /// A GCRA of 4 tokens, 1 spent; two threads ask for 2 at one instant:
    /// exactly one gets them, and 1 token is left.
    TwoTakeTheLastTokens,
    /// The same on a key never seen, of 3 tokens: both threads may find it
    /// missing, and the second to insert it must not start it afresh.
    TwoTakeANewKey,
    /// Limits global (4) and user (2); alice has spent 1. Alice asks for 2
    /// (her own limit denies it) while bob asks for 2: bob must be admitted
    /// whichever runs first, since a denial charges nothing.
    ADenialChargesNothing,
    /// Limits user (2) and global (3); alice and bob each ask for 2: the
    /// global limit has room for one of them only.
    TwoRequestsOneGlobalLimit,
}

const ZERO: Timestamp = Timestamp::ZERO;
const T: Duration = Duration::from_nanos(1_000);

fn allowed(remaining: u64) -> Answer {
    Ok(Decision::Allowed { remaining })
}

fn denied() -> Answer {
    Ok(Decision::Denied { retry_after: T })
}

/// One request of a race.
#[derive(Clone, Copy)]
pub struct Request {
    pub keys: [&'static str; 2],
    pub cost: u64,
}

/// A race as data: the limits, a request before it, the two raced, what
/// they must answer, and the peeks after them with their answers.
pub struct Setup {
    pub limits: Vec<Limit>,
    pub before: Option<Request>,
    pub raced: [Request; 2],
    pub want: [Answer; 2],
    pub after: Vec<(Request, Answer)>,
}

const fn req(keys: [&'static str; 2], cost: u64) -> Request {
    Request { keys, cost }
}

impl Race {
    /// Whether it races a single bucket (`Gcra`).
    pub fn single(self) -> bool {
        matches!(self, Race::TwoTakeTheLastTokens | Race::TwoTakeANewKey)
    }

    pub fn setup(self) -> Setup {
        match self {
            // The key exists before the race: both threads take its TAT
            // from the map, and race on it alone.
            Race::TwoTakeTheLastTokens => Setup {
                limits: vec![Limit::new("bucket", 4, T)],
                before: Some(req(["k", ""], 1)),
                raced: [req(["k", ""], 2), req(["k", ""], 2)],
                want: [allowed(1), denied()],
                after: vec![(req(["k", ""], 1), allowed(0))],
            },
            Race::TwoTakeANewKey => Setup {
                limits: vec![Limit::new("bucket", 3, T)],
                before: None,
                raced: [req(["k", ""], 2), req(["k", ""], 2)],
                want: [allowed(1), denied()],
                after: vec![(req(["k", ""], 1), allowed(0))],
            },
            Race::ADenialChargesNothing => Setup {
                limits: vec![Limit::new("global", 4, T), Limit::new("user", 2, T)],
                before: Some(req(["all", "alice"], 1)),
                raced: [req(["all", "alice"], 2), req(["all", "bob"], 2)],
                want: [denied(), allowed(0)],
                after: vec![
                    (req(["all", "carol"], 1), allowed(0)),
                    (req(["all", "carol"], 2), denied()),
                ],
            },
            Race::TwoRequestsOneGlobalLimit => Setup {
                limits: vec![Limit::new("user", 2, T), Limit::new("global", 3, T)],
                before: None,
                raced: [req(["alice", "all"], 2), req(["bob", "all"], 2)],
                want: [allowed(0), denied()],
                after: vec![
                    (req(["carol", "all"], 1), allowed(0)),
                    (req(["carol", "all"], 2), denied()),
                ],
            },
        }
    }

    /// The keys the limiter is asked with.
    pub fn keys(self, r: &Request) -> Vec<&'static str> {
        if self.single() {
            vec![r.keys[0]]
        } else {
            r.keys.to_vec()
        }
    }

    /// `check(["all", "alice"], 2) at 0ns`.
    pub fn show(self, r: &Request, verb: &str) -> String {
        if self.single() {
            format!("{verb}_n({:?}, {}) at 0ns", r.keys[0], r.cost)
        } else {
            format!("{verb}({:?}, {}) at 0ns", self.keys(r), r.cost)
        }
    }

    /// What breaks in one schedule under loom, if anything.
    pub fn breaks(self, v: CostVariant) -> Option<String> {
        let setup = self.setup();
        let built = if self.single() {
            let l = setup.limits[0];
            (v.gcra_loom)(l.capacity, T).map_err(|e| format!("Gcra::new: {e}"))
        } else {
            (v.limits_loom)(&setup.limits).map_err(|e| format!("Limits::new: {e}"))
        };
        let limiter: Arc<Box<dyn Limiter>> = match built {
            Ok(l) => Arc::new(l),
            Err(e) => return Some(e),
        };
        let before = setup
            .before
            .map(|r| limiter.check(&self.keys(&r), r.cost, ZERO));
        let other = limiter.clone();
        let [one, two] = setup.raced;
        let (k1, k2) = (self.keys(&one), self.keys(&two));
        let (a, b) = crate::scenarios::both(
            move || other.check(&k1, one.cost, ZERO),
            || limiter.check(&k2, two.cost, ZERO),
        );
        self.judge(&setup, before, [a, b], |r| {
            limiter.peek(&self.keys(r), r.cost, ZERO)
        })
        .err()
    }

    /// Whether the raced answers and the peeks after them are the
    /// contract's, whichever request ran first.
    pub fn judge(
        self,
        setup: &Setup,
        before: Option<Answer>,
        [a, b]: [Answer; 2],
        peek: impl Fn(&Request) -> Answer,
    ) -> Result<(), String> {
        let want = &setup.want;
        let fits = |x: &Answer, y: &Answer| *x == want[0] && *y == want[1];
        // Either request may win the last tokens; alice's denial does not
        // depend on the order.
        let agrees = match self {
            Race::ADenialChargesNothing => fits(&a, &b),
            _ => fits(&a, &b) || fits(&b, &a),
        };
        let told = match (setup.before, &before) {
            (Some(r), Some(got)) => {
                format!(
                    "first, {} answered {}; then ",
                    self.show(&r, "check"),
                    answer(got)
                )
            }
            _ => String::new(),
        };
        let [one, two] = setup.raced;
        let raced = format!(
            "{told}at once: {} answered {}, and {} answered {}",
            self.show(&one, "check"),
            answer(&a),
            self.show(&two, "check"),
            answer(&b)
        );
        if !agrees {
            let contract = match self {
                Race::ADenialChargesNothing => format!(
                    "in either order, the first {} and the second {}: alice's own limit denies \
                     her, so her request charges nothing, not even for a moment: the global \
                     limit still has 3 tokens for bob's 2",
                    answer(&want[0]),
                    answer(&want[1]),
                ),
                _ => format!(
                    "one of them {} and the other {}: {}",
                    answer(&want[0]),
                    answer(&want[1]),
                    if self.single() {
                        "3 tokens hold one cost of 2, not two"
                    } else {
                        "the global limit's 3 tokens hold one cost of 2, not two"
                    }
                ),
            };
            return Err(format!("{raced}; the contract: {contract}"));
        }
        for (r, want) in &setup.after {
            let got = peek(r);
            if got != *want {
                return Err(format!(
                    "{raced}; then {} answered {}, where the contract answers {}: {}",
                    self.show(r, "peek"),
                    answer(&got),
                    answer(want),
                    match self {
                        Race::TwoTakeTheLastTokens =>
                            "the two requests left 1 token, no more, \
                            no less",
                        _ => "after them the global limit holds 1 token, no more, no less",
                    }
                ));
            }
        }
        Ok(())
    }
}
