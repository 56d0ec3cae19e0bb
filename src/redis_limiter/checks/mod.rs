//! The checks of the `redis-limiter` kind (lesson 08).
//!
//! What a `Decision` can say is checked by the checks every lesson shares,
//! once per rule ([`RedisLesson::rule`]) and once more with three app
//! servers taking turns over one Redis ([`RedisLesson::servers`]). What it
//! cannot say is checked here: races between app servers (the loom
//! scenarios, explored over the order of Redis commands by the
//! [`proxy`](crate::infra::proxy)), the failure policy with the server paused,
//! killed and restarted, keys and their times to live, the server's clock,
//! and the "N app servers" drawings.
//!
//! One concept a file: `races` between app servers, `faults` (the
//! failure policy and cut-off decisions), `keys` (hash tags and times to
//! live), `clock` (the server's clock) and `draw` (the drawings); here, what
//! lesson 08 is and how a failure shows the order of Redis commands.

mod clock;
mod draw;
pub(crate) mod faults;
mod keys;
mod races;

use std::time::Duration;

use super::drive::{single, RedisVariant, RuleKind, RULES};
use super::processes::servers;
use crate::checks::Lesson;
use crate::decision::ConfigError;
use crate::drive::{Drive, Pace, Variant};
use crate::infra::proxy::Step;
use crate::kind::{Facts, Kind, Subjects};

/// Lesson 08: what the catalog says of it, its subjects, and the lessons
/// of the checks every limiter passes, one per [`RuleKind`], as one app
/// server and as three.
pub struct RedisLesson {
    pub facts: Facts,
    subjects: Subjects<RedisVariant>,
    single: Vec<Lesson>,
    servers: Vec<Lesson>,
}

/// Every call crosses a socket to a real server: the shared properties run
/// a quarter of their cases.
const PACE: Pace = Pace {
    cases_divisor: 4,
    one_clock: false,
};

impl Kind for RedisLesson {
    type Variant = RedisVariant;

    fn new(facts: Facts, subjects: Subjects<RedisVariant>) -> RedisLesson {
        type Arrange =
            fn(RedisVariant, RuleKind, u64, Duration) -> Result<Box<dyn Drive>, ConfigError>;
        let lessons = |arrange: Arrange, how: &str| -> Vec<Lesson> {
            RULES
                .iter()
                .map(|&kind| {
                    let rule = facts
                        .titled(format!("{}: {}{how}", facts.title, kind.name()))
                        .following(kind.algorithm());
                    let variants = subjects.map(|&v: &RedisVariant| {
                        Variant::of(
                            v.file,
                            v.source,
                            move |limit, period| arrange(v, kind, limit, period),
                            None,
                            PACE,
                        )
                    });
                    Lesson::new(rule, variants)
                })
                .collect()
        };
        RedisLesson {
            single: lessons(single, ", one app server"),
            servers: lessons(
                servers,
                ", three app servers taking requests in turn over one Redis",
            ),
            facts,
            subjects,
        }
    }
}

impl RedisLesson {
    /// The checks every lesson shares, for one rule and one app server.
    pub fn rule(&self, kind: RuleKind) -> &Lesson {
        &self.single[kind.index_in(&RULES)]
    }

    /// The same, with three app servers taking requests in turn.
    pub fn servers(&self, kind: RuleKind) -> &Lesson {
        &self.servers[kind.index_in(&RULES)]
    }

    /// In an app server process the checks started: serves its requests
    /// ([`crate::redis_limiter::processes`]) until they end.
    pub fn serve_app_server(&self) {
        crate::redis_limiter::processes::serve(&self.subjects.implementations);
    }

    fn tested(&self) -> RedisVariant {
        self.subjects.tested()
    }

    fn whose(&self) -> String {
        self.subjects.whose()
    }

    fn fail(&self, what: &str, message: String) -> ! {
        panic!("{}", self.facts.failure(what, &self.whose(), &message))
    }

    // ------------------------------------------------------------------ source

    /// The limiter reads no clock and starts no thread: time comes from the
    /// call or from Redis's `TIME`, timeouts from the socket.
    pub fn uses_only_its_inputs(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_its_inputs();
    }

    pub fn uses_only_the_sync_facade(&self) {
        self.rule(RuleKind::FixedWindow).uses_only_the_sync_facade();
    }

    /// A schedule, command by command, with the line of the learner's file
    /// that names each command where there is one.
    fn schedule(&self, steps: &[Step]) -> String {
        let v = self.tested();
        let mut out = String::from("The order of Redis commands, as they reached the server:\n");
        for s in steps {
            let name = s.command.name();
            let at = line_naming(v.source, &name)
                .map(|n| format!("   ({}:{n})", v.file))
                .unwrap_or_default();
            out.push_str(&format!(
                "  app server {}  {}  -> {}{at}\n",
                s.client + 1,
                s.command.text(),
                s.reply
            ));
        }
        out
    }
}

/// The first line of `source` (1-based) that names a Redis command: as a
/// string (`"INCR"`, `cmd("GET")`), as the redis crate's method (`.incr(`),
/// or, for a script, where it is invoked.
pub fn line_naming(source: &str, command: &str) -> Option<usize> {
    let lower = command.to_ascii_lowercase();
    let mut needles = vec![
        format!("\"{command}\""),
        format!("\"{lower}\""),
        format!(".{lower}("),
    ];
    if command.starts_with("EVAL") {
        needles.extend([".invoke(".to_string(), ".invoke::<".to_string()]);
    }
    if command == "SET" {
        needles.push(".set_ex(".into());
        needles.push(".set_options(".into());
    }
    source.lines().enumerate().find_map(|(n, line)| {
        let code = line.split("//").next().unwrap_or("");
        needles
            .iter()
            .any(|w| code.contains(w.as_str()))
            .then_some(n + 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_is_found_by_its_name_or_its_method() {
        let src = "// GET is not this\nlet x = con.get(k);\nredis::cmd(\"INCR\")\nscript.key(k).invoke(con)";
        assert_eq!(line_naming(src, "GET"), Some(2));
        assert_eq!(line_naming(src, "INCR"), Some(3));
        assert_eq!(line_naming(src, "EVALSHA"), Some(4));
        assert_eq!(line_naming(src, "EXPIRE"), None);
    }
}
