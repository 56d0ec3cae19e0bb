//! The contract of lesson 13 as a model, written from `lessons/CONTRACT.md`
//! and not from the reference: each limit is lesson 05's bucket of credit,
//! counted in nanoseconds (T per token) so that a fraction of a token is
//! kept exactly, and a request of cost n is n of lesson 05's requests at
//! one instant, admitted all together or not at all.

use std::collections::HashMap;

use super::{CostError, Decision, Limit, SetupError};
use crate::models::Algorithm;
use std::time::Duration;

/// Limits and their buckets.
#[derive(Clone, Debug)]
pub struct Model {
    limits: Vec<Limit>,
    /// `(limit, key)` → the credit after its last charge, and when that was.
    /// A bucket never charged is full.
    buckets: HashMap<(usize, String), (u128, u128)>,
}

/// What one limit makes of a request: its key, its level before the
/// request, and its wait if it cannot admit it.
#[derive(Clone, Debug)]
pub struct Part {
    pub key: String,
    /// Credit in nanoseconds at the request's instant, before it.
    pub level: u128,
    /// How much shorter than the cost's credit the level is (0: it admits).
    pub short: u128,
}

/// Refuses `limits` as the contract's `Limits::new` does.
pub fn refuses(limits: &[Limit]) -> Option<SetupError> {
    if limits.is_empty() {
        return Some(SetupError::NoLimits);
    }
    limits.iter().enumerate().find_map(|(index, l)| {
        Algorithm::TokenBucket
            .validate(l.capacity, l.refill_every)
            .err()
            .map(|error| SetupError::Limit { index, error })
    })
}

impl Model {
    pub fn new(limits: &[Limit]) -> Result<Model, SetupError> {
        match refuses(limits) {
            Some(e) => Err(e),
            None => Ok(Model {
                limits: limits.to_vec(),
                buckets: HashMap::new(),
            }),
        }
    }

    pub fn limits(&self) -> &[Limit] {
        &self.limits
    }

    fn period(&self, i: usize) -> u128 {
        self.limits[i].refill_every.as_nanos()
    }

    fn full(&self, i: usize) -> u128 {
        u128::from(self.limits[i].capacity) * self.period(i)
    }

    /// Limit `i`'s credit for `key` at `now`: what it had, plus what time
    /// has added since, never more than a full bucket.
    pub fn level(&self, i: usize, key: &str, now: u64) -> u128 {
        let now = u128::from(now);
        match self.buckets.get(&(i, key.to_string())) {
            None => self.full(i),
            Some(&(credit, at)) => (credit + now.saturating_sub(at)).min(self.full(i)),
        }
    }

    /// The errors of a request, in the contract's order, before anything
    /// is charged.
    pub fn refuses(&self, keys: &[&str], cost: u64) -> Option<CostError> {
        if cost == 0 {
            return Some(CostError::ZeroCost);
        }
        if keys.len() != self.limits.len() {
            return Some(CostError::WrongKeys {
                expected: self.limits.len(),
                got: keys.len(),
            });
        }
        self.limits
            .iter()
            .position(|l| cost > l.capacity)
            .map(|limit| CostError::AboveCapacity {
                limit,
                cost,
                capacity: self.limits[limit].capacity,
            })
    }

    /// What each limit makes of a request of `cost` at `now` (no error).
    pub fn parts(&self, keys: &[&str], cost: u64, now: u64) -> Vec<Part> {
        keys.iter()
            .enumerate()
            .map(|(i, key)| {
                let level = self.level(i, key, now);
                let need = u128::from(cost) * self.period(i);
                Part {
                    key: key.to_string(),
                    level,
                    short: need.saturating_sub(level),
                }
            })
            .collect()
    }

    /// The contract's answer to `check` (`peek: false`, which charges
    /// every limit when all admit) or `peek` (which changes nothing).
    pub fn answer(
        &mut self,
        keys: &[&str],
        cost: u64,
        now: u64,
        peek: bool,
    ) -> Result<Decision, CostError> {
        if let Some(e) = self.refuses(keys, cost) {
            return Err(e);
        }
        let parts = self.parts(keys, cost, now);
        // Every limit that cannot admit it says how long until it could:
        // the request waits for the longest of them.
        if let Some(wait) = parts.iter().map(|p| p.short).filter(|s| *s > 0).max() {
            return Ok(Decision::Denied {
                retry_after: Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)),
            });
        }
        let mut remaining = u128::MAX;
        for (i, part) in parts.iter().enumerate() {
            let after = part.level - u128::from(cost) * self.period(i);
            remaining = remaining.min(after / self.period(i));
            if !peek {
                self.buckets
                    .insert((i, part.key.clone()), (after, u128::from(now)));
            }
        }
        Ok(Decision::Allowed {
            remaining: u64::try_from(remaining).unwrap_or(u64::MAX),
        })
    }

    /// Why the contract answers as it does, limit by limit: `user[alice]
    /// holds 2.5 tokens (2_500ns of credit), short of cost 3 by 500ns`.
    pub fn explain(&self, keys: &[&str], cost: u64, now: u64, peek: bool) -> String {
        if let Some(e) = self.refuses(keys, cost) {
            return format!("the contract refuses it before any limit is asked: {e}");
        }
        let parts = self.parts(keys, cost, now);
        let mut said: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let t = self.period(i);
                let holds = format!(
                    "{} ({}ns of credit)",
                    tokens(p.level, t),
                    crate::time::group_digits(p.level)
                );
                let name = self.limits[i].name;
                if p.short == 0 {
                    let left = tokens(p.level - u128::from(cost) * t, t);
                    format!(
                        "{name}[{}] holds {holds}, so it admits cost {cost}{} {left}",
                        p.key,
                        if peek {
                            " and a check would keep"
                        } else {
                            " and keeps"
                        }
                    )
                } else {
                    format!(
                        "{name}[{}] holds {holds}, short of cost {cost} by {}",
                        p.key,
                        super::when(p.short)
                    )
                }
            })
            .collect();
        let denying: Vec<usize> = (0..parts.len()).filter(|i| parts[*i].short > 0).collect();
        if denying.len() > 1 {
            let longest = denying
                .iter()
                .max_by_key(|i| (parts[**i].short, std::cmp::Reverse(**i)))
                .copied()
                .unwrap_or(0);
            said.push(format!(
                "the request waits for the longest of them, {}'s",
                self.limits[longest].name
            ));
        } else if denying.is_empty() && peek {
            said.push("a check would be admitted and charged; a peek charges nothing".into());
        } else if denying.is_empty() && parts.len() > 1 {
            said.push("every limit admits it, so every one is charged".into());
        }
        said.join("; ")
    }
}

/// Credit as tokens, to two decimals (rounded down): `2.5 tokens`.
pub fn tokens(credit: u128, period: u128) -> String {
    let whole = credit / period;
    let hundredths = (credit % period) * 100 / period;
    let n = if hundredths == 0 {
        whole.to_string()
    } else {
        format!("{whole}.{hundredths:02}")
            .trim_end_matches('0')
            .to_string()
    };
    format!("{n} {}", if n == "1" { "token" } else { "tokens" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(name: &'static str, capacity: u64, t: u64) -> Limit {
        Limit::new(name, capacity, Duration::from_nanos(t))
    }

    fn denied(ns: u64) -> Result<Decision, CostError> {
        Ok(Decision::Denied {
            retry_after: Duration::from_nanos(ns),
        })
    }

    fn allowed(remaining: u64) -> Result<Decision, CostError> {
        Ok(Decision::Allowed { remaining })
    }

    #[test]
    fn a_cost_is_that_many_requests_at_once() {
        let mut m = Model::new(&[limit("b", 5, 1000)]).unwrap();
        assert_eq!(m.answer(&["k"], 3, 0, false), allowed(2));
        assert_eq!(m.answer(&["k"], 3, 0, true), denied(1000));
        assert_eq!(m.answer(&["k"], 3, 500, false), denied(500));
        assert_eq!(m.answer(&["k"], 3, 1000, false), allowed(0));
        assert_eq!(
            m.answer(&["k"], 6, 1000, false),
            Err(CostError::AboveCapacity {
                limit: 0,
                cost: 6,
                capacity: 5
            })
        );
        assert_eq!(m.answer(&["k"], 0, 1000, false), Err(CostError::ZeroCost));
    }

    #[test]
    fn the_longest_wait_and_no_partial_charge() {
        let mut m = Model::new(&[limit("user", 2, 1000), limit("global", 4, 10)]).unwrap();
        assert_eq!(m.answer(&["a", "g"], 2, 0, false), allowed(0));
        // user[a] is empty (2000ns short), global[g] holds 2 (0 short).
        assert_eq!(m.answer(&["a", "g"], 2, 0, false), denied(2000));
        assert_eq!(m.answer(&["b", "g"], 2, 0, false), allowed(0));
        // user[b] has refilled 5ns of 1000, global[g] 5ns of 10.
        assert_eq!(m.answer(&["b", "g"], 1, 5, false), denied(995));
        assert_eq!(m.answer(&["c", "g"], 1, 5, false), denied(5));
        assert_eq!(
            m.answer(&["c"], 1, 5, false),
            Err(CostError::WrongKeys {
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            m.answer(&["c", "g"], 3, 5, false),
            Err(CostError::AboveCapacity {
                limit: 0,
                cost: 3,
                capacity: 2
            })
        );
        assert_eq!(tokens(2500, 1000), "2.5 tokens");
        assert_eq!(tokens(1000, 1000), "1 token");
        assert_eq!(tokens(0, 1000), "0 tokens");
        assert_eq!(tokens(1, 3), "0.33 tokens");
    }
}
