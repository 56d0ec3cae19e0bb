//! The fixture katas the runner is driven on: one of five lessons (passing,
//! failing, not compiling, hanging, not started) and one of lesson 07's
//! layer, each its own package with the kata's dependencies and profiles
//! (the harness optimised as the lessons have it), built in a target
//! directory of their own: a fixture's build script writes the catalog's
//! mistakes into its target directory and removes what its catalog does
//! not list, which would be the kata's own mistakes in the kata's target.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::ROOT;

/// One fixture lesson: its learner file and what it should show.
pub struct Fixture {
    pub number: u32,
    pub title: &'static str,
    pub learner: String,
}

pub fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).expect("a kata file")
}

/// A mistake of the gallery as its whole file: the reference with its diff.
pub fn mistake(lesson: u32, name: &str) -> String {
    let catalog = kata_catalog::Catalog::load(Path::new(ROOT)).expect("the kata's catalog");
    let lesson = catalog.lesson(lesson).expect("a lesson of the catalog");
    let file = lesson
        .mistakes
        .iter()
        .find(|m| m.name == name)
        .expect("a mistake of the gallery");
    catalog
        .mistake_source(lesson, file)
        .expect("its diff applies")
}

pub fn fixtures() -> Vec<Fixture> {
    let reference = read("solutions/lesson_01.rs");
    let stub = read("lessons/stubs/lesson_01.rs");
    let broken = reference.replace(
        "        state.latest = now;\n",
        "        state.latest = now;\n        let wrong: u32 = state;\n",
    );
    assert_ne!(broken, reference, "the compile error must land in the file");
    let hanging = reference.replace(
        "    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {\n",
        "    pub fn check(&mut self, key: &str, now: Timestamp) -> Decision {\n        let mut spins = 0u64;\n        while std::hint::black_box(spins) < u64::MAX {\n            spins += 1;\n        }\n",
    );
    assert_ne!(hanging, reference, "the endless loop must land in the file");
    vec![
        Fixture {
            number: 1,
            title: "Passing",
            learner: reference,
        },
        Fixture {
            number: 2,
            title: "Failing",
            learner: mistake(1, "full_window_retry"),
        },
        Fixture {
            number: 3,
            title: "Not compiling",
            learner: broken,
        },
        Fixture {
            number: 4,
            title: "Hanging",
            learner: hanging,
        },
        Fixture {
            number: 5,
            title: "Not started",
            learner: stub,
        },
    ]
}

/// Writes `text` to `path` unless it already holds it: a fixture written
/// again unchanged keeps its files' times, so cargo does not build its
/// lessons again on every run of these tests.
pub fn put(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// Forgets what earlier runs of the runner left in a fixture kata: its
/// state (`.kata/`) and the learner files' kept versions.
pub fn forget_state(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(".kata"));
    let _ = std::fs::remove_dir_all(dir.join("lessons/backups"));
}

/// Where every fixture kata builds: a target directory of their own.
pub fn target() -> PathBuf {
    Path::new(ROOT)
        .join("target")
        .join("runner-fixture")
        .join("target")
}

/// The kata's dependencies, build dependencies and profiles, as its
/// manifest writes them, its paths made absolute: a fixture builds with
/// the dependencies and settings a lesson of the kata builds with.
fn shared_sections() -> String {
    let manifest = read("Cargo.toml");
    let mut kept = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = line == "[dependencies]"
                || line == "[build-dependencies]"
                || line.starts_with("[profile");
            if keep {
                kept.push('\n');
            }
        }
        if keep && !line.starts_with('#') && !line.trim().is_empty() {
            kept.push_str(&line.replace("path = \"", &format!("path = \"{ROOT}/")));
            kept.push('\n');
        }
    }
    assert!(
        kept.contains("[dependencies]") && kept.contains("[profile"),
        "the kata's manifest has dependencies and profiles"
    );
    kept
}

/// A fixture kata's manifest (returned, for its caller to write last) and
/// its build script and lock file: what the kata's own manifest holds,
/// but for its package's name, its workspace and its lessons' test targets
/// (each `harness = false`, as the kata's).
pub fn package(dir: &Path, name: &str, lessons: &[u32]) -> String {
    put(&dir.join("Cargo.lock"), &read("Cargo.lock"));
    put(
        &dir.join("build.rs"),
        "fn main() {\n    kata_catalog::build_script();\n}\n",
    );
    let targets: String = lessons
        .iter()
        .map(|n| format!("[[test]]\nname = \"lesson_{n:02}\"\nharness = false\n\n"))
        .collect();
    format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         {targets}[workspace]\n{shared}",
        shared = shared_sections(),
    )
}

/// Writes a fixture kata's manifest and lets cargo settle its lock file
/// (the kata's own, less what the fixture does not use) before any test
/// runs: a lock file cargo rewrites on the first build would change the
/// fingerprint of the lesson built first, and its outcome would never be
/// found in the cache again. `cargo tree` and not `cargo metadata`: it
/// resolves for this machine's platform only, so it never asks for a
/// package (another platform's) that the build did not download.
fn finish(dir: &Path, manifest: &str) {
    put(&dir.join("Cargo.toml"), manifest);
    let settled = std::process::Command::new(env!("CARGO"))
        .args(["tree", "--offline", "--edges", "all"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("cargo starts");
    assert!(settled.success(), "cargo tree in {}", dir.display());
}

/// A lesson's test file with no examples of its own: its kind's checks.
const NO_EXAMPLES: &str = "kata::lesson!();\n\nfn examples(_: &mut kata::trial::Trials) {}\n";

/// Writes the fixture kata once per test run and returns its folder.
pub fn kata() -> &'static Path {
    static KATA: OnceLock<PathBuf> = OnceLock::new();
    KATA.get_or_init(|| {
        let dir = Path::new(ROOT).join("target").join("runner-fixture").join("kata");
        forget_state(&dir);
        for sub in ["lessons/stubs", "solutions", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let numbers: Vec<u32> = fixtures().iter().map(|f| f.number).collect();
        let manifest = package(&dir, "runner-fixture", &numbers);
        std::fs::create_dir_all(dir.join("tests/snapshots")).unwrap();
        let stub = read("lessons/stubs/lesson_01.rs");
        let mut catalog = String::new();
        for f in fixtures() {
            let name = format!("lesson_{:02}", f.number);
            catalog.push_str(&format!(
                "[[lesson]]\nnumber = {}\ntitle = \"{}\"\nkind = \"limiter\"\ntype = \"FixedWindow\"\nalgorithm = \"FixedWindow\"\n\n",
                f.number, f.title
            ));
            let write = |path: String, text: &str| put(&dir.join(path), text);
            write(format!("lessons/{name}.rs"), &f.learner);
            write(format!("lessons/stubs/{name}.rs"), &stub);
            write(format!("solutions/{name}.rs"), &read("solutions/lesson_01.rs"));
            // Every fixture is lesson 01 under another number: its drawings too.
            for entry in std::fs::read_dir(Path::new(ROOT).join("tests/snapshots")).unwrap() {
                let file = entry.unwrap().file_name().into_string().unwrap();
                if let Some(rest) = file.strip_prefix("lesson_01_") {
                    write(
                        format!("tests/snapshots/{name}_{rest}"),
                        &read(&format!("tests/snapshots/{file}")),
                    );
                }
            }
            write(
                format!("lessons/{name}.md"),
                &format!(
                    "# Lesson {:02} — {}\n\n<details><summary>Hint 1: first</summary>\n\nthe first hint\n\n</details>\n\n\
                     <details><summary>Hint 2: second</summary>\n\nthe second hint\n\n</details>\n",
                    f.number, f.title
                ),
            );
            write(
                format!("tests/{name}.rs"),
                "kata::lesson!();\n\n\
                 const EXAMPLES: &[kata::trial::Named<(u64, u64, &str, &str)>] = &[\n\
                 \x20   (\"counts_down\", (2, 1_000, \"a@0 a@0 a@0\", \"+1 +0 -1000\")),\n\
                 \x20   (\"edge\", (1, 1_000, \"a@0 a@999 a@1000\", \"+0 -1 +0\")),\n];\n\n\
                 fn examples(t: &mut kata::trial::Trials) {\n\
                 \x20   t.examples(EXAMPLES, |(limit, window, requests, expected)| {\n\
                 \x20       lesson().example(limit, window, requests, expected)\n\
                 \x20   });\n}\n",
            );
        }
        put(&dir.join("lessons/lessons.toml"), &catalog);
        finish(&dir, &manifest);
        dir
    })
}

/// A second fixture kata, of one lesson: lesson 07's layer (the reference,
/// as the learner's file).
pub fn layer_kata() -> &'static Path {
    static KATA: OnceLock<PathBuf> = OnceLock::new();
    KATA.get_or_init(|| {
        let dir = Path::new(ROOT).join("target").join("runner-fixture").join("layer");
        forget_state(&dir);
        for sub in ["lessons/stubs", "solutions", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let manifest = package(&dir, "runner-layer-fixture", &[7]);
        put(&dir.join("lessons/lessons.toml"), "[[lesson]]\nnumber = 7\ntitle = \"The layer\"\nkind = \"http-layer\"\ntype = \"RateLimitLayer\"\nalgorithm = \"FixedWindow\"\n",);
        let layer = read("solutions/lesson_07.rs");
        for path in ["lessons/lesson_07.rs", "lessons/stubs/lesson_07.rs", "solutions/lesson_07.rs"] {
            put(&dir.join(path), &layer);
        }
        put(&dir.join("lessons/lesson_07.md"), "# Lesson 07 — The layer\n");
        put(&dir.join("tests/lesson_07.rs"), NO_EXAMPLES);
        finish(&dir, &manifest);
        dir
    })
}

/// A kata of lesson 10 alone, the reference in the learner's place: what
/// `serve --servers N` builds.
pub fn stack_kata() -> &'static Path {
    static KATA: OnceLock<PathBuf> = OnceLock::new();
    KATA.get_or_init(|| {
        let dir = Path::new(ROOT)
            .join("target")
            .join("runner-fixture")
            .join("stack");
        forget_state(&dir);
        for sub in ["lessons/stubs", "solutions", "tests"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        let manifest = package(&dir, "runner-stack-fixture", &[10]);
        put(
            &dir.join("lessons/lessons.toml"),
            "[[lesson]]\nnumber = 10\ntitle = \"The stack\"\nkind = \"async-redis-limiter\"\n\
             type = \"AsyncRedisLimiter\"\nalgorithm = \"FixedWindow\"\n",
        );
        let stack = read("solutions/lesson_10.rs");
        for path in [
            "lessons/lesson_10.rs",
            "lessons/stubs/lesson_10.rs",
            "solutions/lesson_10.rs",
        ] {
            put(&dir.join(path), &stack);
        }
        put(
            &dir.join("lessons/lesson_10.md"),
            "# Lesson 10 — The stack\n",
        );
        put(&dir.join("tests/lesson_10.rs"), NO_EXAMPLES);
        finish(&dir, &manifest);
        dir
    })
}
