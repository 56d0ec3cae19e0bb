//! Everything that must agree with the catalog, checked: each problem is a
//! sentence that names the file to fix.

use std::path::Path;

use crate::{Catalog, Kind, FILE, GUIDES};

/// The kata's pages outside the book: the front door and the pages it leads
/// to. Every relative link of each must point at a file.
pub const PAGES: [&str; 4] = [
    "README.md",
    "CONTRIBUTING.md",
    "ARCHITECTURE.md",
    "bench/README.md",
];

/// The pages that list the kinds of subject: each must name every kind of
/// the catalog (the others point at this list).
pub const KIND_LISTS: [&str; 1] = ["ARCHITECTURE.md"];

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
        if !runs_its_own_main(read("Cargo.toml").as_deref().unwrap_or(""), &lesson.name()) {
            found.push(format!(
                "Cargo.toml: the test target {name} needs `[[test]]` with `name = \"{name}\"` and \
                 `harness = false`: its checks are trials its own `main` runs (kata::trial)",
                name = lesson.name()
            ));
        }
        let Some(text) = read(&lesson.text()) else {
            found.push(format!(
                "{} is missing: {FILE} describes lesson {}",
                lesson.text(),
                lesson.number
            ));
            continue;
        };
        found.extend(wrong_heading(
            &lesson.text(),
            &text,
            &lesson.heading(),
            FILE,
        ));
        // Every mistake is linked from the lesson's appendix of mistakes
        // (the hand-written list its book page includes), or from the text.
        let list_file = crate::mistakes_list_file(lesson);
        let list = read(&list_file);
        if list.is_none() && !lesson.mistakes.is_empty() {
            found.push(format!(
                "{list_file} is missing: the book's page of lesson {}'s mistakes includes it \
                 (every mistake in a line, linked to its diff)",
                lesson.number
            ));
        }
        for mistake in &lesson.mistakes {
            let link = format!("../../{}", mistake.path);
            let linked = list
                .as_deref()
                .is_some_and(|l| l.contains(&format!("({link})")))
                || text.contains(&format!("(../{})", mistake.path));
            if !linked {
                found.push(format!(
                    "{list_file} does not link the mistake {} (add a line for it as ({link}))",
                    mistake.path
                ));
            }
        }
        let test_link = format!("(../{})", lesson.test_file());
        if !text.contains(&test_link) {
            found.push(format!(
                "{} does not link its checks {} (as {test_link})",
                lesson.text(),
                lesson.test_file()
            ));
        }
        if !text.contains("(CONTRACT.md)") {
            found.push(format!(
                "{} does not link the contract (CONTRACT.md)",
                lesson.text()
            ));
        }
    }
    // A page that names a mistake as a whole file names one that is not
    // kept: the file is its diff (the build writes the whole one under
    // target/).
    for page in ["README.md", "CONTRIBUTING.md", "ARCHITECTURE.md"]
        .into_iter()
        .map(String::from)
        .chain(catalog.lessons.iter().map(|l| l.text()))
    {
        let text = read(&page).unwrap_or_default();
        for (i, _) in text.match_indices("mistakes/lesson_") {
            let after = &text[i..];
            let path: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "_/.".contains(*c))
                .collect();
            let path = path.trim_end_matches('.');
            if path.ends_with(".rs") && !text[..i].ends_with("target/") {
                found.push(format!(
                    "{page}: cites {path}, which the kata does not hold: a mistake is its .diff \
                     (the build writes it whole into target/{path})"
                ));
            }
        }
    }
    // A mistake is its explanation and a diff: a whole copy of the reference
    // would go stale unseen when the reference changes.
    for lesson in &catalog.lessons {
        for mistake in &lesson.mistakes {
            if let Err(e) = catalog.mistake_source(lesson, mistake) {
                found.push(e);
            }
        }
        let dir = format!("mistakes/{}", lesson.name());
        for entry in std::fs::read_dir(root.join(&dir))
            .into_iter()
            .flatten()
            .flatten()
        {
            let file = entry.file_name().to_string_lossy().into_owned();
            if !file.ends_with(".diff") {
                found.push(format!(
                    "{dir}/{file} is not a mistake: a mistake is a `.diff` against {} \
                     (`cargo run -p kata-catalog --bin mistake -- save {} <name> {dir}/{file}` \
                     writes it from a whole file)",
                    lesson.reference_file(),
                    lesson.number
                ));
            }
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
    for (page, title) in GUIDES {
        let path = format!("lessons/{page}");
        match read(&path) {
            None => found.push(format!(
                "{path} is missing: the book's summary lists it (GUIDES in catalog/src/lib.rs)"
            )),
            Some(text) => found.extend(wrong_heading(
                &path,
                &text,
                &format!("# {title}"),
                "GUIDES in catalog/src/lib.rs",
            )),
        }
    }
    for page in PAGES.into_iter().filter(|p| *p != "README.md") {
        if read(page).is_none() {
            found.push(format!(
                "{page} is missing: it is one of the kata's pages (PAGES in catalog/src/problems.rs)"
            ));
        }
    }
    for page in KIND_LISTS {
        if let Some(text) = read(page) {
            found.extend(unlisted_kinds(page, &text));
        }
    }
    let summary = crate::summary(catalog);
    if read("lessons/SUMMARY.md").as_deref() != Some(summary.as_str()) {
        found.push(format!(
            "lessons/SUMMARY.md is not the book's summary of {FILE}; write it with \
             `cargo run -p kata-catalog --bin book-summary -- --write`"
        ));
    }
    for lesson in &catalog.lessons {
        let page = crate::mistakes_page_file(lesson);
        if read(&page).as_deref() != Some(crate::mistakes_page(lesson).as_str()) {
            found.push(format!(
                "{page} is not the book's page of lesson {}'s mistakes; write it with \
                 `cargo run -p kata-catalog --bin book-summary -- --write`",
                lesson.number
            ));
        }
    }
    found.extend(broken_links(root));
    found.extend(cited_but_missing(root));
    found.extend(stale_drawings(root));
    found.extend(stale_milestone_counts(catalog));
    found
}

/// The pages that say which lessons are cut into milestones, or what the
/// whole kata is worth in points: each must say what the catalog says.
pub const MILESTONE_PAGES: [&str; 4] = [
    "README.md",
    "lessons/instructors.md",
    "lessons/runner.md",
    "class-view/src/points.rs",
];

/// Whether the manifest declares the test target `name` with `harness =
/// false` (a `[[test]]` table naming it, and saying so before the next
/// table).
fn runs_its_own_main(manifest: &str, name: &str) -> bool {
    manifest.split("[[test]]").skip(1).any(|table| {
        let table = table.split("\n[").next().unwrap_or(table);
        let said = |key: &str, value: &str| {
            table.lines().any(|l| {
                l.split_once('=')
                    .is_some_and(|(k, v)| k.trim() == key && v.trim() == value)
            })
        };
        said("name", &format!("{name:?}")) && said("harness", "false")
    })
}

/// Sentences of [`MILESTONE_PAGES`] whose lessons with milestones (the
/// two-digit numbers of a sentence saying "cut into milestones") or whose
/// points for the whole kata (one per milestone, one per lesson without)
/// are not the catalog's.
fn stale_milestone_counts(catalog: &Catalog) -> Vec<String> {
    let cut: Vec<String> = catalog
        .lessons
        .iter()
        .filter(|l| !l.milestones.is_empty())
        .map(|l| format!("{:02}", l.number))
        .collect();
    let points: usize = catalog
        .lessons
        .iter()
        .map(|l| l.milestones.len().max(1))
        .sum();
    MILESTONE_PAGES
        .into_iter()
        .filter_map(|page| {
            let text = std::fs::read_to_string(catalog.root.join(page)).ok()?;
            Some(wrong_milestone_counts(page, &text, &cut, points))
        })
        .flatten()
        .collect()
}

/// What `page` (its `text`) says of the lessons with milestones or of the
/// kata's points that is not `cut` (the lessons with milestones, as `07`)
/// and `points`.
fn wrong_milestone_counts(page: &str, text: &str, cut: &[String], points: usize) -> Vec<String> {
    let mut found = Vec::new();
    for (i, _) in text.match_indices("cut into milestones") {
        let start = text[..i].rfind('.').map_or(0, |s| s + 1);
        let end = i + text[i..].find([';', '.', ':']).unwrap_or(text.len() - i);
        let named = two_digit_numbers(&text[start..end]);
        if named != cut {
            found.push(format!(
                "{page}: says lessons {} are cut into milestones, where {FILE} cuts {}",
                named.join(", "),
                cut.join(", ")
            ));
        }
    }
    for (marker, before) in [
        (" points for the whole kata", true),
        ("out of the same ", false),
    ] {
        for (i, _) in text.match_indices(marker) {
            let said = if before {
                text[..i].rsplit(|c: char| !c.is_ascii_digit()).next()
            } else {
                text[i + marker.len()..]
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
            };
            let said = said.filter(|n| !n.is_empty());
            if said.is_some_and(|n| n.parse::<usize>().ok() != Some(points)) {
                found.push(format!(
                    "{page}: says the kata is worth {} points, where {FILE} makes it {points} \
                     (a point per milestone, one per lesson without milestones)",
                    said.unwrap_or_default()
                ));
            }
        }
    }
    found
}

/// The numbers of exactly two digits in `text`, in order (`07`, `10`).
fn two_digit_numbers(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|n| n.len() == 2)
        .map(String::from)
        .collect()
}

/// `page`'s first heading, if it is not `heading` (which `source` gives).
fn wrong_heading(page: &str, text: &str, heading: &str, source: &str) -> Option<String> {
    let first = text.lines().find(|l| l.starts_with("# ")).unwrap_or("");
    (first != heading)
        .then(|| format!("{page}: the first heading is {first:?}, but {source} gives {heading:?}"))
}

/// Every kind of the catalog that `page`'s list of kinds leaves out. A list
/// names a kind by its id in backquotes at the start of an item
/// (`` - `limiter`: … ``) or of a table row (`` | `limiter` | … ``).
fn unlisted_kinds(page: &str, text: &str) -> Vec<String> {
    Kind::ALL
        .into_iter()
        .filter(|kind| {
            let item = format!("- `{}`", kind.id());
            let row = format!("| `{}` |", kind.id());
            !text
                .lines()
                .map(str::trim_start)
                .any(|l| l.starts_with(&item) || l.starts_with(&row))
        })
        .map(|kind| {
            format!(
                "{page}: its list of kinds leaves out `{id}`, a kind of the catalog \
                 (Kind::ALL in catalog/src/lib.rs); add it as an item \"- `{id}`: …\"",
                id = kind.id()
            )
        })
        .collect()
}

/// A drawing in a lesson text marked `<!-- snapshot: lesson_01_name -->`
/// must be, line for line, the snapshot `tests/snapshots/lesson_01_name.snap`
/// that the tests hold the learner's limiter to.
fn stale_drawings(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let pages = std::fs::read_dir(root.join("lessons"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|f| f.ends_with(".md"));
    for page in pages {
        let Ok(text) = std::fs::read_to_string(root.join("lessons").join(&page)) else {
            continue;
        };
        let mut rest = text.as_str();
        while let Some(i) = rest.find("<!-- snapshot: ") {
            rest = &rest[i + "<!-- snapshot: ".len()..];
            let name = rest.split(" -->").next().unwrap_or("").trim().to_string();
            let drawing = rest
                .split_once("```\n")
                .and_then(|(_, after)| after.split_once("\n```"))
                .map(|(body, _)| body.trim_end().to_string())
                .unwrap_or_default();
            let file = format!("tests/snapshots/{name}.snap");
            let snapshot = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            let body = snapshot.splitn(3, "---\n").nth(2).unwrap_or("").trim_end();
            if body.is_empty() {
                found.push(format!(
                    "lessons/{page}: the drawing marked {name} has no snapshot {file}"
                ));
            } else if body != drawing {
                found.push(format!(
                    "lessons/{page}: the drawing marked {name} is not the snapshot {file}; copy the snapshot's drawing into the text"
                ));
            }
        }
    }
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
        "src",
        "runner",
        "class-view",
        "bench",
        "scripts",
        "demo",
        ".ci",
    ] {
        walk(&root.join(dir), &mut files);
    }
    files.extend(
        PAGES
            .into_iter()
            .filter(|p| !p.contains('/'))
            .map(|p| root.join(p)),
    );
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
pub(crate) fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
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

/// Links in the built book (`book/`, from `mdbook build`) that point at no
/// file: every `href` and `src` of every page, relative to the page.
pub fn book_problems(root: &Path) -> Vec<String> {
    let book = root.join("book");
    let mut pages = Vec::new();
    walk(&book, &mut pages);
    pages.retain(|p| p.extension().is_some_and(|e| e == "html"));
    if pages.is_empty() {
        return vec![format!(
            "{} holds no page: run `mdbook build` first",
            book.display()
        )];
    }
    let mut found = Vec::new();
    for page in pages {
        let Ok(html) = std::fs::read_to_string(&page) else {
            continue;
        };
        let dir = page.parent().unwrap_or(&book);
        for attr in ["href=\"", "src=\""] {
            for (i, _) in html.match_indices(attr) {
                let rest = &html[i + attr.len()..];
                let target = &rest[..rest.find('"').unwrap_or(0)];
                let path = target.split(['#', '?']).next().unwrap_or("");
                if path.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with("javascript:")
                    || target.starts_with("data:")
                    || target.starts_with('{')
                {
                    continue;
                }
                if !dir.join(path).exists() {
                    let shown = page
                        .strip_prefix(root)
                        .unwrap_or(&page)
                        .display()
                        .to_string();
                    let problem = format!("{shown}: the link {target} points at no file");
                    if !found.contains(&problem) {
                        found.push(problem);
                    }
                }
            }
        }
    }
    found
}

/// Relative links in the kata's markdown (the [`PAGES`] and the book's
/// pages) that point at no file: nothing in the kata may cite a file it does
/// not hold.
fn broken_links(root: &Path) -> Vec<String> {
    let mut book: Vec<String> = std::fs::read_dir(root.join("lessons"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|f| f.ends_with(".md"))
        .map(|f| format!("lessons/{f}"))
        .collect();
    book.sort();
    let mut found = Vec::new();
    for page in PAGES.iter().map(|p| p.to_string()).chain(book) {
        if let Ok(text) = std::fs::read_to_string(root.join(&page)) {
            found.extend(links_to_nowhere(root, &page, &text));
        }
    }
    found
}

/// The relative links of `text`, the page `page` (a path from the kata's
/// root), that point at no file.
fn links_to_nowhere(root: &Path, page: &str, text: &str) -> Vec<String> {
    let dir = Path::new(page).parent().unwrap_or(Path::new(""));
    link_targets(text)
        .into_iter()
        .filter(|target| {
            let path = target.split('#').next().unwrap_or("");
            let elsewhere = path.is_empty() || path.contains("://") || path.starts_with("mailto:");
            !elsewhere && !root.join(dir).join(path).exists()
        })
        .map(|target| format!("{page}: the link ({target}) points at no file"))
        .collect()
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
mod tests;
