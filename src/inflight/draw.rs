//! Lesson 12's drawings: what is in flight over time. One row per request
//! (waiting `·`, inside the inner service `█`, its body being read `▒`,
//! refused `5`/`4` for 503/429, given up `g`, dropped `x`), and above them
//! how many the inner service holds, column by column.

use std::fmt::Write as _;
use std::time::Duration;

use super::sim::{seconds, Event, Script};
use super::Timestamp;

const COLUMNS: u64 = 60;

/// A request's life, as the log gives it.
#[derive(Clone, Copy, Default)]
struct Life {
    start: Option<u64>,
    enter: Option<u64>,
    headers: Option<(u64, u16)>,
    end: Option<u64>,
    dropped: Option<u64>,
    gave_up: Option<u64>,
    failed: Option<u64>,
}

/// The drawing of a log of `script`, its columns spread over the time to
/// `until` (ns) or to its last event, whichever is later (two drawings
/// drawn to one `until` share their scale).
pub fn draw(script: &Script, events: &[Event], until: u64) -> String {
    let n = script.requests.len();
    let mut lives = vec![Life::default(); n];
    for e in events {
        let Some(life) = lives.get_mut(e.request()) else {
            continue;
        };
        let at = e.at().as_nanos();
        match e {
            Event::Start { .. } => life.start = Some(at),
            Event::Enter { .. } => life.enter = Some(at),
            Event::Headers { status, .. } => life.headers = Some((at, *status)),
            Event::End { .. } => life.end = Some(at),
            Event::Drop { .. } => life.dropped = Some(at),
            Event::GaveUp { .. } => life.gave_up = Some(at),
            Event::Unready { .. } | Event::Body { .. } => {}
            Event::Failed { .. } => {
                life.failed = Some(at);
                life.end = Some(at);
            }
        }
    }
    let last = events
        .iter()
        .map(|e| e.at().as_nanos())
        .max()
        .unwrap_or(0)
        .max(until);
    // Whole milliseconds a column, enough to fit the run in COLUMNS.
    let step = (last / 1_000_000 / COLUMNS + 1) * 1_000_000;
    let columns = (last / step + 1) as usize;
    let inside = |life: &Life, t0: u64, t1: u64| -> bool {
        let Some(enter) = life.enter else {
            return false;
        };
        let out = life.end.or(life.dropped).unwrap_or(u64::MAX);
        enter < t1 && out > t0 || enter == t0
    };
    let mut out = format!(
        "one column is {}; in flight: how many the inner service holds (most in the column)\n",
        seconds(Timestamp::ZERO + Duration::from_nanos(step))
    );
    let mut counts = String::new();
    for c in 0..columns {
        let (t0, t1) = (c as u64 * step, (c as u64 + 1) * step);
        // The most at once within the column: at each instant something
        // enters in it, or at its start.
        let mut instants: Vec<u64> = lives
            .iter()
            .filter_map(|l| l.enter)
            .filter(|e| (t0..t1).contains(e))
            .collect();
        instants.push(t0);
        let most = instants
            .iter()
            .map(|&t| {
                lives
                    .iter()
                    .filter(|l| {
                        l.enter.is_some_and(|e| e <= t) && l.end.or(l.dropped).is_none_or(|o| o > t)
                    })
                    .count()
            })
            .max()
            .unwrap_or(0);
        counts.push(match most {
            0 => ' ',
            1..=9 => char::from_digit(most as u32, 10).unwrap_or('+'),
            _ => '+',
        });
    }
    let _ = writeln!(out, "in flight  {counts}");
    for (i, life) in lives.iter().enumerate() {
        let mut row = String::new();
        for c in 0..columns {
            let (t0, t1) = (c as u64 * step, (c as u64 + 1) * step);
            let within = |t: Option<u64>| t.is_some_and(|t| (t0..t1).contains(&t));
            let ch = if within(life.dropped) {
                'x'
            } else if within(life.failed) {
                'f'
            } else if within(life.gave_up) {
                'g'
            } else if let Some((at, status)) = life.headers.filter(|h| h.1 != 200) {
                if (t0..t1).contains(&at) {
                    if status == 429 {
                        '4'
                    } else {
                        '5'
                    }
                } else {
                    ' '
                }
            } else if inside(life, t0, t1) {
                match life.headers {
                    Some((h, _)) if h < t0 => '▒',
                    _ => '█',
                }
            } else if life.start.is_some_and(|s| s < t1)
                && life.enter.is_none_or(|e| e >= t1)
                && [life.end, life.dropped, life.gave_up]
                    .iter()
                    .flatten()
                    .all(|&o| o >= t1)
            {
                '·'
            } else {
                ' '
            };
            row.push(ch);
        }
        let r = &script.requests[i];
        let mut tags = vec![];
        if let Some(k) = r.key {
            tags.push(format!("key {k:?}"));
        }
        if let Some(p) = r.priority {
            tags.push(format!("priority {p:?}"));
        }
        let tags = if tags.is_empty() {
            String::new()
        } else {
            format!("  ({})", tags.join(", "))
        };
        let _ = writeln!(out, "#{i:<8}  {}{tags}", row.trim_end());
    }
    out
}
