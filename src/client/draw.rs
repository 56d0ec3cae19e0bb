//! Lesson 11's log drawn: one line per event, as failures, snapshots and
//! `cargo run -- compare 11` show it.

use std::fmt::Write as _;

use super::script::Call;
use super::sim::Event;
use super::Timestamp;

/// An instant as the log shows it: seconds, to the millisecond when it is
/// a whole number of them, else to the nanosecond.
pub fn seconds(t: Timestamp) -> String {
    let n = t.as_nanos();
    if n.is_multiple_of(1_000_000) {
        format!("{}.{:03} s", n / 1_000_000_000, n / 1_000_000 % 1000)
    } else {
        format!("{}.{:09} s", n / 1_000_000_000, n % 1_000_000_000)
    }
}

/// The most lines of a log a failure draws.
const MOST_LINES: usize = 12;

/// The log drawn as a table, one line per event: whole, or up to `mark`
/// (which it points at), the last [`MOST_LINES`] of them.
pub fn draw(events: &[Event], calls: &[Call], mark: Option<usize>) -> String {
    let mut out = String::new();
    let secs = seconds;
    // A long log keeps its last lines up to the marked event, which is
    // what a failure is about.
    let end = mark.map_or(events.len(), |m| m + 1).min(events.len());
    let start = match mark {
        Some(_) => end.saturating_sub(MOST_LINES),
        None => 0,
    };
    if start > 0 {
        let _ = writeln!(
            out,
            "  … {start} earlier events (`cargo run -- compare` shows a named script whole)"
        );
    }
    for (i, e) in events.iter().enumerate().take(end).skip(start) {
        let pointer = if mark == Some(i) { "→ " } else { "  " };
        let (at, who, what) = match e {
            Event::Call { request, at } => (
                *at,
                Some(*request),
                format!(
                    "called: {}",
                    calls.get(*request).map(Call::describe).unwrap_or_default()
                ),
            ),
            Event::Draw {
                request,
                at,
                cap,
                value,
            } => (
                *at,
                *request,
                format!(
                    "draws a jitter of {} (at most {})",
                    secs(Timestamp::from_nanos(*value)),
                    secs(Timestamp::from_nanos(
                        u64::try_from(cap.as_nanos()).unwrap_or(u64::MAX)
                    ))
                ),
            ),
            Event::Send {
                request,
                attempt,
                at,
                changed,
            } => (
                *at,
                Some(*request),
                match changed {
                    None => format!("attempt {attempt} sent"),
                    Some(how) => format!("attempt {attempt} sent, changed: {how}"),
                },
            ),
            Event::Answer {
                request,
                attempt,
                at,
                answer,
            } => (
                *at,
                Some(*request),
                format!("attempt {attempt} answered {}", answer.short()),
            ),
            Event::Return {
                request,
                at,
                outcome,
            } => (*at, Some(*request), format!("returns {}", outcome.short())),
            Event::Drop { request, at } => (*at, Some(*request), "dropped by the caller".into()),
        };
        let who = who.map(|r| format!("#{r}")).unwrap_or_else(|| "?".into());
        let _ = writeln!(out, "{pointer}{:>15}  {who:<4} {what}", secs(at));
    }
    out
}
