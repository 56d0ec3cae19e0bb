//! Source checks of a learner file, run before anything executes it.

/// Blanks out comments and string literals, keeping line breaks, so that a
/// path mentioned in a comment or a message is not taken for an import.
fn code_only(source: &str) -> String {
    let mut out = String::with_capacity(source.len());
    let mut chars = source.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut depth = 1;
                let mut prev = ' ';
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    match (prev, c) {
                        ('*', '/') => {
                            depth -= 1;
                            prev = ' ';
                            if depth == 0 {
                                break;
                            }
                            continue;
                        }
                        ('/', '*') => {
                            depth += 1;
                            prev = ' ';
                            continue;
                        }
                        _ => {}
                    }
                    prev = c;
                }
            }
            '"' => {
                out.push(' ');
                let mut escaped = false;
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                    }
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// Paths that bring in sync primitives loom cannot see.
const FORBIDDEN: &[&str] = &[
    "std::sync",
    "core::sync",
    "alloc::sync",
    "parking_lot",
    "loom::",
    "kata::sync",
    "crossbeam",
    "spin::",
];

/// Names under `std::sync` that are plain data, the same type in both
/// backends (the facade re-exports them): using them from std hides nothing
/// from loom.
const HARMLESS: &[&str] = &[
    "atomic::Ordering",
    "LockResult",
    "PoisonError",
    "TryLockError",
    "TryLockResult",
];

/// True when every path on the line that goes through `std::sync` or
/// `core::sync` ends in a harmless name.
fn only_harmless(line: &str) -> bool {
    // `use std::sync;` or `use std::sync as s;` brings the whole module in.
    for path in ["std::sync", "core::sync", "alloc::sync"] {
        for (i, _) in line.match_indices(path) {
            let next = line[i + path.len()..].chars().next();
            if matches!(next, None | Some(';' | ',' | '}' | 'a')) {
                return false;
            }
        }
    }
    let mut rest = line;
    while let Some(i) = rest.find("::sync::") {
        let after = &rest[i + "::sync::".len()..];
        let Some(name) = HARMLESS.iter().find(|h| after.starts_with(*h)) else {
            return false;
        };
        rest = &after[name.len()..];
    }
    true
}

/// Fails, naming the line, if a learner file takes sync primitives from
/// anywhere but its parent's `sync` module (`use super::sync::...`).
pub fn check_sync_imports(file: &str, source: &str) -> Result<(), String> {
    let code = code_only(source);
    let squeezed: Vec<String> = code
        .lines()
        .map(|l| l.chars().filter(|c| !c.is_whitespace()).collect())
        .collect();
    for (n, line) in squeezed.iter().enumerate() {
        let hit = FORBIDDEN
            .iter()
            .find(|p| line.contains(*p) && !(p.ends_with("::sync") && only_harmless(line)))
            .copied()
            .or_else(|| {
                // `use std::{collections::HashMap, sync::Mutex};`, possibly over several lines.
                let start = line.find("std::{")?;
                let mut group = line[start..].to_string();
                for next in squeezed.iter().skip(n + 1).take(20) {
                    if group.contains('}') {
                        break;
                    }
                    group.push_str(next);
                }
                let group = &group[..group.find('}').map_or(group.len(), |i| i + 1)];
                ["{sync", ",sync"]
                    .iter()
                    .any(|p| group.contains(p))
                    .then_some("std::{.., sync}")
            });
        if let Some(path) = hit {
            let original = source.lines().nth(n).unwrap_or("").trim();
            return Err(format!(
                "{file}:{}: `{original}` takes a sync primitive from `{path}`. Take it from the \
                 lesson's facade instead: `use super::sync::{{Arc, Mutex, RwLock, AtomicU64, Ordering}};` \
                 (the names you need). The tests build your file twice, once over std's primitives \
                 and once over loom's, and loom can only explore the thread interleavings of \
                 primitives it provides.",
                n + 1
            ));
        }
    }
    Ok(())
}

/// What makes a limiter's answers depend on more than its configuration and
/// its calls, each with the reason a learner needs.
const OUTSIDE_INPUTS: &[(&str, &str)] = &[
    (
        "Instant",
        "reads the real clock: time is passed in as `now`, and answers must not depend on \
         when the tests happen to run",
    ),
    (
        "SystemTime",
        "reads the real clock: time is passed in as `now`, and answers must not depend on \
         when the tests happen to run",
    ),
    (
        "thread_local!",
        "keeps state per OS thread: two callers on two threads would see two limiters (and \
         loom runs every thread on one OS thread, so it cannot see the difference)",
    ),
    (
        "thread::current",
        "makes the answer depend on which thread calls: every thread must share one limiter",
    ),
    (
        "ThreadId",
        "makes the answer depend on which thread calls: every thread must share one limiter",
    ),
    (
        "sleep(",
        "waits on the real clock: a limiter never sleeps, it answers at once",
    ),
    (
        "thread::spawn",
        "starts a thread: a limiter answers each call on the caller's thread",
    ),
    (
        "rand::",
        "draws random numbers: the same calls must always get the same answers",
    ),
    (
        "process::id",
        "makes the answer depend on which process calls: app servers in separate processes \
         must share one limit, so no key, count or answer may depend on the process",
    ),
    (
        "env::var",
        "reads the environment: two app servers started differently would answer the same \
         calls differently; configuration comes in through the constructor",
    ),
    (
        "env::vars",
        "reads the environment: two app servers started differently would answer the same \
         calls differently; configuration comes in through the constructor",
    ),
    (
        "gethostname",
        "reads the host name: app servers on different hosts must share one limit, so no \
         key, count or answer may depend on the host",
    ),
    (
        "fs::read",
        "reads a file (a host name, a configuration): app servers on different hosts must \
         share one limit, and configuration comes in through the constructor",
    ),
];

/// Fails, naming the line and the reason, if a limiter's file uses
/// something that makes its answers depend on more than its configuration
/// and its calls: a real clock, per-thread state, sleeping, threads.
pub fn check_inputs(file: &str, source: &str) -> Result<(), String> {
    check_inputs_of(file, source, Inputs::Calls)
}

/// What a subject's answers may depend on, besides its configuration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Inputs {
    /// A limiter: the `(key, now)` calls it was given.
    Calls,
    /// A layer (lesson 07): its requests, and time from the clock it was given.
    Clock,
    /// A client (lesson 11): as a layer, but its wall-clock time is a
    /// `SystemTime` the clock gives it, so only reading the real clock
    /// (`SystemTime::now`, `Instant::now`) or sleeping on tokio's is refused.
    Client,
    /// Limits on what is in flight (lesson 12): as a layer, and its permits
    /// are its own, behind `super::sync` (never tokio's semaphore).
    InFlight,
}

/// What limits on what is in flight may not use besides what a layer may
/// not, with the reasons.
const OUTSIDE_IN_FLIGHT: &[(&str, &str)] = &[
    (
        "tokio::sync",
        "takes a semaphore, lock or channel from tokio: the permits are yours to write, behind \
         `super::sync`'s locks, which loom can explore",
    ),
    (
        "tokio::time",
        "sleeps on tokio's timer: the delay layer sleeps only through its `Clock` \
         (`sleep_until`), whose time the tests move",
    ),
    (
        "tokio::spawn",
        "starts a task: a request's work happens in the future `call` returns, which its \
         caller polls and may drop",
    ),
    (
        "tokio::",
        "takes something from tokio: the permits are yours, behind `super::sync`; the layers \
         wait only in `poll_ready` and on their `Clock`",
    ),
];

/// What a client may not use besides what a layer may not, with the
/// reasons: the names the types share with the real clock are its own.
const OUTSIDE_A_CLIENT: &[(&str, &str)] = &[
    (
        "SystemTime::now",
        "reads the real clock: the client reads time only from the `Clock` it is given, which \
         the tests set",
    ),
    (
        "Instant::now",
        "reads the real clock: the client reads time only from the `Clock` it is given, which \
         the tests set",
    ),
    (
        "tokio::time",
        "sleeps on tokio's timer: the client sleeps only through its `Clock` (`sleep_until`), \
         whose time the tests move",
    ),
    (
        "tokio::sync",
        "takes a lock or a channel from tokio: the client's shared state is behind \
         `super::sync`'s locks, held only between awaits (never across one), which loom can \
         explore",
    ),
    (
        "tokio::spawn",
        "starts a task: a request's work happens in the future `call` returns, which its \
         caller polls and may drop",
    ),
    (
        "yield_now",
        "yields to tokio's scheduler: a request waits only on its inner service and its clock",
    ),
];

/// [`check_inputs`] for a subject of either kind, with its reasons.
pub fn check_inputs_of(file: &str, source: &str, inputs: Inputs) -> Result<(), String> {
    let code = code_only(source);
    for (n, line) in code.lines().enumerate() {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        // A client's own reasons first: they are the more precise.
        let client: &[(&str, &str)] = match inputs {
            Inputs::Client => OUTSIDE_A_CLIENT,
            Inputs::InFlight => OUTSIDE_IN_FLIGHT,
            _ => &[],
        };
        let outside = client
            .iter()
            .chain(OUTSIDE_INPUTS.iter().filter(|(name, _)| {
                inputs != Inputs::Client || !matches!(*name, "Instant" | "SystemTime")
            }));
        let hit = outside.into_iter().find(|(name, _)| {
            squeezed.match_indices(name).any(|(i, _)| {
                // A whole name, not the end of a longer one (`MyInstant`).
                let before = squeezed[..i].chars().next_back();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            })
        });
        if let Some((name, why)) = hit {
            let original = source.lines().nth(n).unwrap_or("").trim();
            let (why, closing) = match inputs {
                Inputs::Calls => (
                    *why,
                    "A limiter's answers may depend only on its configuration and the `(key, \
                     now)` calls it was given.",
                ),
                Inputs::Clock | Inputs::InFlight if why.starts_with("reads the real clock") => (
                    "reads the real clock: the layer reads time only from the `Clock` it is \
                     given, which the tests set",
                    "A layer's answers may depend only on its configuration, its requests and \
                     its clock.",
                ),
                Inputs::Clock => (
                    *why,
                    "A layer's answers may depend only on its configuration, its requests and \
                     its clock.",
                ),
                Inputs::Client => (
                    *why,
                    "A client's attempts may depend only on its policy, its requests, the \
                     answers and its clock.",
                ),
                Inputs::InFlight => (
                    *why,
                    "A limit's answers may depend only on its policy, its requests, what is in \
                     flight and its clock.",
                ),
            };
            return Err(format!(
                "{file}:{}: `{original}` uses `{}`, which {why}. {closing}",
                n + 1,
                name.trim_end_matches('(')
            ));
        }
    }
    Ok(())
}

/// Which atomic calls take which ordering argument, and what std allows
/// there (the orderings it panics on when the line runs).
const ORDERING_RULES: &[(&str, usize, &[&str], &str)] = &[
    (
        ".load(",
        0,
        &["Release", "AcqRel"],
        "a load takes Relaxed, Acquire or SeqCst",
    ),
    (
        ".store(",
        1,
        &["Acquire", "AcqRel"],
        "a store takes Relaxed, Release or SeqCst",
    ),
    (
        ".compare_exchange(",
        3,
        &["Release", "AcqRel"],
        "the failure ordering is a load's: Relaxed, Acquire or SeqCst",
    ),
    (
        ".compare_exchange_weak(",
        3,
        &["Release", "AcqRel"],
        "the failure ordering is a load's: Relaxed, Acquire or SeqCst",
    ),
    (
        ".fetch_update(",
        1,
        &["Release", "AcqRel"],
        "the fetch ordering is a load's: Relaxed, Acquire or SeqCst",
    ),
];

/// Fails, naming the line, on an atomic call written with an ordering std
/// rejects, whether or not the tests ever run that line (a contended path
/// may never run single-threaded). The facade also fails when one runs.
pub fn check_orderings(file: &str, source: &str) -> Result<(), String> {
    let code = code_only(source);
    for (call, arg, wrong, rule) in ORDERING_RULES {
        for (start, _) in code.match_indices(call) {
            let args = &code[start + call.len()..];
            // The arguments up to the closing parenthesis, split at top-level commas.
            let mut depth = 0usize;
            let mut parts = vec![String::new()];
            for c in args.chars() {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' if depth == 0 => break,
                    ')' | ']' | '}' => depth -= 1,
                    ',' if depth == 0 => {
                        parts.push(String::new());
                        continue;
                    }
                    _ => {}
                }
                parts.last_mut().expect("one part at least").push(c);
            }
            let Some(given) = parts.get(*arg) else {
                continue;
            };
            let given = given.trim();
            if let Some(bad) = wrong
                .iter()
                .find(|w| given == **w || given.ends_with(&format!("::{w}")))
            {
                let line = code[..start].matches('\n').count();
                let original = source.lines().nth(line).unwrap_or("").trim();
                return Err(format!(
                    "{file}:{}: `{original}` passes Ordering::{bad} where {rule}; std panics \
                     when this line runs, which may be only when threads contend.",
                    line + 1
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_layer_is_told_about_its_clock() {
        let e = check_inputs_of("l.rs", "let t = Instant::now();", Inputs::Clock).unwrap_err();
        assert!(
            e.contains("`Clock` it is") && e.contains("A layer's answers"),
            "{e}"
        );
        let e = check_inputs("l.rs", "let t = Instant::now();").unwrap_err();
        assert!(e.contains("`(key, now)`"), "{e}");
    }

    use super::*;

    /// A client names `SystemTime` (its clock's wall time is one) but never
    /// reads the real clock, sleeps on tokio's timer or takes tokio's locks.
    #[test]
    fn a_client_may_name_system_time_but_not_read_it() {
        let ok = "use std::time::{Duration, SystemTime};\nfn w(wall: SystemTime) {}";
        assert_eq!(check_inputs_of("c.rs", ok, Inputs::Client), Ok(()));
        for (line, said) in [
            ("let w = SystemTime::now();", "`Clock` it is given"),
            ("let t = std::time::Instant::now();", "`Clock` it is given"),
            ("tokio::time::sleep(d).await;", "sleep_until"),
            ("let m = tokio::sync::Mutex::new(0);", "super::sync"),
            ("tokio::spawn(f);", "may drop"),
            ("tokio::task::yield_now().await;", "scheduler"),
        ] {
            let e = check_inputs_of("c.rs", line, Inputs::Client).unwrap_err();
            assert!(
                e.contains(said) && e.contains("A client's attempts"),
                "{line}: {e}"
            );
        }
        assert!(check_inputs_of("l.rs", ok, Inputs::Clock).is_err());
    }

    #[test]
    fn answers_may_depend_only_on_the_calls() {
        let ok = "// not Instant::now()\nstruct MyInstant;\nlet s = \"SystemTime\";\nfn f(now: Timestamp) {}";
        assert_eq!(check_inputs("f.rs", ok), Ok(()));
        let clock = "use std::time::{Duration, Instant};\n";
        let e = check_inputs("lessons/lesson_03.rs", clock).unwrap_err();
        assert!(
            e.starts_with("lessons/lesson_03.rs:1:") && e.contains("real clock"),
            "{e}"
        );
        let local = "struct L;\nthread_local! {\n    static C: u64 = 0;\n}";
        let e = check_inputs("f.rs", local).unwrap_err();
        assert!(
            e.starts_with("f.rs:2:") && e.contains("per OS thread"),
            "{e}"
        );
        assert!(check_inputs("f.rs", "let id = std::thread::current().id();").is_err());
        for outside in [
            "let pid = std::process::id();",
            "let host = std::env::var(\"HOSTNAME\");",
            "let n = std::fs::read_to_string(\"/etc/hostname\");",
            "let n = unsafe { libc::gethostname(p, 64) };",
            "let all: Vec<_> = env::vars().collect();",
        ] {
            assert!(check_inputs("f.rs", outside).is_err(), "{outside}");
        }
        assert!(check_inputs("f.rs", "std::thread::sleep(d);").is_err());
    }

    #[test]
    fn orderings_std_rejects_are_named_with_their_line() {
        let ok = "a.load(Ordering::Acquire);\na.compare_exchange(x, y, Ordering::AcqRel, Ordering::Acquire);\na.store(1, Ordering::Release);";
        assert_eq!(check_orderings("f.rs", ok), Ok(()));
        let load = "let x = 1;\nlet v = tat.load(Ordering::AcqRel);";
        let e = check_orderings("f.rs", load).unwrap_err();
        assert!(e.starts_with("f.rs:2:") && e.contains("AcqRel"), "{e}");
        let cas =
            "s.compare_exchange_weak(\n    a,\n    f(b, c),\n    O::SeqCst,\n    O::Release,\n)";
        assert!(check_orderings("f.rs", cas)
            .unwrap_err()
            .starts_with("f.rs:1:"));
        assert!(check_orderings("f.rs", "a.store(v, Acquire)").is_err());
    }

    #[test]
    fn accepts_the_facade_and_mentions_in_comments() {
        let ok = "use super::sync::{Arc, Mutex};\n// not std::sync::Mutex\nlet s = \"std::sync\";\n/* std::sync */";
        assert_eq!(check_sync_imports("f.rs", ok), Ok(()));
    }

    #[test]
    fn names_the_line_of_a_direct_import() {
        let bad = "use std::collections::HashMap;\n\nuse std::sync::Mutex;\n";
        let e = check_sync_imports("lessons/lesson_02.rs", bad).unwrap_err();
        assert!(
            e.starts_with("lessons/lesson_02.rs:3: `use std::sync::Mutex;`"),
            "{e}"
        );
        let nested = "use std::{\n    collections::HashMap,\n    sync::RwLock,\n};";
        let e = check_sync_imports("f.rs", nested).unwrap_err();
        assert!(e.starts_with("f.rs:1:"), "{e}");
        let inline = "fn f() { let m = std :: sync :: Mutex::new(1); }";
        assert!(check_sync_imports("f.rs", inline).is_err());
        let parking = "use parking_lot::Mutex;";
        assert!(check_sync_imports("f.rs", parking).is_err());
        let mixed = "use std::sync::{atomic::Ordering, Mutex};";
        assert!(check_sync_imports("f.rs", mixed).is_err());
        let arc = "use std::sync::Arc;";
        assert!(check_sync_imports("f.rs", arc).is_err());
        let module = "use std::sync;\nfn f() { let m = sync::Mutex::new(1); }";
        assert!(check_sync_imports("f.rs", module).is_err());
        let renamed = "use std::sync as s;";
        assert!(check_sync_imports("f.rs", renamed).is_err());
    }

    #[test]
    fn accepts_plain_data_types_from_std() {
        let ok = "use std::sync::atomic::Ordering;\nfn f(o: core::sync::atomic::Ordering) -> std::sync::LockResult<()> { Ok(()) }";
        assert_eq!(check_sync_imports("f.rs", ok), Ok(()));
    }
}
