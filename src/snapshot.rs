//! A drawing compared with its committed snapshot, which must hold the
//! contract's drawing.

/// Compares a subject's drawing of a named timeline with the committed
/// snapshot `tests/snapshots/lesson_NN_<name>.snap` (`root` is the kata's
/// folder), which must hold the contract's drawing: accepting a wrong
/// drawing as the new snapshot cannot make this pass. The drawings are the
/// subject's, the reference's and the model's; the last two must agree.
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
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(&dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(description);
    if tested != contract {
        println!(
            "{whose} draws timeline {name} differently from the reference (diff below: - is the \
             reference, + is yours). Fix your code rather than accepting the new drawing: \
             the tests also check that the committed snapshot is the reference's.\n\
             replay it beside the reference's answers:\n  cargo run -- compare {number} {name}"
        );
    }
    settings.bind(|| insta::assert_snapshot!(snapshot.as_str(), tested));
    let file = format!("{dir}/{snapshot}.snap");
    let committed = std::fs::read_to_string(&file).unwrap_or_default();
    let body = snapshot_body(&committed);
    assert!(
        body == contract.trim_end(),
        "tests/snapshots/{snapshot}.snap no longer holds the contract's timeline (was a wrong \
         run accepted as the snapshot?). Restore it with `git checkout tests/snapshots/{snapshot}.snap`."
    );
}

/// The body of an insta snapshot file (what follows its `---` header).
fn snapshot_body(file: &str) -> &str {
    let mut parts = file.splitn(3, "---\n");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(""), Some(_header), Some(body)) => body.trim_end(),
        _ => file.trim_end(),
    }
}
