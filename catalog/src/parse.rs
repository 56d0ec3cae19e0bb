//! Reads `lessons/lessons.toml`: a subset of TOML, `[[lesson]]` tables of
//! string and integer keys, comments with `#`. Any TOML tool reads the file;
//! this reader exists so that the lesson build needs no TOML crate.

use crate::{Kind, Lesson};

/// One value of a `key = value` line.
enum Value {
    Text(String),
    Number(u32),
}

/// A `[[lesson]]` table: the line it starts on, and its `key = value` lines
/// with their line numbers.
type Table = (usize, Vec<(usize, String, Value)>);

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
        if line == "[[lesson]]" {
            tables.push((line_no, Vec::new()));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(format!(
                "line {line_no}: expected `[[lesson]]` or `key = value`, found {line:?}"
            ));
        };
        let Some((_, table)) = tables.last_mut() else {
            return Err(format!(
                "line {line_no}: `{}` comes before the first `[[lesson]]`",
                key.trim()
            ));
        };
        let value = parse_value(value.trim()).map_err(|e| format!("line {line_no}: {e}"))?;
        table.push((line_no, key.trim().to_string(), value));
    }
    tables
        .into_iter()
        .map(|(line_no, table)| lesson(line_no, table))
        .collect()
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
