//! Lesson 13's checks, written once: each check as a method of
//! [`CostLesson`].

use std::time::Duration;

use super::draw::draw;
use super::drive::{Answer, CostVariant, Limiter};
use super::gen::{self, Script, Shape};
use super::race::Race;
use super::verdict::{answers, follow};
use super::{ConfigError, Limit, SetupError};
use crate::kind::{Checked, Facts, Kind, Subjects};
use crate::watchdog::{time_limit, watched};

/// Lesson 13: what the catalog says of it, and its subjects.
pub struct CostLesson(Checked<CostVariant>);

/// The facts, the subjects and the ways of naming, failing and watching
/// a subject that every kind shares.
impl std::ops::Deref for CostLesson {
    type Target = Checked<CostVariant>;

    fn deref(&self) -> &Checked<CostVariant> {
        &self.0
    }
}

impl Kind for CostLesson {
    type Variant = CostVariant;

    fn new(facts: Facts, subjects: Subjects<CostVariant>) -> CostLesson {
        CostLesson(Checked {
            facts,
            subjects,
            noun: "limiter",
        })
    }
}

/// Which of the learner's types a check asks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Which {
    TokenBucket,
    Gcra,
    Limits,
    RedisLimits,
}

impl Which {
    pub fn name(self) -> &'static str {
        match self {
            Which::TokenBucket => "TokenBucket",
            Which::Gcra => "Gcra",
            Which::Limits => "Limits",
            Which::RedisLimits => "RedisLimits",
        }
    }

    fn shape(self) -> Shape {
        match self {
            Which::TokenBucket | Which::Gcra => Shape::Single,
            Which::Limits => Shape::Several,
            Which::RedisLimits => Shape::Redis,
        }
    }

    /// The type built for `limits` (a single bucket takes the one limit);
    /// a refusal is an error sentence.
    pub fn build(self, v: CostVariant, limits: &[Limit]) -> Result<Box<dyn Limiter>, String> {
        let single = |b: fn(u64, Duration) -> super::drive::Built<ConfigError>| {
            let l = limits[0];
            b(l.capacity, l.refill_every).map_err(|e| {
                format!(
                    "{}::new({}, {:?}) returned Err({e:?}): {e}",
                    self.name(),
                    l.capacity,
                    l.refill_every
                )
            })
        };
        match self {
            Which::TokenBucket => single(v.bucket),
            Which::Gcra => single(v.gcra),
            Which::Limits => {
                (v.limits)(limits).map_err(|e| format!("Limits::new returned Err({e:?}): {e}"))
            }
            Which::RedisLimits => (v.redis)(limits, super::redis::on_server())
                .map_err(|e| format!("RedisLimits::new returned Err({e:?}): {e}")),
        }
    }
}

/// A check on Redis or on the cluster.
#[derive(Clone, Copy, Debug)]
pub enum OnRedis {
    OneScript,
    Expires,
    PeekWritesNothing,
    Unreachable,
    Race(Race),
    OneTag,
    CrossSlot,
}

impl CostLesson {
    /// Fails, naming the line, if the file reads the real clock or sleeps:
    /// its answers depend only on its limits and its requests.
    pub fn uses_only_its_inputs(&self) {
        self.0.uses_only_its_inputs(crate::source::Inputs::Calls)
    }

    /// `TokenBucket::new` or `Gcra::new` refuses, or not, as lesson 05's.
    pub fn bucket_config(&self, which: Which, capacity: u64, period: Duration) {
        let want = crate::models::Algorithm::TokenBucket
            .validate(capacity, period)
            .map(|_| ());
        let v = self.tested();
        let got = self.watched(which.name(), move || {
            let b = match which {
                Which::TokenBucket => v.bucket,
                _ => v.gcra,
            };
            Ok(b(capacity, period).map(|_| ()))
        });
        if got != want {
            self.fail(
                &format!("{}::new({capacity}, {period:?})", which.name()),
                &format!("it answers {got:?}; the contract (lesson 05's) answers {want:?}"),
            );
        }
    }

    /// `Limits::new` (or `RedisLimits::new`) refuses, or not, as the
    /// contract says.
    pub fn limits_config(&self, which: Which, limits: Vec<Limit>, want: Result<(), SetupError>) {
        assert_eq!(
            super::model::refuses(&limits).map_or(Ok(()), Err),
            want,
            "the case disagrees with the contract"
        );
        let v = self.tested();
        let shown = format!("{limits:?}");
        let refused = want.is_err();
        let got = self.watched(which.name(), move || {
            Ok(match which {
                Which::RedisLimits => super::redis::setup(v, &limits, refused),
                _ => (v.limits)(&limits).map(|_| ()),
            })
        });
        if got != want {
            self.fail(
                &format!(
                    "{}::new(&{shown}{})",
                    which.name(),
                    match which {
                        Which::RedisLimits => ", settings of a Redis that never answers",
                        _ => "",
                    }
                ),
                &format!(
                    "it answers {got:?}; the contract answers {want:?}{}",
                    match which {
                        Which::RedisLimits => " (the limits are checked before Redis is asked)",
                        _ => "",
                    }
                ),
            );
        }
    }

    /// The token bucket answers requests of the costs at the instants (ns)
    /// given as `expected` says, and as the model does (milestone 1's: the
    /// GCRA's answers are the same model's, in its property).
    pub fn costs(&self, limit: Limit, requests: &[(u64, u64)], expected: &[Answer]) {
        let script = Script {
            single: true,
            on_redis: false,
            limits: vec![limit],
            requests: requests
                .iter()
                .map(|&(cost, at)| gen::Req {
                    keys: vec!["k".into()],
                    cost,
                    at,
                    peek: false,
                })
                .collect(),
        };
        let mut m = script.model();
        let contract: Vec<Answer> = script
            .requests
            .iter()
            .map(|r| m.answer(&r.keys(), r.cost, r.at, false))
            .collect();
        assert_eq!(
            contract, expected,
            "the example disagrees with the contract"
        );
        let v = self.tested();
        let which = Which::TokenBucket;
        self.watched(which.name(), move || {
            let l = which.build(v, &script.limits)?;
            follow(&*l, &script).map(|_| ())
        });
    }

    /// Runs one property of `cases` cases; its failure shows the smallest
    /// case found.
    fn property(
        &self,
        what: &str,
        cases: u32,
        strategy: &impl proptest::strategy::Strategy<Value = Script>,
        check: impl Fn(&Script) -> Result<(), String> + Clone + Send + 'static,
    ) {
        if let Err(f) = crate::run::run_cases(
            self.who(),
            cases,
            1_000,
            strategy,
            |s, i| {
                s.requests
                    .get(i)
                    .map_or(String::new(), |r| r.describe(s.single))
            },
            check,
        ) {
            let script = f.value.describe();
            self.fail(
                what,
                &format!(
                    "{}\n\nThe smallest script found: {script}\nreplay it beside the reference's \
                     answers:\n  cargo run -- compare {} '{script}'",
                    f.reason, self.facts.number
                ),
            );
        }
    }

    /// Random limits, keys, costs, instants and peeks: every answer is the
    /// model's.
    pub fn agrees_with_model(&self, which: Which, cases: u32) {
        let v = self.tested();
        self.property(which.name(), cases, &gen::script(which.shape()), move |s| {
            let l = which.build(v, &s.limits)?;
            follow(&*l, s).map(|_| ())
        });
    }

    /// A race under loom.
    pub fn race(&self, race: Race) {
        let v = self.tested();
        let what = if race.single() { "Gcra" } else { "Limits" };
        if let Err(e) = crate::scenarios::explore_with(format!("{race:?}"), move || race.breaks(v))
        {
            self.fail(&format!("{what} under loom"), &e);
        }
    }

    /// The checks on a real Redis and a real Redis Cluster.
    pub fn on_redis(&self, check: OnRedis) {
        use super::redis;
        let v = self.tested();
        self.watched("RedisLimits", move || match check {
            OnRedis::OneScript => redis::one_script(v),
            OnRedis::Expires => redis::expires(v),
            OnRedis::PeekWritesNothing => redis::peek_writes_nothing(v),
            OnRedis::Unreachable => redis::unreachable(v),
            OnRedis::Race(r) => redis::race(v, r),
            OnRedis::OneTag => redis::one_tag(v),
            OnRedis::CrossSlot => redis::cross_slot(v),
        });
    }

    /// A named script, drawn with the subject's answers: the same as the
    /// reference's and the model's (for a single bucket, the token bucket's
    /// and the GCRA's both).
    pub fn named_snapshot(&self, name: &str) {
        let named = gen::named(name);
        let script = named.script();
        let kinds: &[Which] = if named.single {
            &[Which::TokenBucket, Which::Gcra]
        } else {
            &[Which::Limits]
        };
        let mut m = script.model();
        let contract: Vec<Answer> = script
            .requests
            .iter()
            .map(|r| m.answer(&r.keys(), r.cost, r.at, r.peek))
            .collect();
        let model = draw(&script, &contract);
        for &which in kinds {
            let run = |v: CostVariant| {
                let s = script.clone();
                move || -> Result<String, String> {
                    let l = which.build(v, &s.limits)?;
                    Ok(draw(&s, &answers(&*l, &s)))
                }
            };
            let reference = self.watched("the reference", run(self.reference()));
            let tested = self.watched(which.name(), run(self.tested()));
            crate::snapshot::assert_snapshot(
                (self.facts.root, self.facts.number, name),
                &format!("{}: {}", named.what, script.describe()),
                [&tested, &reference, &model],
                &format!("{} ({})", self.whose(), which.name()),
            );
        }
    }

    /// `cargo run -- compare 13 [NAME]`: the named script drawn with the
    /// learner's answers and with the reference's.
    pub fn print_comparison(&self, which: &str) {
        let name = super::comparison(Some(which).filter(|w| !w.trim().is_empty()))
            .unwrap_or_else(|e| panic!("{e}"));
        let (script, what) = match gen::Script::parse(&name) {
            Ok(script) => (script, "as a failure printed it"),
            Err(_) => {
                let named = gen::named(&name);
                (named.script(), named.what)
            }
        };
        let kinds: &[Which] = if script.single {
            &[Which::TokenBucket, Which::Gcra]
        } else if script.on_redis {
            &[Which::RedisLimits]
        } else {
            &[Which::Limits]
        };
        let mut out = format!("script {name}: {what}\n");
        for &kind in kinds {
            for (who, v) in [
                (self.whose(), self.tested()),
                ("the reference".to_string(), self.reference()),
            ] {
                let s = script.clone();
                let drawn = match watched(
                    time_limit(),
                    |_| String::new(),
                    move || {
                        kind.build(v, &s.limits)
                            .map(|l| draw(&s, &answers(&*l, &s)))
                    },
                ) {
                    Ok(Ok(d)) | Ok(Err(d)) => d,
                    Err(stop) => stop.text().to_string(),
                };
                out.push_str(&format!("\n{who}, {}:\n{drawn}", kind.name()));
            }
        }
        crate::trial::println(format_args!("{out}"));
    }
}
