//! The book's pages that come from `lessons/lessons.toml`: its table of
//! contents, `lessons/SUMMARY.md`, and each lesson's page of classic
//! mistakes, `lessons/mistakes/lesson_NN.md`.
//!
//! `cargo run -p kata-catalog --bin book-summary` prints the table of
//! contents; with `-- --write` it writes every one of those pages.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let write = std::env::args().nth(1).as_deref() == Some("--write");
    let catalog = match kata_catalog::Catalog::load(&root) {
        Ok(catalog) => catalog,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let summary = kata_catalog::summary(&catalog);
    if !write {
        print!("{summary}");
        return ExitCode::SUCCESS;
    }
    let mut pages = vec![("lessons/SUMMARY.md".to_string(), summary)];
    for lesson in &catalog.lessons {
        pages.push((
            kata_catalog::mistakes_page_file(lesson),
            kata_catalog::mistakes_page(lesson),
        ));
    }
    for (page, text) in pages {
        let path = root.join(&page);
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, text));
        if let Err(e) = written {
            eprintln!("cannot write {page}: {e}");
            return ExitCode::from(2);
        }
        eprintln!("wrote {page}");
    }
    ExitCode::SUCCESS
}
