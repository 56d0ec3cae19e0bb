//! Reads `lessons/lessons.toml`: a subset of TOML, `[[lesson]]` and
//! `[[milestone]]` tables of string and integer keys, comments with `#`. Any TOML tool reads the file;
//! this reader exists so that the lesson build needs no TOML crate.

use crate::{Kind, Lesson, Milestone};

/// One value of a `key = value` line.
enum Value {
    Text(String),
    Number(u32),
}

/// A `[[lesson]]` or `[[milestone]]` table: which, the line it starts on,
/// and its `key = value` lines with their line numbers.
type Table = (&'static str, usize, Vec<(usize, String, Value)>);

/// The lessons of the catalog, in the order they are written, or a sentence
/// naming the line that is wrong.
pub(crate) fn lessons(text: &str) -> Result<Vec<Lesson>, String> {
    let mut tables: Vec<Table> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = strip_comment(raw).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(header) = ["lesson", "milestone"]
            .into_iter()
            .find(|h| line == format!("[[{h}]]"))
        {
            tables.push((header, line_no, Vec::new()));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "line {line_no}: expected `[[lesson]]`, `[[milestone]]` or `key = value`, \
                 found {line:?}"
            ));
        };
        let Some((_, _, table)) = tables.last_mut() else {
            return Err(format!(
                "line {line_no}: `{}` comes before the first `[[lesson]]`",
                key.trim()
            ));
        };
        let value = parse_value(value.trim()).map_err(|e| format!("line {line_no}: {e}"))?;
        table.push((line_no, key.trim().to_string(), value));
    }
    let mut lessons = Vec::new();
    let mut milestones = Vec::new();
    for (header, line_no, table) in tables {
        if header == "lesson" {
            lessons.push(lesson(line_no, table)?);
        } else {
            milestones.push(milestone(line_no, table)?);
        }
    }
    for (line_no, number, milestone) in milestones {
        let Some(lesson) = lessons.iter_mut().find(|l| l.number == number) else {
            return Err(format!(
                "line {line_no}: the milestone's lesson {number} is not described by a \
                 [[lesson]] table"
            ));
        };
        lesson.milestones.push(Milestone {
            number: lesson.milestones.len() + 1,
            ..milestone
        });
    }
    Ok(lessons)
}

/// A `[[milestone]]` table: the line it starts on, its lesson's number and
/// the milestone (numbered when it joins its lesson).
fn milestone(
    at: usize,
    table: Vec<(usize, String, Value)>,
) -> Result<(usize, u32, Milestone), String> {
    let mut lesson = None;
    let mut title = None;
    let mut checks = None;
    for (line_no, key, value) in table {
        let wrong = |what: &str| format!("line {line_no}: `{key}` must be {what}");
        match (key.as_str(), value) {
            ("lesson", Value::Number(n)) => lesson = Some(n),
            ("title", Value::Text(t)) if !t.trim().is_empty() => title = Some(t),
            ("checks", Value::Text(t)) if !t.trim().is_empty() => {
                checks = Some(t.split_whitespace().map(String::from).collect())
            }
            ("lesson", _) => return Err(wrong("a whole number")),
            ("title", _) => return Err(wrong("a string that is not empty")),
            ("checks", _) => {
                return Err(wrong(
                    "a string of test-name patterns, separated by spaces (`*` stands for any text)",
                ))
            }
            _ => {
                return Err(format!(
                    "line {line_no}: unknown key `{key}` in a [[milestone]] (known: lesson, \
                     title, checks)"
                ))
            }
        }
    }
    let missing = |key: &str| format!("the [[milestone]] at line {at} has no `{key}`");
    let lesson = lesson.ok_or_else(|| missing("lesson"))?;
    Ok((
        at,
        lesson,
        Milestone {
            number: 0,
            title: title.ok_or_else(|| missing("title"))?,
            checks: checks.ok_or_else(|| missing("checks"))?,
        },
    ))
}

fn lesson(at: usize, table: Vec<(usize, String, Value)>) -> Result<Lesson, String> {
    let mut number = None;
    let mut title = None;
    let mut kind = None;
    let mut type_name = None;
    let mut algorithm = None;
    let mut baseline = None;
    for (line_no, key, value) in table {
        let wrong = |what: &str| format!("line {line_no}: `{key}` must be {what}");
        match (key.as_str(), value) {
            ("number", Value::Number(n)) => number = Some(n),
            ("baseline", Value::Number(n)) => baseline = Some(n),
            ("title", Value::Text(t)) if !t.trim().is_empty() => title = Some(t),
            ("kind", Value::Text(t)) => {
                kind = Some(Kind::parse(&t).map_err(|e| format!("line {line_no}: {e}"))?)
            }
            ("type", Value::Text(t)) if crate::is_ident(&t) => type_name = Some(t),
            ("algorithm", Value::Text(t)) if crate::ALGORITHMS.contains(&t.as_str()) => {
                algorithm = Some(t)
            }
            ("algorithm", Value::Text(t)) => {
                return Err(format!(
                    "line {line_no}: algorithm {t:?} is not one of {}",
                    crate::ALGORITHMS.join(", ")
                ))
            }
            ("number" | "baseline", _) => return Err(wrong("a whole number")),
            ("title", _) => return Err(wrong("a string that is not empty")),
            ("kind", _) => return Err(wrong("a string")),
            ("type" | "algorithm", _) => return Err(wrong("a Rust identifier in quotes")),
            _ => {
                return Err(format!(
                    "line {line_no}: unknown key `{key}` (known: number, title, kind, type, \
                     algorithm, baseline)"
                ))
            }
        }
    }
    let missing = |key: &str| format!("the [[lesson]] at line {at} has no `{key}`");
    Ok(Lesson {
        number: number.ok_or_else(|| missing("number"))?,
        title: title.ok_or_else(|| missing("title"))?,
        kind: kind.ok_or_else(|| missing("kind"))?,
        type_name: type_name.ok_or_else(|| missing("type"))?,
        algorithm: algorithm.ok_or_else(|| missing("algorithm"))?,
        baseline,
        mistakes: Vec::new(),
        alternatives: Vec::new(),
        milestones: Vec::new(),
    })
}

/// The line without a `#` comment (a `#` inside a string is kept).
fn strip_comment(line: &str) -> &str {
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '#' if !in_string => return &line[..i],
            _ => {}
        }
    }
    line
}

fn parse_value(text: &str) -> Result<Value, String> {
    if let Some(body) = text.strip_prefix('"') {
        let body = body
            .strip_suffix('"')
            .ok_or_else(|| format!("the string {text} has no closing quote"))?;
        let mut out = String::new();
        let mut chars = body.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some('"') => out.push('"'),
                    Some('\\') => out.push('\\'),
                    other => {
                        return Err(format!(
                            "unsupported escape \\{} in {text} (only \\\" and \\\\)",
                            other.map(String::from).unwrap_or_default()
                        ))
                    }
                },
                '"' => return Err(format!("a quote inside {text} must be written \\\"")),
                c => out.push(c),
            }
        }
        return Ok(Value::Text(out));
    }
    text.replace('_', "")
        .parse()
        .map(Value::Number)
        .map_err(|_| format!("{text} is neither a \"string\" nor a whole number"))
}
