//! Everything that must agree with the catalog, checked: each problem is a
//! sentence that names the file to fix.

use std::path::Path;

use crate::{Catalog, FILE};

/// Every disagreement between the kata's files and its catalog.
pub fn problems(catalog: &Catalog) -> Vec<String> {
    let root = &catalog.root;
    let read = |path: &str| std::fs::read_to_string(root.join(path)).ok();
    let mut found = Vec::new();
    for lesson in &catalog.lessons {
        for path in [
            lesson.learner_file(),
            lesson.stub_file(),
            lesson.reference_file(),
        ] {
            if !root.join(&path).is_file() {
                found.push(format!(
                    "{path} is missing: {FILE} describes lesson {}",
                    lesson.number
                ));
            }
        }
        match read(&lesson.test_file()) {
            None => found.push(format!(
                "{} is missing: {FILE} describes lesson {}",
                lesson.test_file(),
                lesson.number
            )),
            Some(test) if !test.contains("kata::lesson!()") => found.push(format!(
                "{} does not call `kata::lesson!()`, which defines the lesson from {FILE}",
                lesson.test_file()
            )),
            Some(_) => {}
        }
        let Some(text) = read(&lesson.text()) else {
            found.push(format!(
                "{} is missing: {FILE} describes lesson {}",
                lesson.text(),
                lesson.number
            ));
            continue;
        };
        let heading = text.lines().find(|l| l.starts_with("# ")).unwrap_or("");
        if heading != lesson.heading() {
            found.push(format!(
                "{}: the first heading is {heading:?}, but {FILE} gives {:?}",
                lesson.text(),
                lesson.heading()
            ));
        }
        for mistake in &lesson.mistakes {
            let link = format!("../{}", mistake.path);
            if !text.contains(&format!("({link})")) {
                found.push(format!(
                    "{} does not link its mistake {} (add it to \"Classic mistakes\" as ({link}))",
                    lesson.text(),
                    mistake.path
                ));
            }
        }
        if !text.contains("(CONTRACT.md)") {
            found.push(format!(
                "{} does not link the contract (CONTRACT.md)",
                lesson.text()
            ));
        }
    }
    // Files that look like a lesson's but belong to none.
    for (dir, prefix, suffix) in [
        ("tests", "lesson_", ".rs"),
        ("lessons", "lesson_", ".md"),
        ("lessons", "lesson_", ".rs"),
        ("lessons/stubs", "lesson_", ".rs"),
        ("mistakes", "lesson_", ""),
        ("tests/alternatives", "lesson_", ""),
    ] {
        for entry in std::fs::read_dir(root.join(dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(number) = file
                .strip_prefix(prefix)
                .and_then(|rest| rest.strip_suffix(suffix))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if catalog.lesson(number).is_none() {
                found.push(format!(
                    "{dir}/{file} belongs to lesson {number}, which {FILE} does not describe"
                ));
            }
        }
    }
    match read("README.md") {
        None => found.push("README.md is missing".into()),
        Some(readme) => {
            for lesson in &catalog.lessons {
                let row = format!("| {:02} | {} |", lesson.number, lesson.title);
                if !readme.lines().any(|l| l.starts_with(&row)) {
                    found.push(format!(
                        "README.md: the lessons table has no row starting {row:?} (titles come from {FILE})"
                    ));
                }
            }
        }
    }
    found.extend(broken_links(root));
    found.extend(cited_but_missing(root));
    found
}

/// Markdown files named anywhere in the kata's own files that the kata does
/// not hold: a learner has only what is here. (`lesson_NN.md` stands for
/// every lesson's text.)
fn cited_but_missing(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    for dir in [
        "lessons",
        "solutions",
        "mistakes",
        "tests",
        "catalog",
        "harness",
        "runner",
        "bench",
        "scripts",
        ".ci",
    ] {
        walk(&root.join(dir), &mut files);
    }
    files.push(root.join("README.md"));
    files.push(root.join("Cargo.toml"));
    let held: Vec<String> = files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "md"))
        .filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned()))
        .collect();
    let mut found: Vec<String> = Vec::new();
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c))) {
            let Some(stem) = word.strip_suffix(".md") else {
                continue;
            };
            let name = format!("{}.md", stem.rsplit('/').next().unwrap_or(stem));
            let cited = format!("{shown}: cites {word},");
            if !stem.is_empty()
                && !stem.contains("_NN")
                && !held.contains(&name)
                && !found.iter().any(|f| f.starts_with(&cited))
            {
                found.push(format!(
                    "{shown}: cites {word}, which the kata does not hold"
                ));
            }
        }
    }
    found
}

/// Every file under `dir`, skipping build output.
fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "target") {
            continue;
        }
        if path.is_dir() {
            walk(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Relative links in the kata's markdown that point at no file: nothing in
/// the kata may cite a file it does not hold.
fn broken_links(root: &Path) -> Vec<String> {
    let mut pages = vec!["README.md".to_string()];
    pages.extend(
        std::fs::read_dir(root.join("lessons"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|f| f.ends_with(".md"))
            .map(|f| format!("lessons/{f}")),
    );
    pages.sort();
    let mut found = Vec::new();
    for page in pages {
        let Ok(text) = std::fs::read_to_string(root.join(&page)) else {
            continue;
        };
        let dir = Path::new(&page).parent().unwrap_or(Path::new(""));
        for target in link_targets(&text) {
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            if !root.join(dir).join(path).exists() {
                found.push(format!("{page}: the link ({target}) points at no file"));
            }
        }
    }
    found
}

/// The targets of `[text](target)` links, outside code blocks.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                targets.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    targets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_link_targets_outside_code() {
        let text = "see [a](CONTRACT.md) and [b](../y.rs#L3)\n```\n[c](nope)\n```\n`[d](z)`";
        assert_eq!(link_targets(text), vec!["CONTRACT.md", "../y.rs#L3", "z"]);
    }
}
