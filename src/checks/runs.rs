//! A timeline put to a fresh limiter of the limiter kinds: on one thread,
//! each call on a thread of its own, or under the watchdog.

use std::sync::Arc;

use crate::decision::Decision;
use crate::drive::Variant;
use crate::render::call;
use crate::run::nth_request;
use crate::timeline::{Config, Timeline};
use crate::watchdog::{progress, time_limit, watched, Stop};

/// A fresh limiter of `variant` for a timeline's configuration, which is
/// always valid.
pub(super) fn build(
    variant: Variant,
    config: Config,
) -> Result<Box<dyn crate::drive::Drive>, String> {
    (variant.build)(config.limit, config.period).map_err(|e| {
        format!(
            "new({}, {:?}) returned Err(ConfigError::{e:?}) for a valid configuration",
            config.limit, config.period
        )
    })
}

/// Runs a timeline on a fresh limiter of `variant`, on the current thread,
/// handing each answer to `keep` as it comes.
pub(super) fn run_into(
    variant: Variant,
    timeline: &Timeline,
    mut keep: impl FnMut(Decision),
) -> Result<(), String> {
    let mut limiter = build(variant, timeline.config)?;
    for (i, r) in timeline.requests.iter().enumerate() {
        progress(i);
        keep(limiter.check(&r.key, r.now));
    }
    Ok(())
}

/// Runs a timeline on a fresh limiter of `variant` under the watchdog (for
/// `limit`) until its first answer that is not `want`'s: the answers up to
/// and including that one. A long timeline is judged as it goes, so a
/// limiter that goes wrong early, and slow after, is not run to the end.
pub(super) fn run_until_wrong(
    variant: Variant,
    timeline: &Arc<Timeline>,
    want: &Arc<Vec<Decision>>,
    limit: std::time::Duration,
) -> Result<Vec<Decision>, Stop> {
    let (t, w) = (timeline.clone(), want.clone());
    let describe = |i: usize| nth_request(timeline, i);
    let run = move || -> Result<Vec<Decision>, String> {
        let mut limiter = build(variant, t.config)?;
        let mut answers = Vec::with_capacity(t.requests.len());
        for (i, r) in t.requests.iter().enumerate() {
            progress(i);
            let d = limiter.check(&r.key, r.now);
            let wrong = w.get(i) != Some(&d);
            answers.push(d);
            if wrong {
                break;
            }
        }
        Ok(answers)
    };
    match watched(limit, describe, run) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(Stop::Panicked(e)),
        Err(stop) => Err(stop),
    }
}

/// Runs a timeline on a fresh limiter of `variant`, on the current thread.
pub(super) fn run(variant: Variant, timeline: &Timeline) -> Result<Vec<Decision>, String> {
    let mut answers = Vec::with_capacity(timeline.requests.len());
    run_into(variant, timeline, |d| answers.push(d))?;
    Ok(answers)
}

/// Runs a timeline on a fresh limiter of `variant`, each call on a new OS
/// thread, one after another.
pub(super) fn run_on_threads(
    variant: Variant,
    timeline: &Timeline,
) -> Result<Vec<Decision>, String> {
    let mut limiter = build(variant, timeline.config)?;
    let mut answers = Vec::with_capacity(timeline.requests.len());
    for (i, r) in timeline.requests.iter().enumerate() {
        progress(i);
        let limiter = &mut limiter;
        let answer = crate::watchdog::on_another_thread(move || limiter.check(&r.key, r.now))
            .map_err(|panic| {
                format!(
                    "{panic}\n(request #{} {}, on a thread of its own)",
                    i + 1,
                    call(&r.key, r.now)
                )
            })?;
        answers.push(answer);
    }
    Ok(answers)
}

/// Runs a timeline under the watchdog, keeping the answers given before a
/// panic or a hang, and the stop.
pub(super) fn run_partial(variant: Variant, timeline: &Timeline) -> (Vec<Decision>, Option<Stop>) {
    let answers = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (t, kept) = (timeline.clone(), answers.clone());
    let describe = |i: usize| nth_request(timeline, i);
    let outcome = watched(time_limit(), describe, move || {
        run_into(variant, &t, |d| {
            kept.lock().unwrap_or_else(|e| e.into_inner()).push(d)
        })
    });
    let got = answers.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match outcome {
        Ok(Ok(())) => (got, None),
        Ok(Err(e)) => (got, Some(Stop::Panicked(e))),
        Err(stop) => (got, Some(stop)),
    }
}

/// Runs a timeline under the watchdog.
pub(super) fn run_watched(variant: Variant, timeline: &Timeline) -> Result<Vec<Decision>, Stop> {
    let t = timeline.clone();
    let describe = |i: usize| nth_request(timeline, i);
    match watched(time_limit(), describe, move || run(variant, &t)) {
        Ok(Ok(d)) => Ok(d),
        Ok(Err(e)) => Err(Stop::Panicked(e)),
        Err(stop) => Err(stop),
    }
}
