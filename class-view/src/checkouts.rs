//! Learners' checkouts, run: each learner's lesson files, copied out of
//! their checkout (which is never written), go through the kata's report
//! (`kata-class --report-of NAME`, what `report --json` prints) in a
//! sandbox ([`super::sandbox`]), or, only when the instructor says so
//! (`--run-untrusted-code-as-me`), without one.
//!
//! In `target/class/`:
//!
//! - `kata/`: the instructor's kata as it is now, with every lesson file
//!   its stub, the same for every learner (read-only in the sandbox);
//! - `base/`: a build of it, made in the sandbox, from which every
//!   learner's build starts (a copy, so that no learner's code writes
//!   what another's build uses);
//! - `learners/<name>/`: a learner's lesson files and hints as copied, the
//!   runner's memory of their outcomes (`.kata/`), their last report and
//!   what it was made from (a learner whose files did not change is not
//!   run again), and, during their run, their build and scratch folders;
//! - `unsandboxed/`: the kata that runs checkouts without a sandbox.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::pristine::{copy_tree, sync_kata, write_if_changed, Digest};
use super::sandbox::{self, Bubblewrap, Layout, Limits, Ran};
use super::Options;
use kata_runner::report::{self, Report};
use kata_runner::runner::Entry;
use kata_runner::state;

/// The largest lesson file or hints file copied out of a checkout.
const MAX_FILE: u64 = 1 << 20;

/// What running the checkouts gave: reports by learner, the checkouts not
/// run with why, notes on files left out, and how they ran (a sentence).
#[derive(Default)]
pub struct Outcome {
    pub reports: Vec<(String, Report)>,
    pub not_run: Vec<(String, String)>,
    pub left_out: Vec<String>,
    pub how: String,
}

/// Runs every checkout (name, folder) of the class `folder` as `options`
/// say; `progress` is told what happens next.
pub fn run(
    kata: &Path,
    lessons: &[Entry],
    folder: &Path,
    checkouts: &[(String, PathBuf)],
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Outcome, String> {
    let scratch = kata.join("target").join("class");
    let limits = &options.limits;
    let mut outcome = Outcome::default();
    let bwrap = match sandbox::probe(&scratch) {
        // A sandbox that works is used, the flag or not.
        Ok(bwrap) => Some(bwrap),
        Err(_) if options.unsandboxed => None,
        Err(why) => {
            outcome.how = format!("not run, for there is no sandbox here: {why}");
            for (name, _) in checkouts {
                outcome.not_run.push((
                    name.clone(),
                    "no sandbox (see above); to run it anyway, with your rights, add \
                         --run-untrusted-code-as-me"
                        .into(),
                ));
            }
            return Ok(outcome);
        }
    };
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the class view's own program: {e}"))?;
    let Some(bwrap) = bwrap else {
        outcome.how = format!(
            "ran WITHOUT a sandbox, with your rights (--run-untrusted-code-as-me): their code \
             could read, change and send anything you can; each process held to {} MiB, \
             each learner's run to {} s",
            limits.memory_mib,
            limits.time.as_secs()
        );
        let unsandboxed = Unsandboxed {
            kata,
            lessons,
            folder,
            scratch: &scratch,
            exe: &exe,
            limits,
        };
        for (name, checkout) in checkouts {
            progress(&format!("running the lessons of {name}, unsandboxed"));
            match unsandboxed.run(name, checkout, &mut outcome) {
                Ok(reported) => outcome.reports.push((name.clone(), reported)),
                Err(why) => outcome.not_run.push((name.clone(), why)),
            }
        }
        return Ok(outcome);
    };
    outcome.how = format!(
        "ran in a sandbox (bubblewrap): no network but its own loopback, the kata read-only, \
         its own scratch folder, {}, each process held to {} MiB, each learner's run to {} s{}",
        bwrap.forbids(),
        limits.memory_mib,
        limits.time.as_secs(),
        if options.unsandboxed {
            " (--run-untrusted-code-as-me was not needed: a sandbox works here)"
        } else {
            ""
        }
    );
    let pristine = scratch.join("kata");
    let stubs = |entry: &Entry| std::fs::read(entry.stub(kata)).unwrap_or_default();
    let kata_digest = sync_kata(kata, &pristine, folder, lessons, &stubs)?;
    let mut base: Option<Result<(), String>> = None;
    for (name, checkout) in checkouts {
        let dir = scratch.join("learners").join(slug(name));
        let prepared = match prepare(kata, lessons, &dir, checkout, name, &mut outcome.left_out) {
            Ok(prepared) => prepared,
            Err(why) => {
                outcome.not_run.push((name.clone(), why));
                continue;
            }
        };
        let mut digest = Digest::new();
        digest.add(&kata_digest.to_le_bytes()).add(name.as_bytes());
        digest.add(format!("{limits:?}").as_bytes());
        digest.add(format!("{:?}", sandbox::environment()).as_bytes());
        if let Ok(meta) = std::fs::metadata(&exe) {
            digest.add(format!("{} {:?}", meta.len(), meta.modified().ok()).as_bytes());
        }
        for (file, inside) in &prepared.files {
            digest
                .add(inside.as_bytes())
                .add(&std::fs::read(file).unwrap_or_default());
        }
        digest.add(&prepared.hints);
        digest.add(commit_of(checkout).unwrap_or_default().as_bytes());
        let inputs = format!("{:016x}", digest.0);
        let kept = dir.join("report.json");
        if std::fs::read_to_string(dir.join("inputs")).ok().as_deref() == Some(inputs.as_str()) {
            if let Some(reported) = std::fs::read_to_string(&kept)
                .ok()
                .and_then(|text| super::parse(&text).ok())
            {
                outcome.reports.push((name.clone(), reported));
                continue;
            }
        }
        // The pristine kata is built once, the first time a learner needs it.
        let built = base.get_or_insert_with(|| {
            progress("building the kata in the sandbox (the first time: minutes)");
            build_base(&bwrap, lessons, &scratch, &exe, limits)
        });
        if let Err(why) = built {
            outcome.not_run.push((name.clone(), why.clone()));
            continue;
        }
        progress(&format!("running the lessons of {name} in the sandbox"));
        let target = dir.join("target");
        let _ = std::fs::remove_dir_all(&target);
        copy_tree(&scratch.join("base"), &target)?;
        // Written after the copy, so that cargo sees them newer than the
        // build of the stubs.
        for (file, _) in &prepared.files {
            let bytes = std::fs::read(file).unwrap_or_default();
            std::fs::write(file, bytes)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
        }
        let layout = Layout {
            kata: &pristine,
            target: &target,
            state: &dir.join(state::DIR),
            scratch: &dir.join("run"),
            files: prepared.files.clone(),
            runner: &exe,
        };
        let command = bwrap.command(
            &layout,
            sandbox::RUNNER,
            &["--root", sandbox::KATA, "--report-of", name],
        )?;
        let ran = sandbox::run(command, limits);
        let _ = std::fs::remove_dir_all(&target);
        let _ = std::fs::remove_dir_all(dir.join("run"));
        match reported(&ran, checkout) {
            Ok((text, reported)) => {
                let _ = std::fs::write(&kept, text);
                let _ = std::fs::write(dir.join("inputs"), &inputs);
                outcome.reports.push((name.clone(), reported));
            }
            Err(why) => outcome.not_run.push((name.clone(), why)),
        }
    }
    Ok(outcome)
}

/// The report a run printed, with the commit of the checkout (its text, as
/// kept, and read); or why there is none.
fn reported(ran: &Ran, checkout: &Path) -> Result<(String, Report), String> {
    if let Some(why) = &ran.stopped {
        return Err(why.clone());
    }
    let mut value: serde_json::Value = serde_json::from_str(&ran.stdout).map_err(|_| {
        let said = tail(&ran.stderr, 3);
        if said.is_empty() {
            "its run ended without a report".to_string()
        } else {
            format!("its run ended without a report: {said}")
        }
    })?;
    if let Some(object) = value.as_object_mut() {
        object.insert("commit".into(), commit_of(checkout).into());
    }
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let reported = super::parse(&text)
        .map_err(|why| format!("its run printed no report this kata reads: {why}"))?;
    Ok((text, reported))
}

/// A learner's files, copied out of their checkout.
struct Prepared {
    /// Each lesson file that is not the stub: (its copy, its path in the kata).
    files: Vec<(PathBuf, String)>,
    /// The hints shown, as read.
    hints: Vec<u8>,
}

/// A regular file of at most [`MAX_FILE`] bytes in `dir` (no symbolic link
/// followed, in it or on the way to it); `Ok(None)` when there is none.
fn read_plain(dir: &Path, path: &str) -> Result<Option<Vec<u8>>, String> {
    let mut at = dir.to_path_buf();
    for part in path.split('/') {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Err(_) => return Ok(None),
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!("{path} is a symbolic link, which is not followed"))
            }
            Ok(_) => {}
        }
    }
    let meta = std::fs::symlink_metadata(&at).map_err(|e| format!("{path}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{path} is not a file"));
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "{path} holds {} bytes, more than {MAX_FILE}",
            meta.len()
        ));
    }
    std::fs::read(&at)
        .map(Some)
        .map_err(|e| format!("cannot read {path}: {e}"))
}

/// Copies a learner's lesson files and hints into `dir`; a file that cannot
/// be taken (a link, too large) counts as the stub, with a note.
fn prepare(
    kata: &Path,
    lessons: &[Entry],
    dir: &Path,
    checkout: &Path,
    name: &str,
    notes: &mut Vec<String>,
) -> Result<Prepared, String> {
    let copies = dir.join("lessons");
    let hints_dir = dir.join(state::HINTS);
    let _ = std::fs::remove_dir_all(&copies);
    let _ = std::fs::remove_dir_all(&hints_dir);
    for made in [&copies, &hints_dir] {
        std::fs::create_dir_all(made)
            .map_err(|e| format!("cannot make {}: {e}", made.display()))?;
    }
    let mut prepared = Prepared {
        files: Vec::new(),
        hints: Vec::new(),
    };
    for entry in lessons {
        let inside = format!("lessons/{}.rs", entry.name);
        let stub = std::fs::read(entry.stub(kata)).unwrap_or_default();
        match read_plain(checkout, &inside) {
            Ok(Some(theirs)) if theirs != stub => {
                let copy = copies.join(format!("{}.rs", entry.name));
                std::fs::write(&copy, &theirs)
                    .map_err(|e| format!("cannot write {}: {e}", copy.display()))?;
                prepared.files.push((copy, inside));
            }
            Ok(_) => {}
            Err(why) => notes.push(format!("{name}: {why}; taken as the stub")),
        }
        let hints = state::hints_file(&entry.name);
        if let Ok(Some(shown)) = read_plain(checkout, &hints) {
            std::fs::write(hints_dir.join(&entry.name), &shown)
                .map_err(|e| format!("cannot write the hints of {name}: {e}"))?;
            prepared.hints.extend(entry.name.as_bytes());
            prepared.hints.extend(shown);
        }
    }
    Ok(prepared)
}

/// Builds the pristine kata's lessons in the sandbox, in `target/class/base`,
/// after fetching what Cargo.lock names (outside, where the network is).
fn build_base(
    bwrap: &Bubblewrap,
    lessons: &[Entry],
    scratch: &Path,
    exe: &Path,
    limits: &Limits,
) -> Result<(), String> {
    let pristine = scratch.join("kata");
    let fetched = std::process::Command::new(kata_runner::suite::cargo())
        .current_dir(&pristine)
        .args(["fetch", "--locked", "--quiet"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("not run: cargo could not start: {e}"))?;
    if !fetched.status.success() {
        return Err(format!(
            "not run: `cargo fetch` could not get the crates the kata needs: {}",
            tail(&String::from_utf8_lossy(&fetched.stderr), 5)
        ));
    }
    let base = scratch.join("base");
    let state = scratch.join("base-state");
    for dir in [&base, &state] {
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    }
    let mut args = vec![
        "test",
        "--no-run",
        "--locked",
        "--message-format=json-render-diagnostics",
    ];
    for entry in lessons {
        args.extend(["--test", entry.name.as_str()]);
    }
    let layout = Layout {
        kata: &pristine,
        target: &base,
        state: &state,
        scratch: &scratch.join("base-run"),
        files: Vec::new(),
        runner: exe,
    };
    let program = kata_runner::suite::cargo();
    let command = bwrap.command(&layout, &program.to_string_lossy(), &args)?;
    // The kata is the instructor's: its build gets an hour at least, not
    // a learner's time.
    let limits = Limits {
        time: limits.time.max(std::time::Duration::from_secs(3_600)),
        ..*limits
    };
    let ran = sandbox::run(command, &limits);
    let _ = std::fs::remove_dir_all(scratch.join("base-run"));
    let finished = ran
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .any(|m| m["reason"] == "build-finished" && m["success"] == true);
    if finished {
        return Ok(());
    }
    Err(format!(
        "not run: the kata itself did not build in the sandbox ({}); once `cargo test` \
         builds the kata here, run the class view again",
        ran.stopped.unwrap_or_else(|| tail(&ran.stderr, 8))
    ))
}

/// The last `n` lines of a text, on one line.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.trim().lines().collect();
    lines[lines.len().saturating_sub(n)..].join(" / ")
}

/// What runs checkouts without a sandbox, in `target/class/unsandboxed`
/// (the kata with the learner's files written in), as the runner always did.
struct Unsandboxed<'a> {
    kata: &'a Path,
    lessons: &'a [Entry],
    folder: &'a Path,
    scratch: &'a Path,
    exe: &'a Path,
    limits: &'a Limits,
}

impl Unsandboxed<'_> {
    fn run(&self, name: &str, checkout: &Path, outcome: &mut Outcome) -> Result<Report, String> {
        let dir = self.scratch.join("unsandboxed");
        let mut theirs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        for entry in self.lessons {
            let stub = std::fs::read(entry.stub(self.kata)).unwrap_or_default();
            let inside = format!("lessons/{}.rs", entry.name);
            let bytes = match read_plain(checkout, &inside) {
                Ok(Some(bytes)) => bytes,
                Ok(None) => stub,
                Err(why) => {
                    outcome
                        .left_out
                        .push(format!("{name}: {why}; taken as the stub"));
                    stub
                }
            };
            theirs.insert(entry.name.clone(), bytes);
        }
        let files = |entry: &Entry| theirs.get(&entry.name).cloned().unwrap_or_default();
        sync_kata(self.kata, &dir, self.folder, self.lessons, &files)?;
        for entry in self.lessons {
            let hints = state::hints_file(&entry.name);
            let shown = read_plain(checkout, &hints)
                .ok()
                .flatten()
                .unwrap_or_default();
            write_if_changed(&dir.join(&hints), &shown)?;
        }
        let mut command = std::process::Command::new(self.exe);
        command
            .args(["--root"])
            .arg(&dir)
            .args(["--report-of", name])
            .env_remove("KATA_ROOT")
            .env_remove("KATA_SUBJECT")
            .env(
                "KATA_RUN_LIMIT_SECS",
                kata_runner::suite::run_limit()
                    .min(self.limits.time)
                    .as_secs()
                    .to_string(),
            );
        let ran = sandbox::run(command, self.limits);
        reported(&ran, checkout).map(|(_, reported)| reported)
    }
}

/// A name fit for a folder: its letters, digits, `.`, `-` and `_`, and a
/// hash of the whole name (two names never share a folder).
fn slug(name: &str) -> String {
    let kept: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    format!("{kept}-{:08x}", report::fnv1a64(name.as_bytes()) as u32)
}

/// The commit a checkout is at, read from its `.git` without running git
/// (whose configuration a checkout controls).
pub fn commit_of(checkout: &Path) -> Option<String> {
    let read = |path: &str| {
        read_plain(checkout, path)
            .ok()
            .flatten()
            .map(|b| String::from_utf8_lossy(&b).trim().to_string())
    };
    let head = read(".git/HEAD")?;
    let hex = |s: &str| {
        (s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_string())
    };
    let Some(reference) = head.strip_prefix("ref: ") else {
        return hex(&head);
    };
    if reference
        .split('/')
        .any(|part| part == ".." || part.is_empty())
    {
        return None;
    }
    if let Some(commit) = read(&format!(".git/{reference}")) {
        return hex(&commit);
    }
    read(".git/packed-refs")?.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| hex(commit)).flatten()
    })
}

#[cfg(test)]
mod tests;
