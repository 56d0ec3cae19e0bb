//! Timelines drawn for people: a table of every request and a strip chart per
//! key. Snapshots, failure messages and the runner all use these.

use std::fmt::Write;

use crate::decision::Decision;
use crate::models::Algorithm;
use crate::time::{group_digits, Timestamp};
use crate::timeline::{show_key, Timeline};

fn remaining_and_retry(d: &Decision) -> (String, String) {
    match d {
        Decision::Allowed { remaining } => (remaining.to_string(), String::new()),
        Decision::Denied { retry_after } => (
            String::new(),
            format!("{}ns", group_digits(retry_after.as_nanos())),
        ),
    }
}

fn verdict(d: &Decision) -> &'static str {
    if d.is_allowed() {
        "allowed"
    } else {
        "denied"
    }
}

/// Left-aligned text columns, two spaces apart, with no trailing spaces.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let _ = write!(line, "{cell:<width$}  ", width = widths[c]);
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Which rows of a long table to show: the first few, then the ones that
/// lead up to `mark` (or the last ones), `None` standing for the rows left
/// out. Tables of up to 40 rows are shown whole.
fn shown_rows(n: usize, mark: Option<usize>) -> Vec<Option<usize>> {
    const WHOLE: usize = 40;
    const HEAD: usize = 8;
    const LEAD: usize = 12;
    if n <= WHOLE {
        return (0..n).map(Some).collect();
    }
    let end = mark.map_or(n, |m| (m + 3).min(n));
    let from = end.saturating_sub(LEAD).max(HEAD);
    let mut rows: Vec<Option<usize>> = (0..HEAD).map(Some).collect();
    if from > HEAD {
        rows.push(None);
    }
    rows.extend((from..end).map(Some));
    if end < n {
        rows.push(None);
    }
    rows
}

/// The row standing for rows left out.
fn left_out(columns: usize) -> Vec<String> {
    let mut row = vec!["…".to_string()];
    row.resize(columns, String::new());
    row
}

fn heading(algorithm: Algorithm, timeline: &Timeline) -> String {
    format!(
        "{} ({algorithm:?})\n\n",
        algorithm.describe(&timeline.config)
    )
}

/// A request's time; a late one also shows the time the contract places it
/// at (the latest its key had seen).
fn at(now: Timestamp, placed: u64) -> String {
    if now.as_nanos() == placed {
        now.to_string()
    } else {
        format!("{now} (late: counts at {})", Timestamp::from_nanos(placed))
    }
}

/// A table of each request and a strip chart of each key.
pub fn render(algorithm: Algorithm, timeline: &Timeline, decisions: &[Decision]) -> String {
    let mut rows = vec![vec![
        "#".to_string(),
        "time".into(),
        "key".into(),
        "decision".into(),
        "remaining".into(),
        "retry after".into(),
    ]];
    let placed = timeline.placed();
    let n = timeline.requests.len().min(decisions.len());
    for i in shown_rows(n, None) {
        let Some(i) = i else {
            rows.push(left_out(6));
            continue;
        };
        let (r, d) = (&timeline.requests[i], &decisions[i]);
        let (remaining, retry) = remaining_and_retry(d);
        rows.push(vec![
            (i + 1).to_string(),
            at(r.now, placed[i]),
            show_key(&r.key),
            verdict(d).into(),
            remaining,
            retry,
        ]);
    }
    let mut out = heading(algorithm, timeline);
    out.push_str(&table(&rows));
    out.push('\n');
    out.push_str(&strip_chart(algorithm, timeline, decisions));
    out
}

/// One row per key, one column per request in order: `o` allowed, `x` denied,
/// `.` another key's request; `|` where a period boundary (a multiple of W or T
/// since the origin) is crossed, `:` where one or more whole periods pass with
/// no request at all.
pub fn strip_chart(algorithm: Algorithm, timeline: &Timeline, decisions: &[Decision]) -> String {
    if timeline.requests.len() > 200 {
        return format!(
            "(no strip chart: {} requests are too many to draw)\n",
            timeline.requests.len()
        );
    }
    let period = timeline.config.period.as_nanos().max(1);
    let mut keys: Vec<&str> = Vec::new();
    for r in &timeline.requests {
        if !keys.contains(&r.key.as_str()) {
            keys.push(&r.key);
        }
    }
    let mut separators = Vec::new();
    let mut previous: Option<u128> = None;
    for r in &timeline.requests {
        let k = u128::from(r.now.as_nanos()) / period;
        separators.push(match previous {
            Some(p) if k == p + 1 || p == k + 1 => "|",
            Some(p) if k != p => ":",
            _ => "",
        });
        previous = Some(k);
    }
    let mut rows = Vec::new();
    for key in &keys {
        let mut line = String::new();
        for ((r, d), sep) in timeline.requests.iter().zip(decisions).zip(&separators) {
            line.push_str(sep);
            line.push(match (r.key == *key, d.is_allowed()) {
                (false, _) => '.',
                (true, true) => 'o',
                (true, false) => 'x',
            });
        }
        rows.push(vec![show_key(key), line]);
    }
    let mut out = table(&rows);
    let _ = writeln!(
        out,
        "\no allowed, x denied, . another key; | a {} boundary (every {}ns), : whole {}s with no request",
        algorithm.period_name(),
        group_digits(period),
        algorithm.period_name()
    );
    out
}

/// The first index where two runs of the same timeline disagree.
pub fn first_difference(a: &[Decision], b: &[Decision]) -> Option<usize> {
    a.iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .or_else(|| (a.len() != b.len()).then(|| a.len().min(b.len())))
}

/// Two runs of one timeline side by side, the row `mark` marked as the first
/// difference (the caller decides which answers the contract fixes exactly).
pub fn render_compare(
    algorithm: Algorithm,
    timeline: &Timeline,
    labels: (&str, &str),
    left: &[Decision],
    right: &[Decision],
    mark: Option<usize>,
) -> String {
    let mut rows = vec![vec![
        "#".to_string(),
        "time".into(),
        "key".into(),
        labels.0.into(),
        labels.1.into(),
        String::new(),
    ]];
    let show = |d: Option<&Decision>| {
        d.map(crate::decision::describe)
            .unwrap_or_else(|| "-".into())
    };
    let placed = timeline.placed();
    for i in shown_rows(timeline.requests.len(), mark) {
        let Some(i) = i else {
            rows.push(left_out(6));
            continue;
        };
        let r = &timeline.requests[i];
        rows.push(vec![
            (i + 1).to_string(),
            at(r.now, placed[i]),
            show_key(&r.key),
            show(left.get(i)),
            show(right.get(i)),
            if Some(i) == mark {
                "<-- first difference".into()
            } else {
                String::new()
            },
        ]);
    }
    let mut out = heading(algorithm, timeline);
    out.push_str(&table(&rows));
    out
}

/// `check("a", 1_000ns)`: how a call is written in messages.
pub fn call(key: &str, now: Timestamp) -> String {
    let key = show_key(key);
    if key.starts_with('"') {
        format!("check({key}, {now})")
    } else {
        format!("check(\"{key}\", {now})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tables_show_their_start_and_the_lead_up_to_the_mark() {
        assert_eq!(shown_rows(3, Some(1)), vec![Some(0), Some(1), Some(2)]);
        let rows = shown_rows(1_000, Some(500));
        assert_eq!(rows.len(), 8 + 1 + 12 + 1);
        assert!(rows.contains(&Some(500)) && rows.contains(&Some(502)));
        assert_eq!(rows[8], None);
        assert_eq!(*rows.last().unwrap(), None);
        assert_eq!(shown_rows(100, None).last(), Some(&Some(99)));
    }
    use crate::timeline::{parse_decisions, Config};

    #[test]
    fn draws_table_and_strips() {
        let t = Timeline::parse(Config::new(2, 1000), "a@0 a@1 b@999 a@999 a@1000 b@5000").unwrap();
        let d = parse_decisions("+1 +0 +1 -1 +1 +1").unwrap();
        let text = render(Algorithm::FixedWindow, &t, &d);
        assert!(
            text.contains("4  999ns    a    denied               1ns"),
            "{text}"
        );
        assert!(text.contains("a  oo.x|o:."), "{text}");
        assert!(text.contains("b  ..o.|.:o"), "{text}");
        assert!(!text.lines().any(|l| l.ends_with(' ')), "{text}");
        let late = Timeline::parse(Config::new(2, 3), "a@1 a@0").unwrap();
        let text = render(
            Algorithm::SlidingLog,
            &late,
            &parse_decisions("+1 +0").unwrap(),
        );
        assert!(text.contains("0ns (late: counts at 1ns)"), "{text}");
    }

    #[test]
    fn marks_first_difference() {
        let t = Timeline::parse(Config::new(1, 10), "a@0 a@1").unwrap();
        let a = parse_decisions("+0 -9").unwrap();
        let b = parse_decisions("+0 +0").unwrap();
        assert_eq!(first_difference(&a, &b), Some(1));
        assert_eq!(first_difference(&a, &a), None);
        assert_eq!(first_difference(&a, &a[..1]), Some(1));
        let text = render_compare(
            Algorithm::FixedWindow,
            &t,
            ("yours", "reference"),
            &a,
            &b,
            Some(1),
        );
        let marked: Vec<_> = text.lines().filter(|l| l.contains("<--")).collect();
        assert_eq!(marked.len(), 1);
        assert!(marked[0].starts_with("2 "), "{text}");
    }
}
