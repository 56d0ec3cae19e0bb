//! Lesson 12's simulation tier: a server whose latency grows with load
//! (Little's law: with `n` in flight and `capacity` served at once, each
//! takes `base × max(n, capacity) / capacity`), a learner's controller
//! setting the limit of a learner's permits in front of it, step by step,
//! and what that gives (goodput, the 99th percentile of latency) beside
//! fixed limits.

use std::fmt::Write as _;
use std::time::Duration;

use super::drive::{Controller, Permits};
use super::{AimdPolicy, GradientPolicy, Priority, Sample};

/// The server of the simulation, whose capacity can drop at a step.
#[derive(Clone, Copy, Debug)]
pub struct Server {
    pub capacity: usize,
    pub base: Duration,
    /// From this step on, the server serves only half as many at once.
    pub halves_at: Option<usize>,
}

/// The contract's server: 20 at once, 10 ms each, halved at step 150.
pub const SERVER: Server = Server {
    capacity: 20,
    base: Duration::from_millis(10),
    halves_at: Some(HALVES_AT),
};

pub const HALVES_AT: usize = 150;
pub const STEPS: usize = 300;

/// A request slower than this is of no use to its caller.
pub const DEADLINE: Duration = Duration::from_millis(50);

impl Server {
    pub fn capacity_at(&self, step: usize) -> usize {
        match self.halves_at {
            Some(h) if step >= h => (self.capacity / 2).max(1),
            _ => self.capacity,
        }
    }

    /// The latency of each of `n` requests in flight at `step`.
    pub fn latency(&self, step: usize, n: usize) -> Duration {
        let c = self.capacity_at(step);
        let ns = self.base.as_nanos() * n.max(c) as u128 / c as u128;
        Duration::from_nanos(ns as u64)
    }
}

/// One step: how many were in flight, their latency, and the limit the
/// controller set after it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Step {
    pub in_flight: usize,
    pub latency: Duration,
    pub limit: usize,
}

/// The most permits one step may take before the permits are taken to
/// never refuse.
const MOST: usize = 100_000;

/// Runs `controller` against the server for [`STEPS`] steps: each step
/// takes every permit it can (the offered load is always more than the
/// limit), gives the controller one sample of that load's latency, gives
/// the permits back and sets their limit to the controller's.
pub fn run(
    server: Server,
    permits: &dyn Permits,
    controller: &mut dyn Controller,
) -> Result<Vec<Step>, String> {
    let mut steps = Vec::with_capacity(STEPS);
    for step in 0..STEPS {
        let mut held = vec![];
        while let Some(p) = permits.try_acquire(Priority::Normal) {
            held.push(p);
            if held.len() > MOST {
                return Err(format!(
                    "at step {step} the permits gave more than {MOST} permits with the limit \
                     set to {}",
                    steps.last().map_or(0, |s: &Step| s.limit)
                ));
            }
        }
        let n = held.len();
        let latency = server.latency(step, n);
        controller.on_sample(Sample {
            latency,
            in_flight: n,
            dropped: false,
        });
        drop(held);
        let limit = controller.limit();
        permits.set_limit(limit);
        steps.push(Step {
            in_flight: n,
            latency,
            limit,
        });
    }
    Ok(steps)
}

/// A fixed limit, as a controller that never moves.
pub struct Fixed(pub usize);

impl Controller for Fixed {
    fn limit(&self) -> usize {
        self.0
    }

    fn on_sample(&mut self, _: Sample) {}
}

/// What a run gives: requests a second that met the deadline, and the
/// latency 99 in 100 requests stayed within. Each step stands for the same
/// length of time, in which the server, kept full, answers `in_flight`
/// requests every `latency`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Outcome {
    pub goodput: u64,
    pub p99: Duration,
}

pub fn outcome(steps: &[Step]) -> Outcome {
    // Requests a second in each step, in thousandths.
    let rate = |s: &Step| s.in_flight as u128 * 1_000_000_000_000 / s.latency.as_nanos().max(1);
    let good: u128 = steps
        .iter()
        .filter(|s| s.latency <= DEADLINE)
        .map(rate)
        .sum();
    let mut weighted: Vec<(Duration, u128)> = steps.iter().map(|s| (s.latency, rate(s))).collect();
    weighted.sort();
    let total: u128 = weighted.iter().map(|w| w.1).sum();
    let mut seen = 0;
    let p99 = weighted
        .iter()
        .find(|(_, n)| {
            seen += n;
            seen * 100 >= total * 99
        })
        .map_or(Duration::ZERO, |w| w.0);
    Outcome {
        goodput: (good / 1000).checked_div(steps.len() as u128).unwrap_or(0) as u64,
        p99,
    }
}

/// A band the limit must be in, from a step on, until another step.
#[derive(Clone, Copy, Debug)]
pub struct Band {
    pub from: usize,
    pub until: usize,
    pub low: usize,
    pub high: usize,
}

/// The contract's bands: AIMD (timeout 25 ms, 90 %) and the gradient
/// (150 %), each within 60 steps of the start and 20 of the halving.
pub const AIMD_BANDS: [Band; 2] = [
    Band {
        from: 60,
        until: HALVES_AT,
        low: 45,
        high: 51,
    },
    Band {
        from: HALVES_AT + 20,
        until: STEPS,
        low: 23,
        high: 26,
    },
];

pub const GRADIENT_BANDS: [Band; 2] = [
    Band {
        from: 60,
        until: HALVES_AT,
        low: 30,
        high: 40,
    },
    Band {
        from: HALVES_AT + 20,
        until: STEPS,
        low: 15,
        high: 22,
    },
];

/// The first step outside its band, as a sentence.
pub fn outside(steps: &[Step], bands: &[Band]) -> Option<String> {
    bands.iter().find_map(|b| {
        (b.from..b.until.min(steps.len())).find_map(|i| {
            let s = steps[i];
            (!(b.low..=b.high).contains(&s.limit)).then(|| {
                format!(
                    "after step {i} ({} in flight, each {:?}, the server serving {} at once) \
                     the limit is {}; from step {} to {} it must stay within {}..={}",
                    s.in_flight,
                    s.latency,
                    SERVER.capacity_at(i),
                    s.limit,
                    b.from,
                    b.until - 1,
                    b.low,
                    b.high
                )
            })
        })
    })
}

/// The limit over the steps, one row per ten steps: each row's first
/// step, its limit, its latency and a bar.
pub fn draw(steps: &[Step]) -> String {
    let mut out = String::new();
    for (i, s) in steps.iter().enumerate().step_by(10) {
        let mark = if SERVER.halves_at == Some(i) {
            "  ← the server halves"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "step {i:>3}  limit {:>3}  in flight {:>3}  {:>5.1} ms  {}{mark}",
            s.limit,
            s.in_flight,
            s.latency.as_secs_f64() * 1e3,
            "█".repeat(s.limit.min(200) / 2)
        );
    }
    out
}

/// The text's table: each limit's goodput and p99 over the run.
pub fn table(rows: &[(String, Vec<Step>)]) -> String {
    let mut out = String::from(
        "| limit | goodput (requests/s within 50 ms) | p99 latency |\n|---|---:|---:|\n",
    );
    for (name, steps) in rows {
        let o = outcome(steps);
        let _ = writeln!(
            out,
            "| {name} | {} | {:.1} ms |",
            o.goodput,
            o.p99.as_secs_f64() * 1e3
        );
    }
    out
}

/// The controllers the simulation tier runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Adaptive {
    Aimd,
    Gradient,
}

/// The contract's controllers against [`SERVER`].
pub const AIMD: AimdPolicy = AimdPolicy {
    min: 1,
    max: 200,
    initial: 10,
    backoff_percent: 90,
    timeout: Duration::from_millis(25),
};

pub const GRADIENT: GradientPolicy = GradientPolicy {
    min: 1,
    max: 200,
    initial: 10,
    tolerance_percent: 150,
};
