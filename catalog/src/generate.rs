//! The code every lesson's test binary is built from: `build.rs` of the
//! lessons' package writes `$OUT_DIR/lesson_NN.rs` from the catalog, and
//! each lesson's mistakes applied to its reference.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{Catalog, File, Lesson, FILE};

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
}
