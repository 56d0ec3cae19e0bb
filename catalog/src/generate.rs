//! The code every lesson's test binary is built from: `build.rs` of the
//! lessons' package writes `$OUT_DIR/lesson_NN.rs` from the catalog, and
//! each lesson's mistakes applied to its reference.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{Catalog, Lesson, FILE};

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

/// The code `tests/lesson_NN.rs` includes: each of the lesson's files
/// compiled as a subject by its kind's `variant!`, `fn lesson()` (the
/// lesson, built on first use from these facts and the subject
/// `KATA_SUBJECT` selects), and `fn main()`, which runs the kind's checks
/// (`kata::<kind>::trials`), the test file's `examples` and the baseline's
/// agreement, if the lesson has one. A kind that counts the bytes its test
/// binary holds also gets its allocator. Each file is given twice: as
/// learners see it, relative to the kata's root, and as the compiler finds
/// it. Its mistakes compile from `applied/lesson_NN/<name>.rs`, where the
/// build script writes them.
pub fn generate(catalog: &Catalog, lesson: &Lesson, applied: &Path) -> String {
    let slashes = |p: &Path| p.to_string_lossy().replace('\\', "/");
    let root = slashes(&catalog.root);
    let kind = format!("kata::{}", lesson.kind.module());
    let limiter = &lesson.type_name;
    let mut code = String::new();
    let _ = writeln!(
        code,
        "// Written by the lessons' build script from {FILE} and the files on disk."
    );
    let mut subject = |module: &str, path: &str, full: &str, kind: &str, limiter: &str| {
        let _ = writeln!(
            code,
            "{kind}::variant!({module}, {path:?}, {full:?}, {limiter});"
        );
    };
    let mut subjects: Vec<(String, String, String)> = vec![];
    let mut add = |module: &str, path: &str| {
        subjects.push((
            module.to_string(),
            path.to_string(),
            format!("{root}/{path}"),
        ));
    };
    add("learner", &lesson.learner_file());
    add("stub", &lesson.stub_file());
    add("reference", &lesson.reference_file());
    let mistakes: Vec<(String, String, String)> = lesson
        .mistakes
        .iter()
        .map(|f| {
            // A mistake is named as the file compiled, relative to the
            // kata's root when the target folder is inside it.
            let full = slashes(&applied.join(lesson.name()).join(format!("{}.rs", f.name)));
            let shown = full
                .strip_prefix(&format!("{root}/"))
                .unwrap_or(&full)
                .to_string();
            (f.name.clone(), shown, full)
        })
        .collect();
    let alternatives: Vec<(String, String, String)> = lesson
        .alternatives
        .iter()
        .map(|f| (f.name.clone(), f.path.clone(), format!("{root}/{}", f.path)))
        .collect();
    for (module, path, full) in subjects.iter().chain(&mistakes).chain(&alternatives) {
        subject(module, path, full, &kind, limiter);
    }
    let baseline = lesson.baseline.and_then(|b| catalog.lesson(b));
    if let Some(base) = baseline {
        // A baseline is driven as a limiter: `new(limit, period)`, `check`.
        let path = base.reference_file();
        subject(
            "baseline",
            &path,
            &format!("{root}/{path}"),
            "kata::limiter",
            &base.type_name,
        );
    }
    // The lesson whose reference the kind's checks serve its subjects
    // against (lesson 11's client meets lesson 07's layer).
    let met = lesson.kind.facts().meets.and_then(|n| catalog.lesson(n));
    if let Some(met) = met {
        let path = met.reference_file();
        subject(
            "met",
            &path,
            &format!("{root}/{path}"),
            &format!("kata::{}", met.kind.module()),
            &met.type_name,
        );
    }
    let named = |list: &[(String, String, String)]| -> String {
        list.iter()
            .map(|(m, _, _)| format!("({m:?}, {m}::VARIANT), "))
            .collect()
    };
    let _ = write!(
        code,
        r#"
/// This lesson, with the subject `KATA_SUBJECT` selects.
fn lesson() -> &'static {kind}::Lesson {{
    static LESSON: ::std::sync::OnceLock<{kind}::Lesson> = ::std::sync::OnceLock::new();
    LESSON.get_or_init(|| {{
        <{kind}::Lesson as kata::kind::Kind>::new(
            kata::kind::Facts {{
                root: env!("CARGO_MANIFEST_DIR"),
                number: {number},
                title: {title:?},
                limiter: {limiter:?},
                algorithm: kata::models::Algorithm::{algorithm},
            }},
            kata::kind::Subjects::new(
                env!("CARGO_MANIFEST_DIR"),
                kata::drive::Implementations {{
                    learner: learner::VARIANT,
                    stub: stub::VARIANT,
                    reference: reference::VARIANT,
                    mistakes: vec![{mistakes}],
                    alternatives: vec![{alternatives}],
                    baseline: {baseline},
                }},
            ),
        )
    }})
}}

/// The lesson's checks: its kind's, then the test file's examples.
fn main() -> ::std::process::ExitCode {{
{meet}    let mut trials = {kind}::trials(lesson);
    examples(&mut trials);
"#,
        number = lesson.number,
        title = lesson.title,
        algorithm = lesson.algorithm,
        mistakes = named(&mistakes),
        alternatives = named(&alternatives),
        meet = match met {
            Some(met) => format!(
                "    // Lesson {n:02}'s reference, which the checks serve the subjects against.\n    \
                 {kind}::serve::meet(met::VARIANT);\n",
                n = met.number
            ),
            None => String::new(),
        },
        baseline = match baseline {
            Some(base) => format!("Some(({:?}, baseline::VARIANT))", base.type_name),
            None => "None".to_string(),
        },
    );
    if let Some(base) = baseline {
        let _ = writeln!(
            code,
            "    // This lesson keeps lesson {n:02}'s contract another way: on random\n    \
             // timelines it must answer exactly as that lesson's reference does.\n    \
             trials.test(\"decides_like_the_lesson_{n:02}_reference\", || lesson().agrees_with_baseline());",
            n = base.number
        );
    }
    let _ = writeln!(code, "    kata::trial::main(trials)\n}}");
    if let Some(allocator) = lesson.kind.facts().allocator {
        let _ = writeln!(
            code,
            "\n/// What the kind's checks weigh a subject's memory with.\n\
             #[global_allocator]\nstatic ALLOCATOR: {kind}::{allocator} = {kind}::{allocator};"
        );
    }
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
}
