//! Which implementation the tests check: `KATA_SUBJECT`.

use std::fmt;

/// The implementation under test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Subject {
    /// `lessons/lesson_NN.rs`: the learner's file (the default).
    Learner,
    /// `solutions/lesson_NN.rs`.
    Reference,
    /// `lessons/stubs/lesson_NN.rs`: the learner file as it was at first,
    /// which must fail every behavioural test.
    Stub,
    /// `mistakes/lesson_NN/<name>.diff`: a limiter with one classic bug, which
    /// the suite must reject.
    Mistake(&'static str),
    /// `tests/alternatives/lesson_NN/<name>.rs`: a correct design unlike the
    /// reference, which the suite must accept (it tests the contract, not the
    /// reference's choices).
    Alternative(&'static str),
}

impl Subject {
    /// Reads `KATA_SUBJECT`: unset or `learner`, `reference`, `stub`,
    /// `mistake:<name>` for one of `mistakes`, `alternative:<name>` for one of
    /// `alternatives`.
    pub fn from_env(
        mistakes: &[&'static str],
        alternatives: &[&'static str],
    ) -> Result<Subject, String> {
        match std::env::var("KATA_SUBJECT") {
            Err(std::env::VarError::NotPresent) => Ok(Subject::Learner),
            Err(e) => Err(format!("KATA_SUBJECT is not valid text ({e})")),
            Ok(value) => Subject::parse(&value, mistakes, alternatives),
        }
    }

    pub fn parse(
        value: &str,
        mistakes: &[&'static str],
        alternatives: &[&'static str],
    ) -> Result<Subject, String> {
        match value {
            "" | "learner" => Ok(Subject::Learner),
            "reference" => Ok(Subject::Reference),
            "stub" => Ok(Subject::Stub),
            other => {
                let named = |prefix: &str, names: &[&'static str]| {
                    let wanted = other.strip_prefix(prefix)?;
                    names.iter().find(|n| **n == wanted).copied()
                };
                if let Some(m) = named("mistake:", mistakes) {
                    return Ok(Subject::Mistake(m));
                }
                if let Some(a) = named("alternative:", alternatives) {
                    return Ok(Subject::Alternative(a));
                }
                let mut valid = vec![
                    "learner".to_string(),
                    "reference".to_string(),
                    "stub".to_string(),
                ];
                valid.extend(mistakes.iter().map(|m| format!("mistake:{m}")));
                valid.extend(alternatives.iter().map(|a| format!("alternative:{a}")));
                Err(format!(
                    "KATA_SUBJECT={other:?} names no implementation of this lesson. Valid values: {} \
                     (unset means learner).",
                    valid.join(", ")
                ))
            }
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Learner => f.write_str("your limiter"),
            Subject::Reference => f.write_str("the reference"),
            Subject::Stub => f.write_str("the stub"),
            Subject::Mistake(m) => write!(f, "mistake {m}"),
            Subject::Alternative(a) => write!(f, "alternative {a}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_lists_valid_values() {
        assert_eq!(Subject::parse("learner", &[], &[]), Ok(Subject::Learner));
        assert_eq!(
            Subject::parse("reference", &[], &[]),
            Ok(Subject::Reference)
        );
        assert_eq!(
            Subject::parse("mistake:x", &["x"], &[]),
            Ok(Subject::Mistake("x"))
        );
        assert_eq!(
            Subject::parse("alternative:y", &["x"], &["y"]),
            Ok(Subject::Alternative("y"))
        );
        let e = Subject::parse("refrence", &["x"], &["y"]).unwrap_err();
        assert!(
            e.contains("learner, reference, stub, mistake:x, alternative:y"),
            "{e}"
        );
        assert!(Subject::parse("mistake:y", &["x"], &["y"]).is_err());
    }
}
