//! The pristine kata every checkout is laid over: a copy of the kata's
//! sources as they are now, kept in step by writing only what changed, so
//! that an unchanged file is not rebuilt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kata_runner::runner::Entry;
use kata_runner::state;

/// A running FNV-1a hash, for telling inputs apart.
pub(super) struct Digest(pub(super) u64);

impl Digest {
    pub(super) fn new() -> Digest {
        Digest(0xcbf2_9ce4_8422_2325)
    }

    pub(super) fn add(&mut self, bytes: &[u8]) -> &mut Digest {
        for b in bytes.iter().chain(&[0xff]) {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self
    }
}

pub(super) fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<(), String> {
    if std::fs::read(path).ok().as_deref() == Some(bytes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    std::fs::write(path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Makes `to` the kata's sources as they are now (a fix pulled since the
/// last class view counts), without build output, learners' state or git,
/// nor a class folder or a learner's checkout kept inside the kata (every
/// sandbox would see them), each lesson file as `lesson_file` gives it; only
/// changed files are written (so nothing unchanged is rebuilt) and files
/// gone from the kata go. Returns a hash of everything written, and makes
/// the empty folders the sandbox lays the build and the runner's memory
/// over.
pub(super) fn sync_kata(
    from: &Path,
    to: &Path,
    class: &Path,
    lessons: &[Entry],
    lesson_file: &dyn Fn(&Entry) -> Vec<u8>,
) -> Result<u64, String> {
    fn walk(
        from: &Path,
        to: &Path,
        relative: &str,
        skip: &Path,
        kept: &mut BTreeMap<String, Vec<u8>>,
    ) -> Result<(), String> {
        let entries =
            std::fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        for entry in entries.flatten() {
            let name = entry.file_name();
            let text = name.to_string_lossy();
            if [".git", "target", state::DIR, "book"]
                .iter()
                .any(|n| name == *n)
            {
                continue;
            }
            // The instructor's own lesson files and backups: written below.
            if relative == "lessons"
                && (text == "backups" || (text.starts_with("lesson_") && text.ends_with(".rs")))
            {
                continue;
            }
            let inner = if relative.is_empty() {
                text.to_string()
            } else {
                format!("{relative}/{text}")
            };
            let src = entry.path();
            // A link could name any file of the instructor's: left out.
            if entry.file_type().is_ok_and(|t| t.is_symlink()) {
                continue;
            }
            if src.is_dir() {
                // Another folder with lessons/ is a checkout, not the kata.
                let class = src.canonicalize().ok().as_deref() == Some(skip);
                if class || src.join("lessons").is_dir() {
                    continue;
                }
                walk(&src, &to.join(&name), &inner, skip, kept)?;
            } else {
                let bytes = std::fs::read(&src)
                    .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
                kept.insert(inner, bytes);
            }
        }
        Ok(())
    }
    let mut files = BTreeMap::new();
    let skip = class.canonicalize().unwrap_or_else(|_| class.to_path_buf());
    match tracked(from) {
        // A kata in git: its tracked files only, never what lies beside
        // them untracked (an `.env`, notes, another class's reports).
        Some(paths) => {
            for path in paths {
                let first = path.split('/').next().unwrap_or_default();
                let lesson_file = path
                    .strip_prefix("lessons/")
                    .is_some_and(|f| f.starts_with("lesson_") && f.ends_with(".rs"));
                if [".git", "target", state::DIR, "book"].contains(&first)
                    || lesson_file
                    || path.starts_with("lessons/backups/")
                {
                    continue;
                }
                let src = from.join(&path);
                if src.canonicalize().is_ok_and(|c| c.starts_with(&skip)) {
                    continue;
                }
                // A link (which could name any file of the instructor's) or
                // a file deleted since it was added is left out.
                if !std::fs::symlink_metadata(&src).is_ok_and(|m| m.is_file()) {
                    continue;
                }
                let bytes = std::fs::read(&src)
                    .map_err(|e| format!("cannot read {}: {e}", src.display()))?;
                files.insert(path, bytes);
            }
        }
        // A kata in git whose files git could not list (its owner not the
        // instructor, git missing): walking it would copy what git does
        // not track, so it is refused with a sentence.
        None if from.join(".git").exists() => {
            return Err(format!(
                "git could not list the files of the kata at {} (is git installed, and is the \
                 folder yours? `git -C {} ls-files` says why); the sandbox is shown only what \
                 git tracks",
                from.display(),
                from.display()
            ))
        }
        None => walk(from, to, "", &skip, &mut files)?,
    }
    for entry in lessons {
        files.insert(format!("lessons/{}.rs", entry.name), lesson_file(entry));
    }
    let mut digest = Digest::new();
    for (path, bytes) in &files {
        digest.add(path.as_bytes()).add(bytes);
        write_if_changed(&to.join(path), bytes)?;
    }
    prune(to, "", &files);
    for dir in ["target", state::DIR] {
        std::fs::create_dir_all(to.join(dir))
            .map_err(|e| format!("cannot make {}: {e}", to.join(dir).display()))?;
    }
    Ok(digest.0)
}

/// The files git tracks in the kata `dir` (relative paths), or `None`
/// when it is not a git checkout or git cannot say.
fn tracked(dir: &Path) -> Option<Vec<String>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-files", "-z", "--cached"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    // Only the kata's own repository: not one that holds it as a subfolder.
    let top = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--show-toplevel"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let top = PathBuf::from(String::from_utf8_lossy(&top.stdout).trim());
    let ours = top.canonicalize().ok() == dir.canonicalize().ok();
    (out.status.success() && ours).then(|| {
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    })
}

/// Removes the files under `dir` that are not `kept` (and the folders left
/// empty), but for the build and the runner's memory.
fn prune(dir: &Path, relative: &str, kept: &BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if relative.is_empty() && (name == "target" || name == state::DIR) {
            continue;
        }
        let inner = if relative.is_empty() {
            name
        } else {
            format!("{relative}/{name}")
        };
        let path = entry.path();
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => {
                prune(&path, &inner, kept);
                let _ = std::fs::remove_dir(&path);
            }
            Ok(_) if !kept.contains_key(&inner) => {
                let _ = std::fs::remove_file(&path);
            }
            _ => {}
        }
    }
}

/// Copies a build folder, keeping each file's time of change (cargo
/// decides what to rebuild from them) and permissions, and links as links.
pub(super) fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    let fail = |what: &str, path: &Path, e: std::io::Error| {
        format!("cannot {what} {}: {e}", path.display())
    };
    std::fs::create_dir_all(to).map_err(|e| fail("make", to, e))?;
    for entry in std::fs::read_dir(from)
        .map_err(|e| fail("read", from, e))?
        .flatten()
    {
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let meta = std::fs::symlink_metadata(&src).map_err(|e| fail("read", &src, e))?;
        if meta.file_type().is_symlink() {
            #[cfg(unix)]
            {
                let link = std::fs::read_link(&src).map_err(|e| fail("read", &src, e))?;
                std::os::unix::fs::symlink(link, &dst).map_err(|e| fail("write", &dst, e))?;
            }
        } else if meta.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst).map_err(|e| fail("copy", &src, e))?;
            if let Ok(modified) = meta.modified() {
                std::fs::File::options()
                    .write(true)
                    .open(&dst)
                    .and_then(|f| f.set_modified(modified))
                    .map_err(|e| fail("write", &dst, e))?;
            }
        }
    }
    Ok(())
}
