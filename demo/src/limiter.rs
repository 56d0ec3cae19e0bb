//! The demo's limiter: the policy's rule in a store of at most `max_keys`
//! keys, answering as lesson 09's contract says (the harness's model of
//! it) and recording its metrics through the `metrics` facade, labelled
//! with the policy's name.

use std::sync::Mutex;

use kata::http::Policy;
use kata::memory::{Bounds, Overflow, Rule};
use kata::models::Algorithm;
use kata::store::model::BoundedModel;
use kata::{Decision, RateLimiter, Timestamp};

pub struct Metered {
    model: Mutex<BoundedModel>,
    policy: String,
}

impl Metered {
    /// `algorithm`'s rule for `policy` (a token bucket refills its quota
    /// over the window), in at most `max_keys` keys.
    pub fn new(algorithm: Algorithm, policy: &Policy, max_keys: usize) -> Metered {
        let config = kata::http::drive::limiter_config(policy, algorithm);
        let rule = match algorithm {
            Algorithm::TokenBucket => Rule::TokenBucket {
                capacity: config.limit,
                refill_every: config.period,
            },
            _ => Rule::FixedWindow {
                limit: config.limit,
                window: config.period,
            },
        };
        let bounds = Bounds::new(&policy.name, max_keys, Overflow::Deny);
        Metered {
            model: Mutex::new(BoundedModel::new(rule, bounds)),
            policy: policy.name.clone(),
        }
    }

    /// Forgets what can be forgotten.
    pub fn sweep(&self, now: Timestamp) {
        let mut m = self.model.lock().unwrap_or_else(|p| p.into_inner());
        let before = m.counts;
        m.sweep(now.as_nanos());
        m.counts.record_since(&before, &self.policy);
    }
}

impl RateLimiter for Metered {
    fn check(&self, key: &str, now: Timestamp) -> Decision {
        let mut m = self.model.lock().unwrap_or_else(|p| p.into_inner());
        let before = m.counts;
        let d = m.check(key, now.as_nanos(), false);
        m.counts.record_since(&before, &self.policy);
        d
    }
}
