//! What a class folder holds, found without running anything: reports
//! (`*.json` from `cargo run -- report --json`), CI artifacts (zip archives
//! or the folders they unzip to, `report.json` inside, perhaps nested one
//! folder per learner) and learners' checkouts (folders with `lessons/`).
//! Symbolic links are never followed: a folder of downloads has none, and a
//! link could lead anywhere. Each thing is handed over as it is found, so
//! that no more than one report's text is held at once, and what archives
//! may inflate is capped, each archive and the whole folder ([`Caps`]).
//!
//! A report is named for where the instructor got it ([`name_for`]), never
//! by what it says of itself nor by the paths inside an archive: those the
//! learner wrote.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::zip;

/// How deep folders are searched: `class/<learner>/<artifact>/report.json`
/// and more.
const DEPTH: usize = 8;

/// The largest archive read: an artifact of one report is a few kilobytes.
const MAX_ARCHIVE: u64 = 64 << 20;

/// How many bytes the reports of one archive may inflate to, together: an
/// artifact holds one report of a few kilobytes.
pub const MAX_INFLATED_ARCHIVE: u64 = 64 << 20;

/// How many bytes the archives of one class folder may inflate to, together:
/// hundreds of learners' artifacts are a few megabytes.
pub const MAX_INFLATED_FOLDER: u64 = 1 << 30;

/// How much inflating a search may do.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// Bytes inflated from one archive.
    pub archive: u64,
    /// Bytes inflated from every archive of the folder.
    pub folder: u64,
}

impl Caps {
    pub const DEFAULT: Caps = Caps {
        archive: MAX_INFLATED_ARCHIVE,
        folder: MAX_INFLATED_FOLDER,
    };
}

/// One thing found in a class folder.
#[derive(Debug)]
pub enum Found {
    /// A report's text, the learner's name its place gives, and when the
    /// file that holds it (the report, or its archive) was last written:
    /// when it was downloaded.
    Report {
        origin: String,
        name: String,
        modified: Option<SystemTime>,
        text: String,
    },
    /// A learner's checkout: its name and folder.
    Checkout { name: String, path: PathBuf },
    /// Something left out, and why: a sentence.
    LeftOut(String),
}

/// A search under way: its caps, what was inflated so far, and where each
/// thing found goes.
struct Search<'v> {
    caps: Caps,
    inflated: u64,
    /// The name of the folder searched, for a report with no name of its own
    /// below it (`artifacts.zip` in `class/ada/`).
    outer: Option<String>,
    visit: &'v mut dyn FnMut(Found),
}

/// Everything in `path` (a folder, a report, or an archive), in name order,
/// each handed to `visit` as it is found, within [`Caps::DEFAULT`].
pub fn search(path: &Path, visit: impl FnMut(Found)) -> Result<(), String> {
    search_within(path, Caps::DEFAULT, visit)
}

/// [`search`] within other caps.
pub fn search_within(path: &Path, caps: Caps, mut visit: impl FnMut(Found)) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut search = Search {
        caps,
        inflated: 0,
        outer: None,
        visit: &mut visit,
    };
    if meta.is_dir() {
        search.outer = path
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()));
        search.walk(path, &[], 0)?;
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
        search.file(parent, &folders, &name);
    }
    Ok(())
}

/// A learner's name from where a report was found, `file` (a report, or
/// the archive that holds it) in `folders`: the file's name, unless it is a
/// name every artifact has (`report.json`, `artifacts.zip`), then the
/// nearest folder around it that has a name of its own. Each name is taken
/// as a download gives it, less what the download added: the `report-`
/// before the repository's name in the GitHub workflow's artifacts, and a
/// browser's ` (1)` for a second copy. `class/report-ada.zip`,
/// `class/ada/report.json`, `class/ada/artifacts (1).zip` and
/// `class/monday/ada.json` are ada's.
fn name_for(outer: Option<&str>, folders: &[String], file: &str) -> String {
    let generic = |name: &str| {
        name.is_empty()
            || ["report", "artifacts", "artifact"]
                .iter()
                .any(|g| name.eq_ignore_ascii_case(g))
    };
    let stem = file.rsplit_once('.').map_or(file, |(stem, _)| stem);
    let around = folders.iter().map(String::as_str).rev().chain(outer);
    std::iter::once(stem)
        .chain(around)
        .map(bare)
        .find(|name| !generic(name))
        .unwrap_or_else(|| bare(stem))
        .to_string()
}

/// A name less what a download added to it: a browser's ` (1)` or `(2)`
/// after a second copy, and a `report-` before it.
fn bare(name: &str) -> &str {
    let mut name = name.trim();
    if let Some((before, count)) = name.strip_suffix(')').and_then(|n| n.rsplit_once('(')) {
        let before = before.trim_end();
        if !before.is_empty() && !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit()) {
            name = before;
        }
    }
    match name.get(.."report-".len()) {
        Some(prefix) if prefix.eq_ignore_ascii_case("report-") && name.len() > prefix.len() => {
            &name[prefix.len()..]
        }
        _ => name,
    }
}

impl Search<'_> {
    fn walk(&mut self, dir: &Path, folders: &[String], depth: usize) -> Result<(), String> {
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
                (self.visit)(Found::LeftOut(format!(
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
                    (self.visit)(Found::Checkout {
                        name: inner.join("/"),
                        path,
                    });
                } else if depth + 1 < DEPTH {
                    self.walk(&path, &inner, depth + 1)?;
                }
            } else if meta.is_file() {
                self.file(dir, folders, &name);
            }
        }
        Ok(())
    }

    /// A file of the folder: a report, an archive of reports, or nothing of
    /// ours.
    fn file(&mut self, dir: &Path, folders: &[String], name: &str) {
        let path = dir.join(name);
        let lower = name.to_ascii_lowercase();
        if lower.ends_with(".json") {
            let found = match read_report(&path) {
                Ok((bytes, modified)) => Found::Report {
                    origin: path.display().to_string(),
                    name: name_for(self.outer.as_deref(), folders, name),
                    modified,
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                },
                Err(why) => Found::LeftOut(format!("left out {}: {why}", path.display())),
            };
            (self.visit)(found);
        } else if lower.ends_with(".zip") {
            self.archive(&path, folders, name);
        }
    }

    /// The reports in an archive: its `*.json` entries, each named for the
    /// archive (never for the paths inside it, which the learner's CI
    /// wrote), read one at a time within the caps.
    fn archive(&mut self, path: &Path, folders: &[String], name: &str) {
        let left_out = |why: String| Found::LeftOut(format!("left out {}: {why}", path.display()));
        let modified = match std::fs::metadata(path) {
            Ok(m) if m.len() > MAX_ARCHIVE => {
                return (self.visit)(left_out(format!(
                    "an archive of {} bytes, larger than an artifact of reports ({MAX_ARCHIVE})",
                    m.len()
                )));
            }
            Err(e) => return (self.visit)(left_out(format!("cannot read it ({e})"))),
            Ok(m) => m.modified().ok(),
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) => return (self.visit)(left_out(format!("cannot read it ({e})"))),
        };
        let entries = match zip::entries(&bytes) {
            Ok(entries) => entries,
            Err(why) => return (self.visit)(left_out(why)),
        };
        let reports: Vec<&zip::Entry> = entries
            .iter()
            .filter(|e| e.name.to_ascii_lowercase().ends_with(".json"))
            .collect();
        if reports.is_empty() {
            return (self.visit)(left_out("an archive with no report (*.json) in it".into()));
        }
        // What it would inflate, as it declares (no entry inflates past
        // that), before anything is.
        let declared: u64 = reports.iter().map(|e| e.size() as u64).sum();
        if declared > self.caps.archive {
            return (self.visit)(left_out(format!(
                "its reports would inflate to {declared} bytes, more than an artifact of \
                 reports may ({} bytes; a report is a few kilobytes): not read",
                self.caps.archive
            )));
        }
        if self.inflated + declared > self.caps.folder {
            return (self.visit)(left_out(format!(
                "its reports would inflate to {declared} bytes, past what the archives of one \
                 class folder may inflate together ({} bytes, {} of them taken already): not read",
                self.caps.folder, self.inflated
            )));
        }
        self.inflated += declared;
        let learner = name_for(self.outer.as_deref(), folders, name);
        for entry in reports {
            let found = match zip::read(&bytes, entry) {
                Ok(text) => Found::Report {
                    origin: format!("{} ({})", path.display(), entry.name),
                    name: learner.clone(),
                    modified,
                    text: String::from_utf8_lossy(&text).into_owned(),
                },
                Err(why) => left_out(why),
            };
            (self.visit)(found);
        }
    }
}

/// A report file's bytes, if it is no larger than a report ever is (an entry
/// of an archive may hold no more, [`zip::MAX_ENTRY`]), and when it was last
/// written; an error is why not.
fn read_report(path: &Path) -> Result<(Vec<u8>, Option<SystemTime>), String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it ({e})"))?;
    let too_big = |size: u64| {
        format!(
            "a file of {size} bytes, more than a report ever holds ({}): not read",
            zip::MAX_ENTRY
        )
    };
    let meta = file.metadata().ok();
    let size = meta.as_ref().map_or(0, |m| m.len());
    if size > zip::MAX_ENTRY as u64 {
        return Err(too_big(size));
    }
    // Read no more than the cap, should it grow meanwhile.
    let mut bytes = Vec::new();
    file.take(zip::MAX_ENTRY as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it ({e})"))?;
    if bytes.len() > zip::MAX_ENTRY {
        return Err(too_big(bytes.len() as u64));
    }
    Ok((bytes, meta.and_then(|m| m.modified().ok())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(path: &Path, caps: Caps) -> Vec<Found> {
        let mut found = Vec::new();
        search_within(path, caps, |f| found.push(f)).unwrap();
        found
    }

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
        // `gh run download -D class/bo`, with `-p` (a folder per artifact)
        // or `-n` (none); GitLab's artifacts.zip in a folder per learner, a
        // second time as a browser names it; reports named for their
        // learners, in a folder of a day; a checkout; an archive whose
        // entries name someone else, and an archive named like every other.
        put(
            "report-ada.zip",
            &super::super::zip::write(&[("report.json", b"{}")]),
        );
        put("bo/report.json", b"{}");
        put("bo/report-bo/report.json", b"{}");
        put(
            "group/cy/artifacts.zip",
            &super::super::zip::write(&[("report.json", b"{}"), ("notes.txt", b"x")]),
        );
        put(
            "group/cy/artifacts (1).zip",
            &super::super::zip::write(&[("report.json", b"{}")]),
        );
        put("dee.json", b"{}");
        put("monday/dee.json", b"{}");
        put("eve/lessons/lesson_01.rs", b"");
        put("eve/report.json", b"{}");
        put(
            "report-fay.zip",
            &super::super::zip::write(&[("x.txt", b""), ("ada/ada.json", b"{}")]),
        );
        put("notes.zip", &super::super::zip::write(&[("a.txt", b"x")]));
        put(
            "artifacts.zip",
            &super::super::zip::write(&[("report.json", b"{}")]),
        );
        put("class.html", b"<html>");
        let found = all(&dir, Caps::DEFAULT);
        let folder = dir.file_name().unwrap().to_string_lossy();
        assert_eq!(
            names(&found),
            [
                format!("report {folder}"),
                "report bo".into(),
                "report bo".into(),
                "report dee".into(),
                // A checkout's folder is not searched for reports.
                "checkout eve".into(),
                "report cy".into(),
                "report cy".into(),
                "report dee".into(),
                format!(
                    "left out: left out {}: an archive with no report (*.json) in it",
                    dir.join("notes.zip").display()
                ),
                "report ada".into(),
                "report fay".into(),
            ]
        );
        // One report, or one archive, alone.
        assert_eq!(
            names(&all(&dir.join("bo/report.json"), Caps::DEFAULT)),
            ["report bo"]
        );
        assert_eq!(
            names(&all(&dir.join("report-ada.zip"), Caps::DEFAULT)),
            ["report ada"]
        );
        assert_eq!(bare("report-ada (2)"), "ada");
        assert_eq!(bare("ada(12)"), "ada");
        assert_eq!(bare("(1)"), "(1)");
        assert_eq!(bare("report-"), "report-");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn what_archives_inflate_is_capped_each_and_all_together() {
        let dir = std::env::temp_dir().join(format!("kata-caps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let report = [b'{'; 400];
        // 800 bytes each: the first three fit in 2,500 together, the fourth
        // does not; 1,200 bytes in one archive are more than one may hold.
        for name in ["a", "b", "c", "d"] {
            let zip = zip::write(&[("x.txt", b"x"), ("1.json", &report), ("2.json", &report)]);
            std::fs::write(dir.join(format!("{name}.zip")), zip).unwrap();
        }
        let three = [&report[..]; 3].concat();
        std::fs::write(
            dir.join("e.zip"),
            zip::write(&[("x.txt", b"x"), ("big.json", &three)]),
        )
        .unwrap();
        // A plain report file larger than an entry may be.
        let huge = std::fs::File::create(dir.join("huge.json")).unwrap();
        huge.set_len(zip::MAX_ENTRY as u64 + 1).unwrap();
        drop(huge);
        let found = all(
            &dir,
            Caps {
                archive: 1_000,
                folder: 2_500,
            },
        );
        let shown = names(&found);
        let left_out = |file: &str, why: &str| {
            format!("left out: left out {}: {why}", dir.join(file).display())
        };
        assert_eq!(
            shown,
            [
                "report a".to_string(),
                "report a".into(),
                "report b".into(),
                "report b".into(),
                "report c".into(),
                "report c".into(),
                left_out(
                    "d.zip",
                    "its reports would inflate to 800 bytes, past what the archives of one class \
                     folder may inflate together (2500 bytes, 2400 of them taken already): not read"
                ),
                left_out(
                    "e.zip",
                    "its reports would inflate to 1200 bytes, more than an artifact of reports \
                     may (1000 bytes; a report is a few kilobytes): not read"
                ),
                left_out(
                    "huge.json",
                    "a file of 16777217 bytes, more than a report ever holds (16777216): not read"
                ),
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
