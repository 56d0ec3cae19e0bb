//! Examples, each a table of the decisions the contract gives a timeline,
//! and the constructor's cases.

use std::time::Duration;

use super::judge::divergence;
use super::runs::run_watched;
use super::{replay, Lesson};
use crate::decision::{describe, ConfigError, Decision};
use crate::models::model_run;
use crate::render::{first_difference, render_compare};
use crate::time::Timestamp;
use crate::timeline::{parse_decisions, Config, Timeline};
use crate::watchdog::{time_limit, watched};

impl Lesson {
    /// An example: the requests in timeline notation and the decisions the
    /// contract gives them (`+remaining` / `-retry_after_nanos`). The harness's
    /// model must agree with the table before the subject is judged by it.
    pub fn example(&self, limit: u64, period_nanos: u64, requests: &str, expected: &str) {
        let config = Config::new(limit, period_nanos);
        let timeline =
            Timeline::parse(config, requests).unwrap_or_else(|e| panic!("bad example: {e}"));
        let expected = parse_decisions(expected).unwrap_or_else(|e| panic!("bad example: {e}"));
        assert_eq!(
            timeline.requests.len(),
            expected.len(),
            "bad example: one decision per request"
        );
        assert!(
            timeline.in_order(),
            "bad example: the contract fixes exact answers only for requests that are not late \
             for their key; late requests are checked by the properties"
        );
        let modelled = model_run(self.facts.algorithm, &timeline);
        if let Some(i) = first_difference(&modelled, &expected) {
            panic!(
                "this example's table contradicts the kata's model at request #{} (a bug in the tests, not in your code):\n{}",
                i + 1,
                render_compare(self.facts.algorithm, &timeline, ("model", "table"), &modelled, &expected, Some(i))
            );
        }
        let tested = self.tested();
        let got = self.unwrap(&timeline, run_watched(tested, &timeline));
        if let Some(i) = first_difference(&got, &expected) {
            panic!(
                "{}\n\n{}\nreplay it beside the reference's answers:\n  {}",
                divergence(&timeline, i, &self.whose(), &got, "the contract", &expected),
                render_compare(
                    self.facts.algorithm,
                    &timeline,
                    ("yours", "expected"),
                    &got,
                    &expected,
                    Some(i)
                ),
                replay(self.facts.number, &timeline)
            );
        }
    }

    /// A constructor case: `new(limit, period)` must give `windowed` in the
    /// windowed lessons and `bucket` in the token buckets.
    pub fn config(
        &self,
        limit: u64,
        period: Duration,
        windowed: Result<(), ConfigError>,
        bucket: Result<(), ConfigError>,
    ) {
        let expected = if self.facts.algorithm.windowed() {
            windowed
        } else {
            bucket
        };
        assert_eq!(
            self.facts.algorithm.validate(limit, period),
            expected,
            "bad config case: the contract says otherwise"
        );
        let build = self.tested().build;
        let shown = format!("{}::new({limit}, {period:?})", self.facts.limiter);
        // The constructor and the first call are watched apart, so that a
        // failure names the one that failed.
        let built = watched(
            time_limit(),
            |_| String::new(),
            move || build(limit, period),
        );
        let got = match built {
            Err(stop) => Err(stop),
            Ok(Err(e)) => Ok(Err(e)),
            Ok(Ok(mut limiter)) => {
                match watched(
                    time_limit(),
                    |_| String::new(),
                    move || limiter.check("key", Timestamp::ZERO),
                ) {
                    Ok(first) => Ok(Ok(first)),
                    Err(stop) => panic!(
                        "{}: the first check(\"key\", 0ns) after {shown} {}",
                        self.subject(),
                        stop.text()
                    ),
                }
            }
        };
        match (got, expected) {
            (Err(stop), _) => panic!("{shown} {}", stop.text()),
            (Ok(Ok(first)), Ok(())) => {
                let want = Decision::Allowed { remaining: limit - 1 };
                assert!(
                    first == want,
                    "{shown} built a limiter, but its first request was {}; a fresh key must be {}",
                    describe(&first),
                    describe(&want)
                );
            }
            (Ok(Ok(_)), Err(e)) => panic!(
                "{shown} returned Ok, but this configuration must be rejected with ConfigError::{e:?}: {e}"
            ),
            (Ok(Err(got)), Ok(())) => {
                panic!("{shown} returned Err(ConfigError::{got:?}), but this configuration is valid")
            }
            (Ok(Err(got)), Err(e)) => assert!(
                got == e,
                "{shown} returned Err(ConfigError::{got:?}), but the contract checks in order \
                 (zero limit, zero period, too large) and this one is ConfigError::{e:?}: {e}"
            ),
        }
    }

    /// Every limit from {0, 1, 2, 2^32 + 1, u64::MAX} with every period from
    /// {0, 1 ns, 1 s, u64::MAX / 2 ns and one more, u64::MAX ns and one more}:
    /// each fault at its edge, alone and with every other fault it can occur
    /// with, judged by the contract's order of checks.
    pub fn config_grid(&self) {
        let max = Duration::from_nanos(u64::MAX);
        let one = Duration::from_nanos(1);
        let limits = [0, 1, 2, (1u64 << 32) + 1, u64::MAX];
        let periods = [
            Duration::ZERO,
            one,
            Duration::from_secs(1),
            Duration::from_nanos(u64::MAX / 2),
            Duration::from_nanos(u64::MAX / 2 + 1),
            max,
            max + one,
        ];
        for limit in limits {
            for period in periods {
                let expected = self.facts.algorithm.validate(limit, period);
                self.config(limit, period, expected, expected);
            }
        }
    }
}
