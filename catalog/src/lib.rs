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

pub mod mistake;
mod parse;
mod problems;

pub use problems::{book_problems, problems};

/// The rules a lesson may follow: the variants of the harness's
/// `Algorithm` (its tests check that they are these).
pub const ALGORITHMS: [&str; 4] = ["FixedWindow", "SlidingLog", "SlidingCounter", "TokenBucket"];

/// Where the catalog lives, relative to the kata's root.
pub const FILE: &str = "lessons/lessons.toml";

/// How a timeline drives a lesson's subject: each kind is a module of the
/// harness ([`Kind::module`]: its `variant!`, `Lesson` and `suite!`). Every
/// property of a kind below is an exhaustive `match`, so that a new kind
/// must say what it is.
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
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Limiter,
        Kind::SharedLimiter,
        Kind::HttpLayer,
        Kind::RedisLimiter,
        Kind::BoundedLimiter,
        Kind::AsyncRedisLimiter,
    ];

    /// As written in the catalog.
    pub fn id(self) -> &'static str {
        match self {
            Kind::Limiter => "limiter",
            Kind::SharedLimiter => "shared-limiter",
            Kind::HttpLayer => "http-layer",
            Kind::RedisLimiter => "redis-limiter",
            Kind::BoundedLimiter => "bounded-limiter",
            Kind::AsyncRedisLimiter => "async-redis-limiter",
        }
    }

    /// The module of the harness (`kata`) that holds the kind: its
    /// `variant!`, its `Lesson` and its `suite!` (see the harness's `kind`).
    pub fn module(self) -> &'static str {
        match self {
            Kind::Limiter => "limiter",
            Kind::SharedLimiter => "shared_limiter",
            Kind::HttpLayer => "http",
            Kind::RedisLimiter => "redis",
            Kind::BoundedLimiter => "memory",
            Kind::AsyncRedisLimiter => "async_redis",
        }
    }

    /// Whether its tests start a `redis-server` of their own (the runner
    /// says so when there is none).
    pub fn needs_redis(self) -> bool {
        match self {
            Kind::RedisLimiter | Kind::AsyncRedisLimiter => true,
            Kind::Limiter | Kind::SharedLimiter | Kind::HttpLayer | Kind::BoundedLimiter => false,
        }
    }

    /// Whether `cargo run -- serve` serves a lesson of this kind: its layer
    /// (`http-layer`), or its whole stack as app server processes
    /// (`async-redis-limiter`, `serve --servers N`).
    pub fn serves(self) -> bool {
        match self {
            Kind::HttpLayer | Kind::AsyncRedisLimiter => true,
            Kind::Limiter | Kind::SharedLimiter | Kind::RedisLimiter | Kind::BoundedLimiter => {
                false
            }
        }
    }

    /// Whether `cargo run -- bench` measures a lesson of this kind (the
    /// bench crate's build script writes its code; lesson 08's cost is a
    /// round trip to Redis, not measured).
    pub fn measured(self) -> bool {
        match self {
            Kind::Limiter | Kind::SharedLimiter | Kind::HttpLayer | Kind::BoundedLimiter => true,
            Kind::RedisLimiter | Kind::AsyncRedisLimiter => false,
        }
    }

    /// Whether the subject is raced by the loom scenarios.
    pub fn concurrent(self) -> bool {
        match self {
            Kind::Limiter => false,
            Kind::SharedLimiter => true,
            Kind::HttpLayer => false,
            Kind::RedisLimiter => false,
            Kind::BoundedLimiter => true,
            Kind::AsyncRedisLimiter => false,
        }
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

/// Whether `pattern` (where `*` stands for any text) matches the whole of
/// `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = parts.split_first().expect("split gives one part at least");
    let Some(mut left) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return left.is_empty();
    };
    for part in middle {
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.len() >= last.len() && left.ends_with(last)
}

/// The milestone a check (a test's name) belongs to: the one with the most
/// specific pattern that matches it (the most characters other than `*`;
/// the earlier milestone on a tie), so that a general pattern
/// (`fixed_window::property::*`) and an exception to it
/// (`*::property::agrees_with_model_under_a_bound`) can sit in two
/// milestones. `None` when there are no milestones or no pattern matches.
pub fn milestone_of<'m>(milestones: &'m [Milestone], test: &str) -> Option<&'m Milestone> {
    let mut best: Option<(&Milestone, usize)> = None;
    for milestone in milestones {
        for pattern in &milestone.checks {
            let score = specificity(pattern);
            if matches(pattern, test) && best.is_none_or(|(_, s)| score > s) {
                best = Some((milestone, score));
            }
        }
    }
    best.map(|(m, _)| m)
}

/// How specific a pattern is: its characters other than `*`.
fn specificity(pattern: &str) -> usize {
    pattern.chars().filter(|c| *c != '*').count()
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

/// What `build.rs` of the lessons' package runs: writes
/// `$OUT_DIR/lesson_NN.rs` for every lesson of the catalog, which
/// `kata::lesson!()` in `tests/lesson_NN.rs` includes. Stops the build with
/// the catalog's error, if it has one.
pub fn build_script() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("run by cargo"));
    for watched in [FILE, "mistakes", "tests/alternatives", "solutions"] {
        println!("cargo::rerun-if-changed={watched}");
    }
    let catalog = match Catalog::load(&root) {
        Ok(c) => c,
        Err(e) => {
            println!("cargo::error={e}");
            return;
        }
    };
    // The mistakes, applied, where a maintainer can open the file and line
    // a failure names: `target/mistakes/lesson_NN/<name>.rs`. (The folder is
    // not watched: what this script writes there would make the next build
    // run it, and rebuild every lesson, once more.) `KATA_MISTAKES=off`
    // leaves them out (mutation testing of the references, where a mutant
    // the gallery's diffs no longer apply to must still build).
    let applied = target_dir(&out).join("mistakes");
    println!("cargo::rerun-if-env-changed=KATA_MISTAKES");
    let without_mistakes = std::env::var("KATA_MISTAKES").as_deref() == Ok("off");
    for lesson in &catalog.lessons {
        let mut lesson = lesson.clone();
        if without_mistakes {
            lesson.mistakes.clear();
        }
        let folder = applied.join(lesson.name());
        for mistake in &lesson.mistakes {
            match catalog.mistake_source(&lesson, mistake) {
                Ok(text) => write_if_changed(&folder.join(format!("{}.rs", mistake.name)), &text),
                Err(e) => println!("cargo::error={e}"),
            }
        }
        // A mistake renamed or removed leaves no file behind.
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let kept = name
                .strip_suffix(".rs")
                .is_some_and(|n| lesson.mistakes.iter().any(|m| m.name == n));
            if !kept {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let code = generate(&catalog, &lesson, &applied);
        write_if_changed(&out.join(format!("{}.rs", lesson.name())), &code);
    }
}

/// Writes `text` to `file` unless it holds it already, so that an unchanged
/// lesson is not rebuilt; by a rename, so that two builds at once never
/// read half a file.
pub fn write_if_changed(file: &Path, text: &str) {
    if std::fs::read_to_string(file).ok().as_deref() == Some(text) {
        return;
    }
    let dir = file.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).expect("the build's folders are writable");
    let partial = file.with_extension(format!("{}.partial", std::process::id()));
    std::fs::write(&partial, text).expect("the build's folders are writable");
    std::fs::rename(&partial, file).expect("the build's folders are writable");
}

/// Cargo's target folder, from a build script's `OUT_DIR` inside it (the
/// first folder up that holds cargo's `CACHEDIR.TAG`), or `OUT_DIR` itself.
fn target_dir(out: &Path) -> PathBuf {
    // Cargo tags the target folder it makes; one made before cargo ran
    // (by a tool that keeps its files there) has no tag, and then the
    // folder is the one above `<profile>/build/<package>/out`.
    out.ancestors()
        .find(|d| d.join("CACHEDIR.TAG").is_file())
        .or_else(|| {
            out.ancestors()
                .find(|d| d.file_name().is_some_and(|n| n == "build"))
                .and_then(|build| build.parent()?.parent())
        })
        .unwrap_or(out)
        .to_path_buf()
}

/// The code `tests/lesson_NN.rs` includes: the lesson's implementations as
/// subjects, `fn lesson()`, and the standard checks of its kind. Its
/// mistakes compile from `applied/lesson_NN/<name>.rs`, where the build
/// script writes them.
pub fn generate(catalog: &Catalog, lesson: &Lesson, applied: &Path) -> String {
    let slashes = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let root = slashes(&catalog.root);
    let file = |path: &str| format!("[{path:?}, {:?}]", format!("{root}/{path}"));
    let list = |files: &[File]| -> String {
        files
            .iter()
            .map(|f| format!("\n        {}: {},", f.name, file(&f.path)))
            .collect()
    };
    // A mistake is named as the file compiled, relative to the kata's root
    // when the target folder is inside it.
    let mistakes: String = lesson
        .mistakes
        .iter()
        .map(|f| {
            let full = slashes(&applied.join(lesson.name()).join(format!("{}.rs", f.name)));
            let shown = full
                .strip_prefix(&format!("{root}/"))
                .unwrap_or(&full)
                .to_string();
            format!("\n        {}: [{shown:?}, {full:?}],", f.name)
        })
        .collect();
    let mut code = String::new();
    let _ = writeln!(
        code,
        "// Written by the lessons' build script from {FILE} and the files on disk."
    );
    let _ = writeln!(code, "kata::define_lesson! {{");
    let _ = writeln!(code, "    kind: kata::{},", lesson.kind.module());
    let _ = writeln!(code, "    number: {},", lesson.number);
    let _ = writeln!(code, "    title: {:?},", lesson.title);
    let _ = writeln!(code, "    algorithm: {},", lesson.algorithm);
    let _ = writeln!(code, "    limiter: {},", lesson.type_name);
    let _ = writeln!(code, "    learner: {},", file(&lesson.learner_file()));
    let _ = writeln!(code, "    stub: {},", file(&lesson.stub_file()));
    let _ = writeln!(code, "    reference: {},", file(&lesson.reference_file()));
    let _ = writeln!(code, "    mistakes: {{{mistakes}\n    }},");
    let _ = writeln!(
        code,
        "    alternatives: {{{}\n    }},",
        list(&lesson.alternatives)
    );
    if let Some(base) = lesson.baseline.and_then(|b| catalog.lesson(b)) {
        let _ = writeln!(
            code,
            "    baseline: {{ {}: {}, test: decides_like_the_lesson_{:02}_reference }},",
            base.type_name,
            file(&base.reference_file()),
            base.number
        );
    }
    let _ = writeln!(code, "}}");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mistakes land in the target folder whether cargo tagged it or
    /// not (a folder made before cargo's first build has no tag).
    #[test]
    fn the_target_folder_is_found_with_or_without_its_tag() {
        let dir = std::env::temp_dir().join(format!("kata-target-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let out = dir.join("target/debug/build/ratelimit-kata-0123/out");
        std::fs::create_dir_all(&out).unwrap();
        assert_eq!(target_dir(&out), dir.join("target"));
        std::fs::write(dir.join("target/CACHEDIR.TAG"), "Signature").unwrap();
        assert_eq!(target_dir(&out), dir.join("target"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn kata_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("catalog/ is inside the kata")
            .to_path_buf()
    }

    /// Every file of the kata agrees with the catalog; each problem names
    /// the file to fix.
    #[test]
    fn the_kata_agrees_with_its_catalog() {
        let catalog = Catalog::load(&kata_root()).unwrap_or_else(|e| panic!("{e}"));
        assert!(catalog.lessons.len() >= 6, "{:?}", catalog.lessons);
        let found = problems(&catalog);
        assert!(found.is_empty(), "\n{}", found.join("\n"));
    }

    #[test]
    fn finds_mistakes_and_alternatives_on_disk() {
        let catalog = Catalog::load(&kata_root()).unwrap();
        let six = catalog.lesson(6).unwrap();
        assert_eq!(six.baseline, Some(5));
        assert!(six
            .alternatives
            .iter()
            .any(|a| a.name == "further" && a.path == "solutions/lesson_06_further.rs"));
        assert!(six
            .mistakes
            .iter()
            .all(|m| m.path.starts_with("mistakes/lesson_06/") && m.path.ends_with(".diff")));
        let code = generate(&catalog, six, &kata_root().join("target/mistakes"));
        assert!(code.contains("kind: kata::shared_limiter,"), "{code}");
        let first = &six.mistakes[0].name;
        assert!(
            code.contains(&format!(
                "{first}: [\"target/mistakes/lesson_06/{first}.rs\", "
            )),
            "{code}"
        );
        assert!(
            code.contains("decides_like_the_lesson_05_reference"),
            "{code}"
        );
    }

    #[test]
    fn patterns_match_whole_names() {
        assert!(matches(
            "examples::case_1_*",
            "examples::case_1_quota_then_429"
        ));
        assert!(!matches("examples::case_1_*", "examples::case_10_x"));
        assert!(matches("*::loom::*", "fixed_window::loom::new_key"));
        assert!(!matches("*::loom::*", "loom::new_key"));
        assert!(matches("snapshot::first_look", "snapshot::first_look"));
        assert!(!matches("snapshot::first_look", "snapshot::first_look_2"));
        assert!(!matches("fixed_window::*", "x::fixed_window::y"));
        assert!(matches("a*b*c", "abc") && matches("a*b*c", "a-b-b-c"));
        assert!(!matches("a*bc", "abc-bc-x") && !matches("ab*ba", "aba"));
    }

    /// Milestones come from `[[milestone]]` tables after their lesson, and a
    /// check belongs to the milestone of its most specific pattern.
    #[test]
    fn milestones_take_each_check_by_the_most_specific_pattern() {
        let text = "[[lesson]]\nnumber = 9\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n\n\
                    [[milestone]]\nlesson = 9\ntitle = \"One\"\nchecks = \"config::* fixed_window::property::*\"\n\n\
                    [[milestone]]\nlesson = 9\ntitle = \"Two\"\nchecks = \"*::property::under_a_bound  *::loom::*\"\n";
        let lessons = parse::lessons(text).unwrap();
        let lesson = &lessons[0];
        let titles: Vec<(usize, &str)> = lesson
            .milestones
            .iter()
            .map(|m| (m.number, m.title.as_str()))
            .collect();
        assert_eq!(titles, [(1, "One"), (2, "Two")]);
        assert_eq!(
            lesson.milestones[1].checks,
            ["*::property::under_a_bound", "*::loom::*"]
        );
        let of = |test: &str| lesson.milestone_of(test).map(|m| m.number);
        assert_eq!(of("config::zero_keys"), Some(1));
        assert_eq!(of("fixed_window::property::agrees_with_model"), Some(1));
        assert_eq!(of("fixed_window::property::under_a_bound"), Some(2));
        assert_eq!(of("fixed_window::loom::new_key"), Some(2));
        assert_eq!(of("snapshot::x"), None);
        for (bad, says) in [
            ("[[milestone]]\nlesson = 3\ntitle = \"x\"\nchecks = \"a\"\n", "lesson 3 is not described"),
            ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 3\ntitle = \"x\"\nchecks = \"a\"\n", "lesson 3 is not described"),
            ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 1\ntitle = \"x\"\nchecks = \" \"\n", "test-name patterns"),
            ("[[lesson]]\nnumber = 1\ntitle = \"B\"\nkind = \"limiter\"\ntype = \"B\"\nalgorithm = \"FixedWindow\"\n[[milestone]]\nlesson = 1\nchecks = \"a\"\n", "has no `title`"),
        ] {
            let error = match parse::lessons(bad) {
                Ok(_) => panic!("accepted: {bad}"),
                Err(e) => e,
            };
            assert!(error.contains(says), "{error}");
        }
    }

    /// A mistake whose diff no longer applies, and a whole file among the
    /// diffs, are each named.
    #[test]
    fn names_a_mistake_that_no_longer_applies() {
        let root = std::env::temp_dir().join(format!("kata-catalog-{}", std::process::id()));
        let put = |path: &str, text: &str| {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        put(
            FILE,
            "[[lesson]]\nnumber = 1\ntitle = \"T\"\nkind = \"limiter\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n",
        );
        put("solutions/lesson_01.rs", "//! R\n\nfn f() {\n    a();\n}\n");
        put(
            "mistakes/lesson_01/gone.diff",
            "//! MISTAKE: b\n--- a\n+++ b\n@@ -3,3 +3,3 @@\n fn f() {\n-    b();\n+    c();\n }\n",
        );
        put(
            "mistakes/lesson_01/fine.diff",
            "//! MISTAKE: c\n@@ -3,3 +3,3 @@\n fn f() {\n-    a();\n+    c();\n }\n",
        );
        put("mistakes/lesson_01/whole.rs", "//! MISTAKE\n");
        put(
            "lessons/lesson_01.md",
            "# Lesson 01 — T\n\n`mistakes/lesson_01/fine.rs` and `target/mistakes/lesson_01/fine.rs`\n",
        );
        let catalog = Catalog::load(&root).unwrap();
        let lesson = catalog.lesson(1).unwrap();
        assert_eq!(
            catalog.mistake_source(lesson, &lesson.mistakes[0]).unwrap(),
            "//! MISTAKE: c\n\nfn f() {\n    c();\n}\n"
        );
        let found = problems(&catalog);
        let _ = std::fs::remove_dir_all(&root);
        assert!(
            found.iter().any(
                |p| p.starts_with("mistakes/lesson_01/gone.diff: the hunk at line 4")
                    && p.contains("no longer applies")
            ),
            "{found:#?}"
        );
        assert!(
            !found
                .iter()
                .any(|p| p.starts_with("mistakes/lesson_01/fine.diff:")),
            "{found:#?}"
        );
        assert!(
            found
                .iter()
                .any(|p| p.starts_with("mistakes/lesson_01/whole.rs is not a mistake")),
            "{found:#?}"
        );
        let cited: Vec<_> = found
            .iter()
            .filter(|p| p.contains(": cites mistakes/"))
            .collect();
        assert_eq!(cited.len(), 1, "{found:#?}");
        assert!(cited[0].starts_with("lessons/lesson_01.md: cites mistakes/lesson_01/fine.rs"));
    }

    /// What would fail later as a compile error in a lesson's generated
    /// code is refused when the catalog is read, with a sentence.
    #[test]
    fn refuses_a_reserved_name_and_a_baseline_that_is_no_limiter() {
        let root = std::env::temp_dir().join(format!("kata-catalog-names-{}", std::process::id()));
        let put = |path: &str, text: &str| {
            let file = root.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        let lesson = |n: u32, kind: &str, extra: &str| {
            format!("[[lesson]]\nnumber = {n}\ntitle = \"T\"\nkind = \"{kind}\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n{extra}\n")
        };
        put(FILE, &lesson(1, "limiter", ""));
        put("mistakes/lesson_01/config.diff", "//! MISTAKE\n");
        let e = Catalog::load(&root).unwrap_err();
        assert!(
            e.contains("\"config\" cannot name a subject") && e.contains("property"),
            "{e}"
        );
        std::fs::remove_file(root.join("mistakes/lesson_01/config.diff")).unwrap();
        put(
            FILE,
            &format!(
                "{}{}",
                lesson(7, "http-layer", ""),
                lesson(8, "limiter", "baseline = 7")
            ),
        );
        let e = Catalog::load(&root).unwrap_err();
        let _ = std::fs::remove_dir_all(&root);
        assert!(e.contains("baseline 7 is a http-layer lesson"), "{e}");
    }

    #[test]
    fn rejects_a_bad_catalog_with_its_line() {
        let e = parse::lessons("[[lesson]]\nnumber = 1\ntitle = \"x\"\nkind = \"http\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n")
            .unwrap_err();
        assert!(e.contains("line 4") && e.contains("\"limiter\""), "{e}");
        let e = parse::lessons("[[lesson]]\nnumber = 1\n").unwrap_err();
        assert!(e.contains("title"), "{e}");
        let e = parse::lessons("[[lesson]]\nnumber = one\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let e = parse::lessons("[[lesson]]\nnumber = 1\ntitle = \"x\"\nkind = \"limiter\"\ntype = \"X\"\nalgorithm = \"Gcra\"\n")
            .unwrap_err();
        assert!(
            e.contains("line 6") && e.contains("FixedWindow, SlidingLog"),
            "{e}"
        );
        let e = parse::lessons("number = 1\n").unwrap_err();
        assert!(e.contains("[[lesson]]"), "{e}");
    }
}
