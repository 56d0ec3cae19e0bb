use super::*;

/// The kata's first lesson, for a pristine copy's lesson file.
fn first_lesson() -> Vec<Entry> {
    kata_runner::runner::lessons(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").as_path())
        .unwrap()
        .into_iter()
        .take(1)
        .collect()
}

#[test]
fn the_pristine_kata_leaves_out_checkouts_and_the_class_and_follows_removals() {
    let dir = std::env::temp_dir().join(format!("kata-sync-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (kata, to) = (dir.join("kata"), dir.join("copy"));
    for (path, text) in [
        ("Cargo.toml", "[package]"),
        ("lessons/lesson_01.rs", "the instructor's own"),
        ("src/lib.rs", "pub fn a() {}"),
        ("src/gone.rs", "soon gone"),
        ("class/notes.json", "{}"),
        ("mine/bob/lessons/lesson_01.rs", "bob's"),
        ("target/debug/x", "built"),
    ] {
        let path = kata.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let stub = |_: &Entry| b"the stub".to_vec();
    let lessons = first_lesson();
    let first = sync_kata(&kata, &to, &kata.join("class"), &lessons, &stub).unwrap();
    let read = |path: &str| std::fs::read_to_string(to.join(path)).ok();
    assert_eq!(read("lessons/lesson_01.rs").as_deref(), Some("the stub"));
    assert_eq!(read("src/gone.rs").as_deref(), Some("soon gone"));
    for left_out in [
        "class/notes.json",
        "mine/bob/lessons/lesson_01.rs",
        "target/debug/x",
    ] {
        assert_eq!(read(left_out), None, "{left_out}");
    }
    assert!(to.join("target").is_dir() && to.join(".kata").is_dir());
    std::fs::remove_file(kata.join("src/gone.rs")).unwrap();
    let second = sync_kata(&kata, &to, &kata.join("class"), &lessons, &stub).unwrap();
    assert_eq!(read("src/gone.rs"), None);
    assert_ne!(first, second);
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a kata kept in git, only what git tracks reaches the sandbox:
/// not an untracked secret beside it, not a link to the instructor's
/// files, and none in a kata that is not in git either.
#[test]
#[cfg(unix)]
fn the_pristine_kata_holds_tracked_files_only_and_never_a_link() {
    let dir = std::env::temp_dir().join(format!("kata-tracked-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (kata, to) = (dir.join("kata"), dir.join("copy"));
    let secret = dir.join("secret.txt");
    std::fs::create_dir_all(kata.join("src")).unwrap();
    std::fs::write(&secret, "the instructor's").unwrap();
    std::fs::write(kata.join("Cargo.toml"), "[package]").unwrap();
    std::fs::write(kata.join("src/lib.rs"), "pub fn a() {}").unwrap();
    std::os::unix::fs::symlink(&secret, kata.join("src/linked.rs")).unwrap();
    let lessons = first_lesson();
    let stub = |_: &Entry| b"the stub".to_vec();
    let read = |path: &str| std::fs::read_to_string(to.join(path)).ok();
    // Not in git: every file but the link.
    sync_kata(&kata, &to, &kata.join("class"), &lessons, &stub).unwrap();
    assert_eq!(read("src/lib.rs").as_deref(), Some("pub fn a() {}"));
    assert_eq!(read("src/linked.rs"), None);
    // In git: the tracked files (the link among them, still left out).
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .arg("-C")
            .arg(&kata)
            .args(args)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "Cargo.toml", "src/lib.rs", "src/linked.rs"]);
    std::fs::write(kata.join(".env"), "TOKEN=secret").unwrap();
    std::fs::write(kata.join("src/notes.txt"), "untracked").unwrap();
    sync_kata(&kata, &to, &kata.join("class"), &lessons, &stub).unwrap();
    assert_eq!(read("src/lib.rs").as_deref(), Some("pub fn a() {}"));
    assert_eq!(read("lessons/lesson_01.rs").as_deref(), Some("the stub"));
    for left_out in [".env", "src/notes.txt", "src/linked.rs"] {
        assert_eq!(read(left_out), None, "{left_out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_checkout_s_commit_is_read_without_git_and_names_get_their_own_folder() {
    let dir = std::env::temp_dir().join(format!("kata-commit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(dir.join("a/.git/refs/heads")).unwrap();
    std::fs::write(dir.join("a/.git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(dir.join("a/.git/refs/heads/main"), format!("{commit}\n")).unwrap();
    assert_eq!(commit_of(&dir.join("a")).as_deref(), Some(commit));
    // Packed, detached, and a reference that leaves the folder.
    std::fs::create_dir_all(dir.join("b/.git")).unwrap();
    std::fs::write(dir.join("b/.git/HEAD"), "ref: refs/heads/dev\n").unwrap();
    std::fs::write(
        dir.join("b/.git/packed-refs"),
        format!("# pack-refs\n{commit} refs/heads/dev\n"),
    )
    .unwrap();
    assert_eq!(commit_of(&dir.join("b")).as_deref(), Some(commit));
    std::fs::write(dir.join("b/.git/HEAD"), format!("{commit}\n")).unwrap();
    assert_eq!(commit_of(&dir.join("b")).as_deref(), Some(commit));
    std::fs::write(dir.join("b/.git/HEAD"), "ref: ../../../etc/passwd\n").unwrap();
    assert_eq!(commit_of(&dir.join("b")), None);
    assert_eq!(commit_of(&dir.join("none")), None);
    // A lesson file that is a link is not read.
    #[cfg(unix)]
    {
        std::fs::create_dir_all(dir.join("c/lessons")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.join("c/lessons/lesson_01.rs")).unwrap();
        let why = read_plain(&dir.join("c"), "lessons/lesson_01.rs").unwrap_err();
        assert!(why.contains("symbolic link"), "{why}");
    }
    assert_ne!(slug("a/b"), slug("a_b"));
    assert!(slug("ada lovelace").starts_with("ada_lovelace-"));
    let _ = std::fs::remove_dir_all(&dir);
}
