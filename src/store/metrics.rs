//! Lesson 09's metrics as the checks read them: a recorder of the run's
//! own, the series the model expects, and their comparison (names, labels,
//! then values).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use metrics::{
    Counter, CounterFn, Gauge, GaugeFn, Histogram, Key, KeyName, Metadata, Recorder, SharedString,
    Unit,
};

use super::metric;
use super::model::Counts;

/// Every series a run recorded, by name and labels, with its value (a
/// counter's count, a gauge's value).
pub(crate) type Metrics = BTreeMap<String, f64Bits>;

/// An `f64` compared and shown exactly.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct f64Bits(pub(crate) u64);

impl fmt::Debug for f64Bits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", f64::from_bits(self.0))
    }
}

pub(crate) fn series(name: &str, labels: &[(&str, &str)]) -> String {
    let mut labels: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    labels.sort();
    format!("{name}{{{}}}", labels.join(","))
}

pub(crate) fn expected_metrics(policy: &str, c: &Counts) -> Metrics {
    let p = (metric::POLICY, policy);
    let mut m = Metrics::new();
    let mut put = |name: &str, labels: &[(&str, &str)], value: u64| {
        if value > 0 {
            m.insert(series(name, labels), f64Bits((value as f64).to_bits()));
        }
    };
    put(
        metric::DECISIONS,
        &[p, (metric::OUTCOME, metric::ALLOWED)],
        c.allowed,
    );
    put(
        metric::DECISIONS,
        &[p, (metric::OUTCOME, metric::DENIED)],
        c.denied,
    );
    put(
        metric::DECISIONS,
        &[p, (metric::OUTCOME, metric::SHADOWED)],
        c.shadowed,
    );
    put(metric::EVICTIONS, &[p], c.evictions);
    put(metric::OVERFLOWS, &[p], c.overflows);
    put(metric::KEYS, &[p], c.keys);
    m
}

/// The series a contract names: each metric's name and the labels it
/// carries.
pub(crate) type Contract = &'static [(&'static str, &'static [&'static str])];

/// Lesson 09's metrics.
pub(crate) const LESSON_09: Contract = &[
    (metric::DECISIONS, &[metric::POLICY, metric::OUTCOME]),
    (metric::KEYS, &[metric::POLICY]),
    (metric::EVICTIONS, &[metric::POLICY]),
    (metric::OVERFLOWS, &[metric::POLICY]),
];

/// [`same_series`] under lesson 09's contract.
pub(crate) fn same_metrics(want: &Metrics, got: &Metrics) -> Result<(), String> {
    same_series(want, got, LESSON_09)
}

/// Every series recorded (whatever its value, a histogram's included) has
/// one of the contract's names and only its labels; then the values match,
/// zero-valued series counting as absent (a counter registered before its
/// first increment, a gauge set to 0).
pub(crate) fn same_series(want: &Metrics, got: &Metrics, contract: Contract) -> Result<(), String> {
    let names: Vec<&str> = contract.iter().map(|(name, _)| *name).collect();
    for series in got.keys() {
        let (name, labels) = series.split_once('{').unwrap_or((series, "}"));
        let labels: Vec<&str> = labels
            .trim_end_matches('}')
            .split(',')
            .filter(|l| !l.is_empty())
            .map(|l| l.split('=').next().unwrap_or(l))
            .collect();
        let Some((_, allowed)) = contract.iter().find(|(n, _)| *n == name) else {
            return Err(format!(
                "the series {series} is not one of the contract's metrics ({})",
                names.join(", ")
            ));
        };
        if let Some(label) = labels.iter().find(|l| !allowed.contains(l)) {
            return Err(format!(
                "the series {series} has the label `{label}`, which the contract does not name. \
                 {name} carries the labels {} only: a label per client key makes one time \
                 series per client, and the monitoring system keeps every series in memory, so \
                 a million clients become a million series (the unbounded store lesson 09 \
                 removes from the limiter, moved into the monitoring).",
                allowed
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            ));
        }
    }
    let zero = |v: &f64Bits| f64::from_bits(v.0) == 0.0;
    let nonzero = |m: &Metrics| -> Metrics {
        m.iter()
            .filter(|(_, v)| !zero(v))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    let (want, got) = (&nonzero(want), nonzero(got));
    if let Some(extra) = got.keys().find(|k| !want.contains_key(*k)) {
        return Err(format!(
            "the series {extra} reads {:?}; the contract expects no such series yet (or 0). \
             Every metric the contract expects: {}",
            got[extra],
            show_metrics(want)
        ));
    }
    for (k, v) in want {
        if got.get(k) != Some(v) {
            return Err(format!(
                "the series {k} reads {}; the contract says {v:?}. Yours: {}; the contract's: {}",
                got.get(k)
                    .map_or("nothing (never recorded)".to_string(), |g| format!("{g:?}")),
                show_metrics(&got),
                show_metrics(want)
            ));
        }
    }
    Ok(())
}

pub(crate) fn show_metrics(m: &Metrics) -> String {
    if m.is_empty() {
        return "none".into();
    }
    m.iter()
        .map(|(k, v)| format!("{k} {v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A recorder that keeps each series' current value, for one run on one
/// thread (`metrics::with_local_recorder`). Under loom
/// ([`Recorded::under_loom`]) every update of a series is also a point where
/// loom may switch threads, so that the order in which threads update a
/// series (a gauge set after a lock is released) is explored too.
#[derive(Default)]
pub(crate) struct Recorded {
    series: Mutex<BTreeMap<String, Arc<Cell>>>,
    gauges: Mutex<std::collections::BTreeSet<String>>,
    loom: bool,
}

/// One series' value, and the loom atomic its updates touch first.
#[derive(Default)]
struct Cell {
    value: AtomicU64,
    branch: Option<loom::sync::atomic::AtomicUsize>,
}

impl Cell {
    fn branch(&self) {
        if let Some(b) = &self.branch {
            b.fetch_add(1, loom::sync::atomic::Ordering::Relaxed);
        }
    }
}

impl CounterFn for Cell {
    fn increment(&self, value: u64) {
        self.branch();
        CounterFn::increment(&self.value, value);
    }
    fn absolute(&self, value: u64) {
        self.branch();
        CounterFn::absolute(&self.value, value);
    }
}

impl GaugeFn for Cell {
    fn increment(&self, value: f64) {
        self.branch();
        GaugeFn::increment(&self.value, value);
    }
    fn decrement(&self, value: f64) {
        self.branch();
        GaugeFn::decrement(&self.value, value);
    }
    fn set(&self, value: f64) {
        self.branch();
        GaugeFn::set(&self.value, value);
    }
}

impl Recorded {
    /// A recorder for one loom execution (built inside it).
    pub(crate) fn under_loom() -> Recorded {
        Recorded {
            loom: true,
            ..Recorded::default()
        }
    }

    fn handle(&self, key: &Key) -> (String, Arc<Cell>) {
        let labels: Vec<(&str, &str)> = key.labels().map(|l| (l.key(), l.value())).collect();
        let name = series(key.name(), &labels);
        let cell = self
            .series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name.clone())
            .or_insert_with(|| {
                Arc::new(Cell {
                    value: AtomicU64::new(0),
                    branch: self.loom.then(|| loom::sync::atomic::AtomicUsize::new(0)),
                })
            })
            .clone();
        (name, cell)
    }

    pub(crate) fn read(&self) -> Metrics {
        let gauges = self.gauges.lock().unwrap_or_else(|e| e.into_inner());
        self.series
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| {
                let raw = v.value.load(Ordering::Relaxed);
                let value = if gauges.contains(k) {
                    raw
                } else {
                    (raw as f64).to_bits()
                };
                (k.clone(), f64Bits(value))
            })
            .collect()
    }
}

impl Recorder for Recorded {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.handle(key).1)
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let (name, cell) = self.handle(key);
        self.gauges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name);
        Gauge::from_arc(cell)
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        // No histogram is in the contract: its name and labels are judged
        // as every series' are.
        let (name, _) = self.handle(key);
        self.gauges
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name);
        Histogram::noop()
    }
}
