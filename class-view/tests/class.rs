//! `class` on what a class folder holds: CI artifacts (read, never run),
//! and checkouts whose lesson files attack the instructor's machine (run
//! in the sandbox, stopped and reported; run without it, to show that the
//! attacks are real). The checkouts run on a kata of three tiny lessons of
//! plain Rust tests, with no dependency, built in seconds.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// The kata's root (this crate is its `class-view/`).
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/..");

struct Run {
    code: i32,
    out: String,
    err: String,
}

/// The tiny kata's runs share its scratch folder: one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn class(kata: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_kata-class"))
        .arg("--root")
        .arg(kata)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("KATA_SUBJECT")
        .env_remove("KATA_BWRAP")
        .envs(env.iter().copied())
        .output()
        .expect("the class view starts");
    Run {
        code: out.status.code().unwrap_or(-1),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn fresh(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    dir.to_path_buf()
}

fn put(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap();
    }
}

/// A report as `report --json` prints one, of two lessons, the second with
/// milestones.
fn report(who: &str, when: &str, reached: [bool; 3]) -> String {
    serde_json::json!({
        "schema": "ratelimit-kata/report/2", "learner": who, "when": when, "commit": null,
        "lessons": [
            { "number": 1, "name": "lesson_01", "title": "Writes", "state": "passed",
              "file": "", "hints_shown": 0, "checks": 1, "failed": 0, "first_failure": null,
              "compiler_error": null, "failing": [] },
            { "number": 2, "name": "lesson_02", "title": "Calls", "state": "failing",
              "file": "", "hints_shown": 0, "checks": 3, "failed": 1,
              "first_failure": "answers: no", "compiler_error": null,
              "failing": [{ "name": "answers", "kind": "property" }],
              "milestones": (1..=3).map(|k| serde_json::json!({
                  "number": k, "title": format!("Step {k}"), "reached": reached[k - 1]
              })).collect::<Vec<_>>() }
        ]
    })
    .to_string()
}

/// A tiny lesson's test binary: one check, `answers`, that wants 42,
/// reported as the kata's trial runner (`kata::trial`) reports its checks,
/// a JSON line per event to the file `KATA_RESULTS` names, with no
/// dependency.
const TINY_TEST: &str = r##"#[path = "../lessons/NAME.rs"]
mod learner;

fn main() -> std::process::ExitCode {
    use std::io::Write;
    let results = std::env::var_os("KATA_RESULTS");
    let say = |line: String| {
        if let Some(path) = &results {
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
            writeln!(file, "{line}").unwrap();
        }
    };
    let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let kept = said.clone();
    std::panic::set_hook(Box::new(move |info| {
        *kept.lock().unwrap() = format!("\nthread 'answers' panicked:\n{}\n", info.payload_as_str().unwrap_or(""));
    }));
    say(r#"{"event":"started","name":"answers"}"#.to_string());
    let ok = std::panic::catch_unwind(|| assert_eq!(learner::answer(), 42, "no")).is_ok();
    let output = said.lock().unwrap().clone();
    let event = if ok { "ok" } else { "failed" };
    let line = format!("{{\"event\":\"{event}\",\"name\":\"answers\",\"output\":{output:?}}}");
    say(line);
    say(r#"{"event":"done"}"#.to_string());
    println!("\nrunning 1 test\ntest answers ... {}\n", if ok { "ok" } else { "FAILED" });
    std::process::ExitCode::from(if ok { 0 } else { 101 })
}
"##;

/// A kata of three lessons, each a function `answer()` and one check that
/// wants 42, with no dependency: the sandbox's runs take seconds.
fn tiny_kata() -> PathBuf {
    let dir = Path::new(ROOT).join("target/class-fixture/tiny");
    put(
        &dir.join("Cargo.toml"),
        "[package]\nname = \"tiny-kata\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         [[test]]\nname = \"lesson_01\"\nharness = false\n\n[[test]]\nname = \"lesson_02\"\nharness = false\n\n\
         [[test]]\nname = \"lesson_03\"\nharness = false\n\n[workspace]\n",
    );
    put(
        &dir.join("Cargo.lock"),
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\n\
         version = 4\n\n[[package]]\nname = \"tiny-kata\"\nversion = \"0.0.0\"\n",
    );
    let mut catalog = String::new();
    for (n, title) in [(1, "Writes"), (2, "Calls"), (3, "Limits")] {
        catalog.push_str(&format!(
            "[[lesson]]\nnumber = {n}\ntitle = \"{title}\"\nkind = \"limiter\"\ntype = \"X\"\nalgorithm = \"FixedWindow\"\n\n"
        ));
        let name = format!("lesson_{n:02}");
        put(
            &dir.join(format!("lessons/{name}.md")),
            &format!("# Lesson {n:02} — {title}\n"),
        );
        let stub = "pub fn answer() -> u32 {\n    0\n}\n";
        put(&dir.join(format!("lessons/stubs/{name}.rs")), stub);
        put(&dir.join(format!("lessons/{name}.rs")), stub);
        put(
            &dir.join(format!("tests/{name}.rs")),
            &TINY_TEST.replace("NAME", &name),
        );
    }
    put(&dir.join("lessons/lessons.toml"), &catalog);
    dir
}

/// A checkout of the tiny kata whose lessons attack: lesson 01 writes into
/// the kata and into the class folder, lesson 02 connects to a server on
/// the instructor's loopback and to an address beyond it, lesson 03 says
/// what limits it runs under.
fn attacking_checkout(folder: &Path, port: u16) -> PathBuf {
    let checkout = folder.join("mallory");
    let escaped = folder.join("escaped");
    put(
        &checkout.join("lessons/lesson_01.rs"),
        &format!(
            "pub fn answer() -> u32 {{\n\
             \x20   let outside = std::fs::write({escaped:?}, \"x\");\n\
             \x20   std::fs::write(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/escaped\"), \"x\")\n\
             \x20       .expect(\"writing into the kata\");\n\
             \x20   panic!(\"wrote into the kata; outside: {{outside:?}}\")\n}}\n"
        ),
    );
    put(
        &checkout.join("lessons/lesson_02.rs"),
        &format!(
            "pub fn answer() -> u32 {{\n\
             \x20   let outside = std::net::TcpStream::connect(\"127.0.0.1:{port}\").map(|_| \"connected\");\n\
             \x20   let beyond = std::net::TcpStream::connect_timeout(\n\
             \x20       &\"192.0.2.1:80\".parse().unwrap(),\n\
             \x20       std::time::Duration::from_secs(1),\n\
             \x20   )\n\
             \x20   .map(|_| \"connected\");\n\
             \x20   panic!(\"loopback outside: {{outside:?}}; beyond: {{beyond:?}}\")\n}}\n"
        ),
    );
    put(
        &checkout.join("lessons/lesson_03.rs"),
        "pub fn answer() -> u32 {\n\
         \x20   let limits = std::fs::read_to_string(\"/proc/self/limits\").unwrap_or_default();\n\
         \x20   let data = limits.lines().find(|l| l.starts_with(\"Max data size\")).unwrap_or(\"\");\n\
         \x20   panic!(\"{}\", data.split_whitespace().collect::<Vec<_>>().join(\" \"))\n}\n",
    );
    checkout
}

/// Whether bubblewrap makes a sandbox here; the reason when it does not.
fn sandbox_works() -> Result<(), String> {
    match Command::new("bwrap")
        .args([
            "--unshare-all",
            "--unshare-user",
            "--ro-bind",
            "/",
            "/",
            "true",
        ])
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
        Err(e) => Err(format!("bwrap: {e}")),
    }
}

#[test]
#[cfg(target_os = "linux")]
fn lesson_files_that_write_outside_or_call_out_are_stopped_and_reported() {
    if let Err(why) = sandbox_works() {
        panic!(
            "this test needs bubblewrap making a sandbox here (Debian: sudo apt-get install \
             bubblewrap; user namespaces allowed): {why}"
        );
    }
    let _one = serial();
    let kata = tiny_kata();
    let folder = fresh(&kata.parent().unwrap().join("tiny-class"));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    attacking_checkout(&folder, port);
    let in_kata = kata.join("target/class/kata/escaped");
    let _ = std::fs::remove_file(&in_kata);
    // Every run runs: nothing kept from an earlier one.
    let _ = std::fs::remove_dir_all(kata.join("target/class/learners"));
    let _ = std::fs::remove_dir_all(kata.join("target/class/unsandboxed/.kata"));

    let run = class(
        &kata,
        &[folder.to_str().unwrap(), "--memory-limit", "300"],
        &[],
    );
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    assert!(
        run.out.contains("checkouts: ran in a sandbox (bubblewrap)"),
        "{}",
        run.out
    );
    assert!(run.out.contains("mallory  xxx  0/3 points"), "{}", run.out);
    // Stopped: nothing written outside, no connection made.
    assert!(!folder.join("escaped").exists());
    assert!(!in_kata.exists());
    assert!(
        listener
            .accept()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock),
        "the sandbox reached a server on the instructor's loopback"
    );
    // Reported: each refusal by what it caused.
    let refused = run
        .out
        .split("what the sandbox refused, as the failures say")
        .nth(1)
        .unwrap_or_else(|| panic!("no refusals shown:\n{}", run.out));
    assert!(
        refused.contains("mallory on lesson 01, a write outside its scratch folder: answers: writing into the kata: Os { code: 30"),
        "{refused}"
    );
    assert!(
        refused.contains("mallory on lesson 02, a connection beyond its loopback: answers: loopback outside: Err(Os { code: 111"),
        "{refused}"
    );
    assert!(refused.contains("beyond: Err(Os { code: 101"), "{refused}");
    // The memory limit holds inside: 300 MiB of data a process.
    let page = std::fs::read_to_string(folder.join("class.html")).unwrap();
    assert!(
        page.contains("answers: Max data size 314572800 314572800 bytes"),
        "{page}"
    );
    assert!(page.contains("Read-only file system"), "{page}");

    // --run-untrusted-code-as-me where a sandbox works: the sandbox all the
    // same.
    let flagged = class(
        &kata,
        &[folder.to_str().unwrap(), "--run-untrusted-code-as-me"],
        &[],
    );
    assert!(
        flagged
            .out
            .contains("(--run-untrusted-code-as-me was not needed: a sandbox works here)"),
        "{}",
        flagged.out
    );
    assert!(!folder.join("escaped").exists(), "{}", flagged.out);
    // The same checkout without the sandbox, as --run-untrusted-code-as-me
    // runs it where none works: the attacks are real.
    let unsandboxed = class(
        &kata,
        &[folder.to_str().unwrap(), "--run-untrusted-code-as-me"],
        &[("KATA_BWRAP", "/nonexistent/bwrap")],
    );
    assert_eq!(
        unsandboxed.code, 0,
        "{}{}",
        unsandboxed.out, unsandboxed.err
    );
    assert!(
        unsandboxed
            .out
            .contains("checkouts: ran WITHOUT a sandbox, with your rights"),
        "{}",
        unsandboxed.out
    );
    assert!(folder.join("escaped").exists(), "{}", unsandboxed.out);
    assert!(listener.accept().is_ok(), "{}", unsandboxed.out);
}

#[test]
#[cfg(target_os = "linux")]
fn a_run_past_its_time_is_stopped_and_named() {
    if let Err(why) = sandbox_works() {
        panic!("this test needs bubblewrap making a sandbox here: {why}");
    }
    let _one = serial();
    let kata = tiny_kata();
    let folder = fresh(&kata.parent().unwrap().join("tiny-slow"));
    put(
        &folder.join("sloth/lessons/lesson_01.rs"),
        "pub fn answer() -> u32 {\n    loop {\n        std::hint::spin_loop();\n    }\n}\n",
    );
    // A report beside it, so that the class view has someone to show.
    put(
        &folder.join("ada.json"),
        &report("ada", "2026-12-01T10:00:00Z", [true; 3]),
    );
    let run = class(&kata, &[folder.to_str().unwrap(), "--time-limit", "5"], &[]);
    assert_eq!(run.code, 1, "{}{}", run.out, run.err);
    assert!(
        run.out
            .contains("sloth: stopped after 5 s, the time limit of a learner's run"),
        "{}",
        run.out
    );
}

#[test]
fn without_a_sandbox_checkouts_are_not_run_unless_the_instructor_says_so() {
    let _one = serial();
    let kata = tiny_kata();
    let folder = fresh(&kata.parent().unwrap().join("tiny-nosandbox"));
    let escaped = folder.join("escaped");
    put(
        &folder.join("mallory/lessons/lesson_01.rs"),
        &format!("pub fn answer() -> u32 {{\n    std::fs::write({escaped:?}, \"x\").unwrap();\n    42\n}}\n"),
    );
    let no_bwrap = [("KATA_BWRAP", "/nonexistent/bwrap")];
    // Checkouts alone: a refusal that says why and names the way out.
    let alone = class(&kata, &[folder.to_str().unwrap()], &no_bwrap);
    assert_eq!(alone.code, 2, "{}{}", alone.out, alone.err);
    assert!(
        alone
            .err
            .contains("holds 1 checkout and no report, and none ran")
            && alone
                .err
                .contains("bubblewrap (`/nonexistent/bwrap`) is not installed"),
        "{}",
        alone.err
    );
    // Beside reports: the reports are shown, the checkout named as not run.
    put(
        &folder.join("ada.json"),
        &report("ada", "2026-12-01T10:00:00Z", [true, false, false]),
    );
    let mixed = class(&kata, &[folder.to_str().unwrap()], &no_bwrap);
    assert_eq!(mixed.code, 1, "{}{}", mixed.out, mixed.err);
    assert!(mixed.out.contains("class of 1 learner\n"), "{}", mixed.out);
    assert!(
        mixed.out.contains("mallory: no sandbox (see above); to run it anyway, with your rights, add --run-untrusted-code-as-me"),
        "{}",
        mixed.out
    );
    assert!(!escaped.exists());
}

#[test]
fn artifacts_are_read_never_run_and_scored_against_the_catalog() {
    let _one = serial();
    let kata = tiny_kata();
    let folder = fresh(&kata.parent().unwrap().join("tiny-artifacts"));
    // As GitHub and GitLab deliver them: an archive named for the learner's
    // repository, an unzipped folder, an archive in a folder per learner,
    // and two reports of one learner over time, downloaded in turn.
    let zip = |path: &Path, report: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, zip_of("report.json", report.as_bytes())).unwrap();
    };
    let downloaded = |path: &Path, minute: u64| {
        let when =
            std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000 + minute * 60);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(when)
            .unwrap();
    };
    zip(
        &folder.join("report-ada.zip"),
        &report("ada", "2026-12-01T10:00:00Z", [true, false, false]),
    );
    put(
        &folder.join("report-bo/report.json"),
        &report("bo", "2026-12-01T10:00:00Z", [true, true, false]),
    );
    zip(
        &folder.join("cy/artifacts.zip"),
        &report("cy", "2026-12-01T09:00:00Z", [true, false, false]),
    );
    downloaded(&folder.join("cy/artifacts.zip"), 0);
    // A browser names the second download so.
    zip(
        &folder.join("cy/artifacts (1).zip"),
        &report("cy", "2026-12-01T09:40:00Z", [true, false, false]),
    );
    downloaded(&folder.join("cy/artifacts (1).zip"), 40);
    // Eve's artifact says it is Ada's, newer and better: it stays Eve's.
    zip(
        &folder.join("report-eve.zip"),
        &report("ada", "2026-12-01T11:00:00Z", [true; 3]),
    );
    std::fs::write(folder.join("broken.zip"), b"PK not really").unwrap();
    // A zip bomb: 40 entries that all point at one report.
    std::fs::write(
        folder.join("bomb.zip"),
        zip_sharing(
            "report.json",
            report("bomb", "2026-12-01T10:00:00Z", [true; 3]).as_bytes(),
            40,
        ),
    )
    .unwrap();
    // Nothing may run: neither cargo nor bubblewrap.
    let never = [("CARGO", "/bin/false"), ("KATA_BWRAP", "/bin/false")];
    // The points of one artifact, as CI prints them, and no page: the
    // tiny kata's catalog has three lessons and no milestones, so the
    // report's milestones of lesson 02 count for nothing and lesson 03,
    // which it leaves out, is a point not reached.
    let points = class(
        &kata,
        &[folder.join("report-ada.zip").to_str().unwrap(), "--points"],
        &never,
    );
    assert_eq!(points.code, 0, "{}{}", points.out, points.err);
    assert_eq!(
        points.out,
        "points of ada (2026-12-01T10:00:00Z): 1 of 3\n\n\
         \x20 lesson  milestone  points\n\
         \x20 01      Writes     1/1\n\
         \x20 02      Calls      0/1\n\
         \x20 03      Limits     0/1\n\
         \x20 total              1/3\n"
    );
    assert!(!folder.join("class.html").exists());
    let run = class(&kata, &[folder.to_str().unwrap()], &never);
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    assert!(run.out.contains("class of 4 learners"), "{}", run.out);
    assert!(!run.out.contains("checkouts:"), "{}", run.out);
    // Every learner out of the catalog's three points.
    assert!(run.out.contains("ada  +x.  1/3 points"), "{}", run.out);
    assert!(run.out.contains("bo   +x.  1/3 points"), "{}", run.out);
    assert!(run.out.contains("eve  +x.  1/3 points"), "{}", run.out);
    assert!(run.out.contains("  02  Calls"), "{}", run.out);
    assert!(!run.out.contains("1: 4"), "{}", run.out);
    assert!(
        run.err.contains(&format!(
            "warning: {} (report.json) says it is the report of \"ada\"; it is shown as \
             \"eve\"'s, the name of where it was found",
            folder.join("report-eve.zip").display()
        )),
        "{}",
        run.err
    );
    assert!(
        run.out
            .contains("cy on lesson 02: the same failure for 40 min"),
        "{}",
        run.out
    );
    assert!(
        run.err.contains("broken.zip: not a zip archive"),
        "{}",
        run.err
    );
    assert!(
        run.err.contains(
            "bomb.zip: its entries \"report.json\" and \"report.json\" share their bytes, \
             as a zip bomb's do (no CI writes an artifact so): not read"
        ),
        "{}",
        run.err
    );
    assert!(folder.join("class.html").exists());
}

/// A zip archive of one stored file, as the runner reads GitHub's and
/// GitLab's: local header, data, central directory, end record.
fn zip_of(name: &str, bytes: &[u8]) -> Vec<u8> {
    zip_sharing(name, bytes, 1)
}

/// A zip archive of one stored file, whose central directory lists it
/// `copies` times: a zip bomb's trick (its entries share their bytes).
fn zip_sharing(name: &str, bytes: &[u8], copies: u16) -> Vec<u8> {
    let crc = kata_class::zip::crc32(bytes);
    let (n, size) = (name.len() as u16, bytes.len() as u32);
    let mut out = Vec::new();
    out.extend(0x0403_4b50u32.to_le_bytes());
    out.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    out.extend(crc.to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend(size.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out.extend(name.as_bytes());
    out.extend(bytes);
    let directory = out.len() as u32;
    for _ in 0..copies {
        out.extend(0x0201_4b50u32.to_le_bytes());
        out.extend([20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        out.extend(crc.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend(size.to_le_bytes());
        out.extend(n.to_le_bytes());
        out.extend([0u8; 12]);
        out.extend(0u32.to_le_bytes());
        out.extend(name.as_bytes());
    }
    let length = out.len() as u32 - directory;
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0, 0, 0, 0]);
    out.extend(copies.to_le_bytes());
    out.extend(copies.to_le_bytes());
    out.extend(length.to_le_bytes());
    out.extend(directory.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[test]
fn reports_and_a_checkout_run_as_me_make_one_class_and_the_checkout_is_never_written() {
    let _one = serial();
    let kata = tiny_kata();
    let folder = fresh(&kata.parent().unwrap().join("tiny-class"));
    // Ada's report twice, half an hour apart, in folders by time; Cy's
    // with every lesson passed.
    put(
        &folder.join("1000/ada.json"),
        &report("ada", "2026-12-01T10:00:00Z", [true, false, false]),
    );
    put(
        &folder.join("1030/ada.json"),
        &report("ada", "2026-12-01T10:30:00Z", [true, false, false]),
    );
    let mut cy: serde_json::Value =
        serde_json::from_str(&report("cy", "2026-12-01T10:30:00Z", [true; 3])).unwrap();
    for lesson in cy["lessons"].as_array_mut().unwrap() {
        lesson["state"] = "passed".into();
        lesson["failed"] = 0.into();
        lesson["failing"] = serde_json::json!([]);
        lesson["first_failure"] = serde_json::Value::Null;
    }
    put(&folder.join("cy.json"), &cy.to_string());
    // One checkout: lesson 01 answers, lesson 02 is wrong, lesson 03 the stub.
    let bob = folder.join("bob");
    put(
        &bob.join("lessons/lesson_01.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    );
    put(
        &bob.join("lessons/lesson_02.rs"),
        "pub fn answer() -> u32 {\n    41\n}\n",
    );
    std::fs::copy(
        kata.join("lessons/stubs/lesson_03.rs"),
        bob.join("lessons/lesson_03.rs"),
    )
    .unwrap();
    let before = std::fs::read(bob.join("lessons/lesson_02.rs")).unwrap();

    // No sandbox (bubblewrap is made to be missing): the checkout runs
    // because the instructor says so.
    let run = class(
        &kata,
        &[folder.to_str().unwrap(), "--run-untrusted-code-as-me"],
        &[("KATA_BWRAP", "/nonexistent/bwrap")],
    );
    assert_eq!(run.code, 0, "{}{}", run.out, run.err);
    assert!(run.out.contains("class of 3 learners"), "{}", run.out);
    assert!(run.out.contains("ada  +x."), "{}", run.out);
    assert!(run.out.contains("bob  +x."), "{}", run.out);
    assert!(run.out.contains("cy   ++."), "{}", run.out);
    assert!(
        run.out
            .contains("ada on lesson 02: the same failure for 30 min"),
        "{}",
        run.out
    );
    assert!(
        run.out.contains("checks that fail most often"),
        "{}",
        run.out
    );
    let page = std::fs::read_to_string(folder.join("class.html")).unwrap();
    assert!(
        page.starts_with("<!doctype html>") && page.contains("bob"),
        "{page}"
    );
    // The checkout is read, never written.
    assert_eq!(
        std::fs::read(bob.join("lessons/lesson_02.rs")).unwrap(),
        before
    );
    assert!(!bob.join(".kata").exists());
}
