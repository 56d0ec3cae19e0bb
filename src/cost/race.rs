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
    /// Limits global (3) and user (2): alice's check beside bob's peek. The
    /// peek sees the limits before the check or after it, never half of it,
    /// and the two never wait on each other for ever (locks taken in one
    /// order by both).
    APeekBesideACheck,
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
    /// A peek rather than a check.
    pub peek: bool,
}

/// A race as data: the limits, a request before it, the two raced, what
/// they must answer, and the peeks after them with their answers.
pub struct Setup {
    pub limits: Vec<Limit>,
    pub before: Option<Request>,
    pub raced: [Request; 2],
    /// The answers the two may give, each pair in the order raced.
    pub want: Vec<[Answer; 2]>,
    pub after: Vec<(Request, Answer)>,
}

const fn req(keys: [&'static str; 2], cost: u64) -> Request {
    Request {
        keys,
        cost,
        peek: false,
    }
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
                want: vec![[allowed(1), denied()], [denied(), allowed(1)]],
                after: vec![(req(["k", ""], 1), allowed(0))],
            },
            Race::TwoTakeANewKey => Setup {
                limits: vec![Limit::new("bucket", 3, T)],
                before: None,
                raced: [req(["k", ""], 2), req(["k", ""], 2)],
                want: vec![[allowed(1), denied()], [denied(), allowed(1)]],
                after: vec![(req(["k", ""], 1), allowed(0))],
            },
            Race::ADenialChargesNothing => Setup {
                limits: vec![Limit::new("global", 4, T), Limit::new("user", 2, T)],
                before: Some(req(["all", "alice"], 1)),
                raced: [req(["all", "alice"], 2), req(["all", "bob"], 2)],
                want: vec![[denied(), allowed(0)]],
                after: vec![
                    (req(["all", "carol"], 1), allowed(0)),
                    (req(["all", "carol"], 2), denied()),
                ],
            },
            Race::TwoRequestsOneGlobalLimit => Setup {
                limits: vec![Limit::new("user", 2, T), Limit::new("global", 3, T)],
                before: None,
                raced: [req(["alice", "all"], 2), req(["bob", "all"], 2)],
                want: vec![[allowed(0), denied()], [denied(), allowed(0)]],
                after: vec![
                    (req(["carol", "all"], 1), allowed(0)),
                    (req(["carol", "all"], 2), denied()),
                ],
            },
            Race::APeekBesideACheck => Setup {
                limits: vec![Limit::new("global", 3, T), Limit::new("user", 2, T)],
                before: None,
                raced: [
                    req(["all", "alice"], 2),
                    Request {
                        peek: true,
                        ..req(["all", "bob"], 2)
                    },
                ],
                want: vec![[allowed(0), allowed(0)], [allowed(0), denied()]],
                after: vec![
                    (req(["all", "carol"], 1), allowed(0)),
                    (req(["all", "carol"], 2), denied()),
                ],
            },
        }
    }

    /// Asks `limiter` as `r` says: a check or a peek.
    fn ask(self, limiter: &dyn Limiter, r: &Request) -> Answer {
        if r.peek {
            limiter.peek(&self.keys(r), r.cost, ZERO)
        } else {
            limiter.check(&self.keys(r), r.cost, ZERO)
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

    /// `check(["all", "alice"], 2) at 0ns`, or its peek.
    pub fn show(self, r: &Request) -> String {
        let verb = if r.peek { "peek" } else { "check" };
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
        let (a, b) = crate::scenarios::both(
            move || self.ask(&**other, &one),
            || self.ask(&**limiter, &two),
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
        let want = &setup.want[0];
        let agrees = setup.want.iter().any(|w| w[0] == a && w[1] == b);
        let told = match (setup.before, &before) {
            (Some(r), Some(got)) => {
                format!("first, {} answered {}; then ", self.show(&r), answer(got))
            }
            _ => String::new(),
        };
        let [one, two] = setup.raced;
        let raced = format!(
            "{told}at once: {} answered {}, and {} answered {}",
            self.show(&one),
            answer(&a),
            self.show(&two),
            answer(&b)
        );
        if !agrees {
            let contract = match self {
                Race::APeekBesideACheck => format!(
                    "the check {}, and the peek {} if it came first or {} if it came after: a \
                     peek sees the limits before a check or after it, never half of one",
                    answer(&want[0]),
                    answer(&want[1]),
                    answer(&setup.want[1][1]),
                ),
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
                    self.show(&Request { peek: true, ..*r }),
                    answer(&got),
                    answer(want),
                    if self.single() {
                        "the two requests left 1 token, no more, no less"
                    } else {
                        "after them the global limit holds 1 token, no more, no less"
                    }
                ));
            }
        }
        Ok(())
    }
}
