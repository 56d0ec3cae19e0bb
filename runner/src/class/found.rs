//! What a class folder holds, found without running anything: reports
//! (`*.json` from `cargo run -- report --json`), CI artifacts (zip archives
//! or the folders they unzip to, `report.json` inside, perhaps nested one
//! folder per learner) and learners' checkouts (folders with `lessons/`).
//! Symbolic links are never followed: a folder of downloads has none, and a
//! link could lead anywhere.

use std::path::{Path, PathBuf};

/// How deep folders are searched: `class/<learner>/<artifact>/report.json`
/// and more.
const DEPTH: usize = 8;

/// The largest archive read: an artifact of one report is a few kilobytes.
const MAX_ARCHIVE: u64 = 64 << 20;

/// One thing found in a class folder.
#[derive(Debug)]
pub enum Found {
    /// A report's text, and the learner's name its place suggests (used
    /// when the report names nobody).
    Report {
        origin: String,
        name: String,
        text: String,
    },
    /// A learner's checkout: its name and folder.
    Checkout { name: String, path: PathBuf },
    /// Something left out, and why: a sentence.
    LeftOut(String),
}

/// Everything in `path` (a folder, a report, or an archive), in name order.
pub fn search(path: &Path) -> Result<Vec<Found>, String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut found = Vec::new();
    if meta.is_dir() {
        walk(path, &[], 0, &mut found)?;
    } else {
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A lone `report.json` is named for its folder.
        let folders: Vec<String> = parent
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .into_iter()
            .collect();
        file(parent, &folders, &name, &mut found);
    }
    Ok(found)
}

/// A learner's name from where a report was found: the file's stem, unless
/// it is a name every artifact has (`report.json`, `artifacts.zip`), then
/// the nearest folder or archive around it that has a name of its own.
fn name_for(folders: &[String], file: &str) -> String {
    let generic = |name: &str| {
        ["report", "artifacts", "artifact"]
            .iter()
            .any(|g| name.eq_ignore_ascii_case(g))
    };
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    if generic(stem) {
        if let Some(folder) = folders.iter().rev().find(|f| !generic(f)) {
            return folder.clone();
        }
    }
    stem.to_string()
}

fn walk(
    dir: &Path,
    folders: &[String],
    depth: usize,
    found: &mut Vec<Found>,
) -> Result<(), String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            found.push(Found::LeftOut(format!(
                "left out {}: a symbolic link, which the class view does not follow",
                path.display()
            )));
        } else if meta.is_dir() {
            if name.starts_with('.') {
                continue;
            }
            let mut inner = folders.to_vec();
            inner.push(name.clone());
            if std::fs::symlink_metadata(path.join("lessons")).is_ok_and(|m| m.is_dir()) {
                found.push(Found::Checkout {
                    name: inner.join("/"),
                    path,
                });
            } else if depth + 1 < DEPTH {
                walk(&path, &inner, depth + 1, found)?;
            }
        } else if meta.is_file() {
            file(dir, folders, &name, found);
        }
    }
    Ok(())
}

/// A file of the folder: a report, an archive of reports, or nothing of ours.
fn file(dir: &Path, folders: &[String], name: &str, found: &mut Vec<Found>) {
    let path = dir.join(name);
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".json") {
        match std::fs::read(&path) {
            Ok(bytes) => found.push(Found::Report {
                origin: path.display().to_string(),
                name: name_for(folders, name),
                text: String::from_utf8_lossy(&bytes).into_owned(),
            }),
            Err(e) => found.push(Found::LeftOut(format!(
                "left out {}: cannot read it ({e})",
                path.display()
            ))),
        }
    } else if lower.ends_with(".zip") {
        archive(&path, folders, name, found);
    }
}

/// The reports in an archive: its `*.json` entries, each named for the
/// archive (or for its folder inside the archive).
fn archive(path: &Path, folders: &[String], name: &str, found: &mut Vec<Found>) {
    let left_out = |why: String| Found::LeftOut(format!("left out {}: {why}", path.display()));
    match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_ARCHIVE => {
            found.push(left_out(format!(
                "an archive of {} bytes, larger than an artifact of reports ({MAX_ARCHIVE})",
                m.len()
            )));
            return;
        }
        Err(e) => {
            found.push(left_out(format!("cannot read it ({e})")));
            return;
        }
        Ok(_) => {}
    }
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) => return found.push(left_out(format!("cannot read it ({e})"))),
    };
    let entries = match super::zip::entries(&bytes) {
        Ok(entries) => entries,
        Err(why) => return found.push(left_out(why)),
    };
    let stem = name.get(..name.len() - ".zip".len()).unwrap_or(name);
    let mut reports = 0;
    for entry in entries
        .iter()
        .filter(|e| e.name.to_ascii_lowercase().ends_with(".json"))
    {
        let mut inner = folders.to_vec();
        inner.push(stem.to_string());
        let (within, file) = entry.name.rsplit_once('/').unwrap_or(("", &entry.name));
        inner.extend(
            within
                .split('/')
                .filter(|s| !s.is_empty())
                .map(String::from),
        );
        match super::zip::read(&bytes, entry) {
            Ok(text) => {
                reports += 1;
                found.push(Found::Report {
                    origin: format!("{} ({})", path.display(), entry.name),
                    name: name_for(&inner, file),
                    text: String::from_utf8_lossy(&text).into_owned(),
                });
            }
            Err(why) => found.push(left_out(why)),
        }
    }
    if reports == 0 && entries.iter().all(|e| !e.name.ends_with(".json")) {
        found.push(left_out("an archive with no report (*.json) in it".into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(found: &[Found]) -> Vec<String> {
        found
            .iter()
            .map(|f| match f {
                Found::Report { name, .. } => format!("report {name}"),
                Found::Checkout { name, .. } => format!("checkout {name}"),
                Found::LeftOut(why) => format!("left out: {why}"),
            })
            .collect()
    }

    #[test]
    fn reports_archives_and_checkouts_are_found_and_named_by_place() {
        let dir = std::env::temp_dir().join(format!("kata-found-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let put = |path: &str, bytes: &[u8]| {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        };
        // GitHub's download of one artifact, as an archive and unzipped by
        // `gh run download -D class/bo`; GitLab's artifacts.zip in a folder
        // per learner; a report named for its learner; a checkout.
        put(
            "report-ada.zip",
            &super::super::zip::write(&[("report.json", b"{}")]),
        );
        put("bo/report.json", b"{}");
        put(
            "group/cy/artifacts.zip",
            &super::super::zip::write(&[("report.json", b"{}"), ("notes.txt", b"x")]),
        );
        put("dee.json", b"{}");
        put("eve/lessons/lesson_01.rs", b"");
        put("eve/report.json", b"{}");
        put("notes.zip", &super::super::zip::write(&[("a.txt", b"x")]));
        put("class.html", b"<html>");
        let found = search(&dir).unwrap();
        assert_eq!(
            names(&found),
            [
                "report bo".to_string(),
                "report dee".into(),
                // A checkout's folder is not searched for reports.
                "checkout eve".into(),
                "report cy".into(),
                format!(
                    "left out: left out {}: an archive with no report (*.json) in it",
                    dir.join("notes.zip").display()
                ),
                "report report-ada".into(),
            ]
        );
        // One report, or one archive, alone.
        assert_eq!(
            names(&search(&dir.join("bo/report.json")).unwrap()),
            ["report bo"]
        );
        assert_eq!(
            names(&search(&dir.join("report-ada.zip")).unwrap()),
            ["report report-ada"]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
