//! Whether a run keeps the contract: its answers beside another run's, the
//! lesson's invariant, and what each answer claims about the next requests.

use super::runs::run;
use super::Ctx;
use crate::decision::{describe, Decision};
use crate::render::{call, render, render_compare};
use crate::time::Timestamp;
use crate::timeline::Timeline;

pub(super) fn divergence(
    timeline: &Timeline,
    i: usize,
    whose: &str,
    got: &[Decision],
    other: &str,
    want: &[Decision],
) -> String {
    let r = &timeline.requests[i];
    let show = |d: Option<&Decision>| d.map(describe).unwrap_or_else(|| "no answer".into());
    format!(
        "request #{}, {}: {whose} answered {}; {other} says {}.",
        i + 1,
        call(&r.key, r.now),
        show(got.get(i)),
        show(want.get(i))
    )
}

/// Compares two runs of an in-order timeline, on the requests whose answer
/// the contract fixes exactly.
pub(super) fn compare(
    ctx: Ctx,
    t: &Timeline,
    got: &[Decision],
    other: &str,
    want: &[Decision],
) -> Result<(), String> {
    // Late requests have no one exact answer; the invariant judges them.
    let placed = t.placed();
    let exact = |i: usize| {
        let now = t.requests[i].now.as_nanos();
        placed[i] == now && ctx.algorithm.exact_at(&t.config, now)
    };
    let first = (0..t.requests.len()).find(|&i| exact(i) && got.get(i) != want.get(i));
    match first {
        None => Ok(()),
        Some(i) => {
            let shown = t.prefix(i + 1);
            Err(format!(
                "{}\n\n{}",
                divergence(
                    t,
                    i,
                    &format!("{} ({})", ctx.subject, ctx.tested.path()),
                    got,
                    other,
                    want
                ),
                render_compare(
                    ctx.algorithm,
                    &shown,
                    ("yours", other.trim_start_matches("the ")),
                    got,
                    want,
                    Some(i)
                )
            ))
        }
    }
}

/// Every `retry_after` is at least 1 ns, and the allowed requests, each placed
/// at the latest timestamp its key had seen, obey the lesson's invariant.
pub(super) fn invariant(ctx: Ctx, t: &Timeline, got: &[Decision]) -> Result<(), String> {
    for (i, d) in got.iter().enumerate() {
        if let Decision::Denied { retry_after } = d {
            if retry_after.is_zero() {
                let r = &t.requests[i];
                return Err(format!(
                    "request #{}, {}: denied with a retry_after of 0, but retry_after is never zero: a \
                     caller retrying at once would be denied again.\n\n{}",
                    i + 1,
                    call(&r.key, r.now),
                    render(ctx.algorithm, &t.prefix(i + 1), got)
                ));
            }
        }
    }
    let placed = t.placed();
    let mut keys: Vec<&str> = t.requests.iter().map(|r| r.key.as_str()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        let allowed: Vec<u64> = (0..t.requests.len())
            .filter(|&i| t.requests[i].key == key && got[i].is_allowed())
            .map(|i| placed[i])
            .filter(|p| ctx.algorithm.exact_at(&t.config, *p))
            .collect();
        if let Err(e) = ctx.algorithm.invariant(&t.config, &allowed) {
            return Err(format!(
                "key {key:?}: {e}.\n\n{}",
                render(ctx.algorithm, t, got)
            ));
        }
    }
    Ok(())
}

/// Replays prefixes of the timeline on fresh limiters to test what each answer
/// claims about the future.
pub(super) fn probe(ctx: Ctx, t: &Timeline) -> Result<(), String> {
    let got = run(ctx.tested, t)?;
    let limit = t.config.limit;
    for (i, d) in got.iter().enumerate() {
        let r = &t.requests[i];
        let now = r.now.as_nanos();
        if !ctx.algorithm.exact_at(&t.config, now) {
            continue;
        }
        let replay = |extra: &[u64]| -> Result<Vec<Decision>, String> {
            let mut probe = t.prefix(i + 1);
            probe.requests.extend(
                extra
                    .iter()
                    .map(|at| crate::timeline::Request::new(&r.key, *at)),
            );
            Ok(run(ctx.tested, &probe)?.split_off(i + 1))
        };
        let fail = |claim: String| {
            Err(format!(
                "request #{}, {} was answered {}, {claim}\n\n{}",
                i + 1,
                call(&r.key, r.now),
                describe(d),
                render(ctx.algorithm, &t.prefix(i + 1), &got)
            ))
        };
        match *d {
            Decision::Allowed { remaining } => {
                if remaining >= limit {
                    return fail(format!(
                        "but the limit is {limit}, so at most {} can remain",
                        limit - 1
                    ));
                }
                if remaining > PROBE_MOST {
                    // Too many to replay; the agreement properties check it exactly.
                    continue;
                }
                let after = replay(&vec![now; remaining as usize + 1])?;
                if let Some(j) = after
                    .iter()
                    .take(remaining as usize)
                    .position(|d| !d.is_allowed())
                {
                    return fail(format!(
                        "but in a replay the {} further request at that instant was {}",
                        ordinal(j + 1),
                        describe(&after[j])
                    ));
                }
                if after[remaining as usize].is_allowed() {
                    return fail(if remaining == 0 {
                        "but in a replay a further request at that instant was allowed".to_string()
                    } else {
                        format!(
                            "but in a replay {} further requests at that instant were all allowed",
                            remaining + 1
                        )
                    });
                }
            }
            Decision::Denied { retry_after } => {
                let wait = u64::try_from(retry_after.as_nanos()).unwrap_or(u64::MAX);
                if wait == 0 {
                    return fail("but retry_after is never zero".into());
                }
                let Some(at) = now.checked_add(wait) else {
                    continue;
                };
                let later = replay(&[at])?;
                if !later[0].is_allowed() {
                    return fail(format!(
                        "but in a replay a request {} later, at {}, was {}",
                        retry_after.as_nanos(),
                        Timestamp::from_nanos(at),
                        describe(&later[0])
                    ));
                }
                if wait > 1 {
                    let sooner = replay(&[at - 1])?;
                    if sooner[0].is_allowed() {
                        return fail(format!(
                            "but in a replay a request 1ns sooner, at {}, was already allowed: retry_after \
                             must be the shortest wait",
                            Timestamp::from_nanos(at - 1)
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}

/// The largest `remaining` that is checked by replaying that many requests.
const PROBE_MOST: u64 = 64;

fn ordinal(n: usize) -> String {
    match n {
        1 => "1st".into(),
        2 => "2nd".into(),
        3 => "3rd".into(),
        n => format!("{n}th"),
    }
}
