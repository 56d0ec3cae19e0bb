//! A drawing compared with its committed snapshot, which must hold the
//! contract's drawing.

/// Compares a subject's drawing of a named timeline with the committed
/// snapshot `tests/snapshots/lesson_NN_<name>.snap` (`root` is the kata's
/// folder), which must hold the contract's drawing: accepting a wrong
/// drawing as the new snapshot cannot make this pass. The drawings are the
/// subject's, the reference's and the model's; the last two must agree.
///
/// The harness compares the drawings itself and fails with their diff and
/// the command that replays the timeline. Snapshots are insta's files, and
/// insta writes them, always with the contract's drawing (never the
/// subject's): when one does not exist yet, or when `INSTA_UPDATE` is
/// `always`, `new` or `unseen` (a maintainer writing snapshots).
pub fn assert_snapshot(
    (root, number, name): (&str, u32, &str),
    description: &str,
    [tested, reference, contract]: [&str; 3],
    whose: &str,
) {
    assert!(
        reference == contract,
        "the reference solution disagrees with the kata's model on snapshot {name}:\nreference:\n{reference}\nmodel:\n{contract}"
    );
    let snapshot = format!("lesson_{number:02}_{name}");
    let dir = format!("{root}/tests/snapshots");
    let file = format!("{dir}/{snapshot}.snap");
    if writing(&file) {
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(&dir);
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.set_description(description);
        settings.bind(|| insta::assert_snapshot!(snapshot.as_str(), contract));
    }
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    let kept = snapshot_body(&committed) == contract.trim_end();
    let shown = format!("tests/snapshots/{snapshot}.snap");
    let restore = format!(
        "{shown} no longer holds the contract's timeline (was a wrong run accepted as the \
         snapshot?). Restore it with `git checkout {shown}`."
    );
    if tested != contract {
        let check = std::thread::current()
            .name()
            .filter(|n| *n != "main")
            .map(|n| format!("{n} "))
            .unwrap_or_default();
        panic!(
            "{whose} draws timeline {name} differently from the reference (- is the reference's \
             line, + is yours):\n{}Fix your code, not the snapshot: {shown} holds the \
             contract's drawing, and the tests check that it still does.{}\n\
             replay it beside the reference's answers:\n  cargo run -- compare {number} {name}\n\
             (the check {check}of tests/lesson_{number:02}.rs)",
            diff(reference, tested),
            if kept {
                String::new()
            } else {
                format!(" And {restore}")
            }
        );
    }
    assert!(kept, "{restore}");
}

/// Whether insta writes the snapshot: it does not exist yet, or a
/// maintainer asks for snapshots to be written.
fn writing(file: &str) -> bool {
    !std::path::Path::new(file).exists() || update_asked()
}

/// Whether `INSTA_UPDATE` asks for snapshots to be written.
fn update_asked() -> bool {
    matches!(
        std::env::var("INSTA_UPDATE").as_deref(),
        Ok("always" | "1" | "force" | "new" | "unseen")
    )
}

/// `new` against `old`, line by line: `  ` a line of both, `- ` one of
/// `old` only, `+ ` one of `new` only, in order (a longest common
/// subsequence of lines; drawings are short).
fn diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    // common[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] {
                common[i + 1][j + 1] + 1
            } else {
                common[i + 1][j].max(common[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            (i, j) = (i + 1, j + 1);
        } else if j == b.len() || (i < a.len() && common[i + 1][j] >= common[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

/// The body of an insta snapshot file (what follows its `---` header).
fn snapshot_body(file: &str) -> &str {
    let mut parts = file.splitn(3, "---\n");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), Some(_header), Some(body)) => body.trim_end(),
        _ => file.trim_end(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of its own with `tests/snapshots/lesson_99_<name>.snap`
    /// holding `body`.
    fn kata_with_snapshot(name: &str, body: &str) -> std::path::PathBuf {
        let root =
            std::env::temp_dir().join(format!("kata-snapshot-{}-{name}", std::process::id()));
        let dir = root.join("tests/snapshots");
        std::fs::create_dir_all(&dir).unwrap();
        let file = format!("---\nsource: src/snapshot.rs\ndescription: a@0 b@0\n---\n{body}\n");
        std::fs::write(dir.join(format!("lesson_99_{name}.snap")), file).unwrap();
        root
    }

    fn failure(work: impl FnOnce() + std::panic::UnwindSafe) -> String {
        let payload = std::panic::catch_unwind(work).expect_err("the comparison fails");
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    /// A drawing unlike the contract's fails with the harness's own
    /// message: the diff, the command that replays it and the check, and
    /// nothing of cargo-insta; no `.snap.new` is written.
    #[test]
    fn a_wrong_drawing_fails_with_its_diff_and_the_replay() {
        let contract = "a: allowed\nb: denied\nc: allowed";
        let root = kata_with_snapshot("drawing", contract);
        let root_text = root.to_str().unwrap().to_string();
        let text = failure(move || {
            assert_snapshot(
                (&root_text, 99, "drawing"),
                "a@0 b@0",
                ["a: allowed\nb: allowed\nc: allowed", contract, contract],
                "your limiter",
            )
        });
        assert!(
            text.starts_with("your limiter draws timeline drawing differently from the reference"),
            "{text}"
        );
        assert!(
            text.contains("\n  a: allowed\n- b: denied\n+ b: allowed\n  c: allowed\n"),
            "{text}"
        );
        assert!(text.contains("cargo run -- compare 99 drawing"), "{text}");
        assert!(text.contains("tests/lesson_99.rs"), "{text}");
        assert!(!text.contains("insta"), "{text}");
        let written: Vec<_> = std::fs::read_dir(root.join("tests/snapshots"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(written, ["lesson_99_drawing.snap"]);
        std::fs::remove_dir_all(root).unwrap();
    }

    /// A snapshot that no longer holds the contract's drawing fails even
    /// when the drawing is right: accepting a wrong drawing cannot pass.
    #[test]
    fn a_snapshot_that_is_not_the_contract_s_fails() {
        if update_asked() {
            // A maintainer writing snapshots: insta puts the contract's back.
            return;
        }
        let contract = "a: allowed\nb: denied";
        let root = kata_with_snapshot("accepted", "a: allowed\nb: allowed");
        let root_text = root.to_str().unwrap().to_string();
        let text = failure(move || {
            assert_snapshot(
                (&root_text, 99, "accepted"),
                "a@0 b@0",
                [contract, contract, contract],
                "your limiter",
            )
        });
        assert!(
            text.contains("tests/snapshots/lesson_99_accepted.snap no longer holds the contract's"),
            "{text}"
        );
        std::fs::remove_dir_all(root).unwrap();
    }
}
