//! The kata's lessons, each described once.
//!
//! `lessons/lessons.toml` names every lesson: its number, title, kind of
//! subject, the type the learner writes and the rule it follows. Everything
//! else is found on disk from the number (see [`Catalog::load`]), so adding a
//! mistake to a lesson is adding its file. Three programs read the catalog:
//!
//! - the lessons' build script ([`build_script`]), which writes the code each
//!   `tests/lesson_NN.rs` includes through `kata::lesson!()`;
//! - the runner and the self-check;
//! - [`problems`], run by this crate's tests, which names every file that
//!   disagrees with the catalog.
//!
//! This crate has no dependencies, so the lesson build pays nothing for it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod generate;
pub mod groups;
#[cfg(test)]
mod layers;
pub mod mistake;
mod parse;
mod patterns;
mod problems;
#[cfg(test)]
mod sizes;

pub use generate::{build_script, generate, write_if_changed};
pub use patterns::{matches, milestone_of};
pub use problems::{book_problems, problems};

/// The rules a lesson may follow: the variants of the harness's
/// `Algorithm` (its tests check that they are these).
pub const ALGORITHMS: [&str; 4] = ["FixedWindow", "SlidingLog", "SlidingCounter", "TokenBucket"];

/// Where the catalog lives, relative to the kata's root.
pub const FILE: &str = "lessons/lessons.toml";

/// How a timeline drives a lesson's subject: each kind is a module of the
/// harness ([`Kind::module`]: its `variant!`, `Lesson` and `trials`). What
/// the runner, the self-check, the bench and the demo need to know of a
/// kind is one entry of [`Kind::facts`]: a new kind is a variant here, its
/// place in [`Kind::ALL`] and its facts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    /// `check(&mut self, key, now) -> Decision` on one thread.
    Limiter,
    /// `RateLimiter::check(&self, key, now) -> Decision`, shared between
    /// threads: compiled over std and over loom, and raced.
    SharedLimiter,
    /// A tower `Layer` in front of an HTTP service, over a shared limiter:
    /// driven by HTTP requests, in process and over a loopback socket.
    HttpLayer,
    /// A limiter whose state lives in a real `redis-server`, shared by
    /// several instances (app servers): raced by ordering their Redis
    /// commands, and stopped, killed and restarted under.
    RedisLimiter,
    /// A shared limiter that holds at most `max_keys` keys and reports
    /// through the `metrics` facade: compiled over std and over loom, raced,
    /// swept, flooded and weighed.
    BoundedLimiter,
    /// Lesson 08's limiter over the redis crate's async API, on one
    /// `redis-server` or a Redis Cluster: lesson 08's checks, then a
    /// runtime that must keep running while Redis is paused, connections
    /// counted, slots moved and masters killed.
    AsyncRedisLimiter,
    /// A tower `Layer` in front of an HTTP client: driven by scripts of
    /// calls and answers in virtual time, in process and against lesson
    /// 07's reference over a loopback socket; its budget raced under loom.
    HttpClient,
    /// Permits, a concurrency-limit layer, a load shedder, a delay queue
    /// and adaptive controllers: scripts of requests in virtual time through
    /// the layers, the permits raced under loom, the controllers against a
    /// simulated server, and the layers in a real axum server on loopback.
    InFlight,
    /// Buckets asked for a cost of n, several limits at once, and a peek:
    /// scripts against a model, raced under loom, and on a real Redis and
    /// a real Redis Cluster.
    Cost,
}

/// What `cargo run -- serve` serves of a lesson ([`Kind::serves`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Serves {
    /// Its layer, in front of the demo's API (`serve`).
    Layer,
    /// Its whole stack, as app server processes (`serve --servers N`).
    Stack,
}

/// How `cargo run -- bench` measures a lesson ([`Kind::measured_as`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Measured {
    /// Its layer, over the bench's limiter, in front of its service.
    Layer,
    /// One decision at a time, side by side with governor.
    Decisions {
        /// Whether `check` takes `&mut self` (lesson 01's): the bench
        /// holds it behind a lock, as a server would.
        exclusive: bool,
        /// The constructor's arguments, as Rust over `limit: u64` and
        /// `period: Duration`.
        arguments: &'static str,
    },
}

/// What the kata's tools know of a kind: one entry per kind, in
/// [`Kind::facts`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct KindFacts {
    /// As written in the catalog (`kind = "http-layer"`).
    pub id: &'static str,
    /// The module of the harness (`kata`) that holds the kind.
    pub module: &'static str,
    /// Whether its tests start a `redis-server` of their own.
    pub needs_redis: bool,
    /// What `cargo run -- serve` serves of it, if anything.
    pub serves: Option<Serves>,
    /// Whether the self-check runs it beside the runner's own tests: its
    /// checks start no server and no process of their own.
    pub runs_beside_the_runner: bool,
    /// How `cargo run -- bench` measures it, if it does.
    pub measured_as: Option<Measured>,
    /// Whether its subject is raced by the loom scenarios.
    pub concurrent: bool,
    /// The type of the kind's module its test binary allocates through
    /// (`#[global_allocator]`), if the checks weigh what a subject holds.
    pub allocator: Option<&'static str>,
    /// The lesson whose reference its checks serve a subject against, if
    /// any: the generated code compiles it as that lesson's kind does and
    /// hands it to the kind's `serve::meet`.
    pub meets: Option<u32>,
}

impl Kind {
    pub const ALL: [Kind; 9] = [
        Kind::Limiter,
        Kind::SharedLimiter,
        Kind::HttpLayer,
        Kind::RedisLimiter,
        Kind::BoundedLimiter,
        Kind::AsyncRedisLimiter,
        Kind::HttpClient,
        Kind::InFlight,
        Kind::Cost,
    ];

    /// Everything the kata's tools know of the kind, in one place.
    pub const fn facts(self) -> KindFacts {
        match self {
            Kind::Limiter => KindFacts {
                id: "limiter",
                module: "limiter",
                needs_redis: false,
                serves: None,
                runs_beside_the_runner: true,
                measured_as: Some(Measured::Decisions {
                    exclusive: true,
                    arguments: "limit, period",
                }),
                concurrent: false,
                allocator: None,
                meets: None,
            },
            Kind::SharedLimiter => KindFacts {
                id: "shared-limiter",
                module: "shared_limiter",
                needs_redis: false,
                serves: None,
                runs_beside_the_runner: true,
                measured_as: Some(Measured::Decisions {
                    exclusive: false,
                    arguments: "limit, period",
                }),
                concurrent: true,
                allocator: None,
                meets: None,
            },
            Kind::HttpLayer => KindFacts {
                id: "http-layer",
                module: "http",
                needs_redis: false,
                serves: Some(Serves::Layer),
                runs_beside_the_runner: false,
                measured_as: Some(Measured::Layer),
                concurrent: false,
                allocator: None,
                meets: None,
            },
            // Lesson 08's cost is a round trip to Redis, not measured.
            Kind::RedisLimiter => KindFacts {
                id: "redis-limiter",
                module: "redis",
                needs_redis: true,
                serves: None,
                runs_beside_the_runner: false,
                measured_as: None,
                concurrent: false,
                allocator: None,
                meets: None,
            },
            // Built from a rule and bounds: the token bucket, with room for
            // every key the benchmark uses.
            Kind::BoundedLimiter => KindFacts {
                id: "bounded-limiter",
                module: "memory",
                needs_redis: false,
                serves: None,
                runs_beside_the_runner: false,
                measured_as: Some(Measured::Decisions {
                    exclusive: false,
                    arguments: "kata::memory::Rule::TokenBucket { capacity: limit, refill_every: period }, \
                                kata::memory::Bounds::new(\"bench\", 1 << 20, kata::memory::Overflow::Deny)",
                }),
                concurrent: true,
                allocator: Some("Counting"),
                meets: None,
            },
            Kind::AsyncRedisLimiter => KindFacts {
                id: "async-redis-limiter",
                module: "async_redis",
                needs_redis: true,
                serves: Some(Serves::Stack),
                runs_beside_the_runner: false,
                measured_as: None,
                concurrent: false,
                allocator: None,
                meets: None,
            },
            // A client: its checks serve lesson 07's reference on loopback.
            Kind::HttpClient => KindFacts {
                id: "http-client",
                module: "client",
                needs_redis: false,
                serves: None,
                runs_beside_the_runner: false,
                measured_as: None,
                concurrent: false,
                allocator: None,
                meets: Some(7),
            },
            // Its end-to-end checks serve its own layers on loopback.
            Kind::InFlight => KindFacts {
                id: "in-flight",
                module: "inflight",
                needs_redis: false,
                serves: None,
                runs_beside_the_runner: false,
                measured_as: None,
                concurrent: true,
                allocator: None,
                meets: None,
            },
            Kind::Cost => KindFacts {
                id: "cost",
                module: "cost",
                needs_redis: true,
                serves: None,
                runs_beside_the_runner: false,
                measured_as: None,
                concurrent: true,
                allocator: None,
                meets: None,
            },
        }
    }

    /// As written in the catalog.
    pub fn id(self) -> &'static str {
        self.facts().id
    }

    /// The module of the harness (`kata`) that holds the kind: its
    /// `variant!`, its `Lesson` and its `trials` (see the harness's `kind`).
    pub fn module(self) -> &'static str {
        self.facts().module
    }

    /// Whether its tests start a `redis-server` of their own (the runner
    /// says so when there is none).
    pub fn needs_redis(self) -> bool {
        self.facts().needs_redis
    }

    /// What `cargo run -- serve` serves of a lesson of this kind, if
    /// anything: its layer (`http-layer`), or its whole stack as app server
    /// processes (`async-redis-limiter`, `serve --servers N`).
    pub fn serves(self) -> Option<Serves> {
        self.facts().serves
    }

    /// Whether the self-check runs a lesson of this kind beside the
    /// runner's own tests: its checks start no server and no process of
    /// their own, so the two share the machine without slowing each other's
    /// watched calls.
    pub fn runs_beside_the_runner(self) -> bool {
        self.facts().runs_beside_the_runner
    }

    /// Whether `cargo run -- bench` measures a lesson of this kind (the
    /// bench crate's build script writes its code).
    pub fn measured(self) -> bool {
        self.measured_as().is_some()
    }

    /// How `cargo run -- bench` measures a lesson of this kind, if it does:
    /// what the bench crate's build script writes for it.
    pub fn measured_as(self) -> Option<Measured> {
        self.facts().measured_as
    }

    /// Whether the subject is raced by the loom scenarios.
    pub fn concurrent(self) -> bool {
        self.facts().concurrent
    }

    fn parse(text: &str) -> Result<Kind, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.id() == text)
            .ok_or_else(|| {
                let ids: Vec<String> = Kind::ALL.iter().map(|k| format!("{:?}", k.id())).collect();
                format!("kind {text:?} is not one of {}", ids.join(", "))
            })
    }
}

/// One implementation of a lesson, compiled into its test binary.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct File {
    /// Its name as a subject (`KATA_SUBJECT=mistake:<name>`).
    pub name: String,
    /// The file a maintainer edits, relative to the kata's root, with `/`
    /// (`tests/alternatives/lesson_02/x.rs`; for a mistake, its explanation
    /// and diff, `mistakes/lesson_02/x.diff`).
    pub path: String,
}

/// One lesson: what the catalog says of it, and its files found on disk.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Lesson {
    pub number: u32,
    pub title: String,
    pub kind: Kind,
    /// The type the learner writes (`ConcurrentFixedWindow`).
    pub type_name: String,
    /// The rule, by the name of the harness's `Algorithm` variant.
    pub algorithm: String,
    /// A lesson whose reference this one must equal decision for decision.
    pub baseline: Option<u32>,
    /// `mistakes/lesson_NN/*.diff`, by name.
    pub mistakes: Vec<File>,
    /// `tests/alternatives/lesson_NN/*.rs` and `solutions/lesson_NN_*.rs`.
    pub alternatives: Vec<File>,
    /// Where a workshop can stop, in order (`[[milestone]]` tables); empty
    /// for a lesson that is one step.
    pub milestones: Vec<Milestone>,
}

/// A point a learner can stop at within a lesson: its title and the checks
/// that pass once it is reached, as patterns of test names.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Milestone {
    /// 1, 2, … within its lesson.
    pub number: usize,
    pub title: String,
    /// Test names, where `*` stands for any text (`examples::case_1_*`,
    /// `*::loom::*`).
    pub checks: Vec<String>,
}

impl Lesson {
    /// `lesson_02`: the name of its files and of its test binary.
    pub fn name(&self) -> String {
        format!("lesson_{:02}", self.number)
    }

    pub fn text(&self) -> String {
        format!("lessons/{}.md", self.name())
    }

    pub fn learner_file(&self) -> String {
        format!("lessons/{}.rs", self.name())
    }

    pub fn stub_file(&self) -> String {
        format!("lessons/stubs/{}.rs", self.name())
    }

    pub fn reference_file(&self) -> String {
        format!("solutions/{}.rs", self.name())
    }

    pub fn test_file(&self) -> String {
        format!("tests/{}.rs", self.name())
    }

    /// The milestone a check (a test's name) belongs to: see [`milestone_of`].
    pub fn milestone_of(&self, test: &str) -> Option<&Milestone> {
        milestone_of(&self.milestones, test)
    }

    /// The heading its text must start with.
    pub fn heading(&self) -> String {
        format!("# Lesson {:02} — {}", self.number, self.title)
    }
}

/// Every lesson of a kata, in order.
#[derive(Clone, Debug)]
pub struct Catalog {
    pub root: PathBuf,
    pub lessons: Vec<Lesson>,
}

impl Catalog {
    /// Reads `lessons/lessons.toml` under `root` and finds each lesson's
    /// mistakes and alternatives. An error is a sentence naming the file and
    /// line to fix.
    pub fn load(root: &Path) -> Result<Catalog, String> {
        let path = root.join(FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let mut lessons = parse::lessons(&text).map_err(|e| format!("{FILE}: {e}"))?;
        for lesson in &mut lessons {
            let name = lesson.name();
            lesson.mistakes = files(&root.join("mistakes").join(&name), "", ".diff")
                .into_iter()
                .map(|n| File {
                    path: format!("mistakes/{name}/{n}.diff"),
                    name: n,
                })
                .collect();
            let mut alternatives: Vec<File> =
                files(&root.join("tests/alternatives").join(&name), "", ".rs")
                    .into_iter()
                    .map(|n| File {
                        path: format!("tests/alternatives/{name}/{n}.rs"),
                        name: n,
                    })
                    .collect();
            let further = format!("{name}_");
            alternatives.extend(
                files(&root.join("solutions"), &further, ".rs")
                    .into_iter()
                    .map(|n| File {
                        path: format!("solutions/{further}{n}.rs"),
                        name: n,
                    }),
            );
            alternatives.sort_by(|a, b| a.name.cmp(&b.name));
            lesson.alternatives = alternatives;
        }
        let catalog = Catalog {
            root: root.to_path_buf(),
            lessons,
        };
        catalog.validate()?;
        Ok(catalog)
    }

    pub fn lesson(&self, number: u32) -> Option<&Lesson> {
        self.lessons.iter().find(|l| l.number == number)
    }

    /// A mistake of `lesson` as the file compiled: its lesson's reference
    /// with its diff applied. An error names the mistake's file.
    pub fn mistake_source(&self, lesson: &Lesson, mistake: &File) -> Result<String, String> {
        let read = |path: &str| {
            std::fs::read_to_string(self.root.join(path))
                .map_err(|e| format!("cannot read {path}: {e}"))
        };
        let reference = read(&lesson.reference_file())?;
        mistake::Mistake::parse(&read(&mistake.path)?)
            .and_then(|m| m.apply(&reference))
            .map_err(|e| format!("{}: {e}", mistake.path))
    }

    /// What must hold for the generated code to make sense.
    fn validate(&self) -> Result<(), String> {
        let mut seen = Vec::new();
        for lesson in &self.lessons {
            if seen.contains(&lesson.number) {
                return Err(format!(
                    "{FILE}: lesson {} is described twice",
                    lesson.number
                ));
            }
            seen.push(lesson.number);
            if let Some(b) = lesson.baseline {
                let Some(base) = self
                    .lessons
                    .iter()
                    .find(|l| l.number == b && b != lesson.number)
                else {
                    return Err(format!(
                        "{FILE}: lesson {}'s baseline {b} is not another lesson of the catalog",
                        lesson.number
                    ));
                };
                // A baseline is driven as a limiter: `new(limit, period)`, `check`.
                if !matches!(base.kind, Kind::Limiter | Kind::SharedLimiter) {
                    return Err(format!(
                        "{FILE}: lesson {}'s baseline {b} is a {} lesson; a baseline must be a \
                         limiter or a shared limiter",
                        lesson.number,
                        base.kind.id()
                    ));
                }
            }
            let mut names: Vec<&str> = lesson
                .mistakes
                .iter()
                .chain(&lesson.alternatives)
                .map(|f| f.name.as_str())
                .collect();
            names.sort_unstable();
            if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!(
                    "lesson {}: two subjects are named {:?} (a mistake and an alternative, or two \
                     alternatives); rename one of the files",
                    lesson.number, w[0]
                ));
            }
            for file in lesson.mistakes.iter().chain(&lesson.alternatives) {
                if !is_subject_name(&file.name) {
                    return Err(format!(
                        "{}: {:?} cannot name a subject; a file name must be a Rust identifier \
                         other than {}",
                        file.path,
                        file.name,
                        RESERVED.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The files directly in `dir` whose names start with `prefix` and end with
/// `extension`, by name without the prefix and the extension, sorted.
fn files(dir: &Path, prefix: &str, extension: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let stem = file.strip_suffix(extension)?.strip_prefix(prefix)?;
            (!stem.is_empty()).then(|| stem.to_string())
        })
        .collect();
    names.sort();
    names
}

/// The names a lesson's test binary uses at its root, which no mistake or
/// alternative may take: the subjects it always has, the modules of the
/// check groups and of the rules lessons 08 and 09 run per rule, and the
/// function that gives the lesson.
pub const RESERVED: [&str; 18] = [
    "learner",
    "stub",
    "reference",
    "baseline",
    "lesson",
    "examples",
    "config",
    "property",
    "snapshot",
    "loom",
    "race",
    "fault",
    "end_to_end",
    "source",
    "fixed_window",
    "sliding_log",
    "token_bucket",
    "gcra",
];

/// Whether `name` can name a mistake or an alternative.
pub fn is_subject_name(name: &str) -> bool {
    is_ident(name) && !RESERVED.contains(&name)
}

fn is_ident(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The book's pages on using the kata, after the lessons: each a page of
/// `lessons/` and the title its first heading gives (`# The runner`).
pub const GUIDES: [(&str, &str); 2] = [
    ("runner.md", "The runner"),
    ("instructors.md", "For instructors"),
];

/// The book's table of contents (`lessons/SUMMARY.md`, read by mdBook):
/// the contract and the page of the harness's types beside it, every
/// lesson, titled from the catalog, each with its page of classic mistakes,
/// then the [`GUIDES`].
pub fn summary(catalog: &Catalog) -> String {
    let mut text = String::from(
        "# Summary\n\n[The contract](CONTRACT.md)\n\n[The harness's types](types.md)\n\n# Lessons\n\n",
    );
    for lesson in &catalog.lessons {
        let _ = writeln!(
            text,
            "- [{}]({}.md)",
            lesson.heading().trim_start_matches("# "),
            lesson.name()
        );
        if !lesson.mistakes.is_empty() {
            let _ = writeln!(
                text,
                "  - [Classic mistakes](mistakes/{}.md)",
                lesson.name()
            );
        }
    }
    text.push_str("\n# Using the kata\n\n");
    for (page, title) in GUIDES {
        let _ = writeln!(text, "- [{title}]({page})");
    }
    text
}

/// `lessons/mistakes/lesson_NN.md`, the book's appendix of a lesson's
/// classic mistakes: the hand-written list of them, one line each in the
/// order of the lesson's milestones ([`mistakes_list_file`], included),
/// then each one's explanation and diff, included from its file.
pub fn mistakes_page(lesson: &Lesson) -> String {
    let name = lesson.name();
    let mut text = format!(
        "# Lesson {:02} — classic mistakes\n\n\
         Bugs that [lesson {:02}](../{name}.md)'s code is often written with, each \
         kept in the kata's gallery and caught by the lesson's checks: first each in a \
         line, then each with its diff.\n\n\
         {{{{#include {name}{LIST}}}}}\n\n\
         ## Each mistake and its diff\n\n\
         Each mistake is kept as what it is and why it is tempting (the `//!` lines), \
         then the diff that puts it into the lesson's reference \
         ([`{}`](../../{})). The self-check proves that the lesson's checks catch \
         every one and print its `Shows:` lines; \
         `KATA_SUBJECT=mistake:<name> cargo test --test {name}` shows which checks do.\n",
        lesson.number,
        lesson.number,
        lesson.reference_file(),
        lesson.reference_file(),
    );
    for mistake in &lesson.mistakes {
        let _ = write!(
            text,
            "\n### {}\n\n```diff\n{{{{#include ../../{}}}}}\n```\n",
            mistake.name, mistake.path
        );
    }
    text
}

/// `lessons/mistakes/lesson_NN.list.md`, written by hand: every mistake of
/// the lesson in a line, linked to its diff (`../../mistakes/lesson_NN/…`),
/// which [`mistakes_page`] includes.
pub fn mistakes_list_file(lesson: &Lesson) -> String {
    format!("lessons/mistakes/{}{LIST}", lesson.name())
}

/// The ending of a lesson's hand-written list of mistakes, `lesson_NN.list.md`
/// (written in two parts, so that the catalog's check of cited pages reads
/// no page name in it).
const LIST: &str = concat!(".list", ".md");

/// Where [`mistakes_page`] is kept.
pub fn mistakes_page_file(lesson: &Lesson) -> String {
    format!("lessons/mistakes/{}.md", lesson.name())
}

#[cfg(test)]
mod tests;
