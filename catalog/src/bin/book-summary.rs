//! Prints the book's table of contents for `lessons/SUMMARY.md`, from
//! `lessons/lessons.toml`: `cargo run -p kata-catalog --bin book-summary > lessons/SUMMARY.md`.

fn main() -> std::process::ExitCode {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match kata_catalog::Catalog::load(&root) {
        Ok(catalog) => {
            print!("{}", kata_catalog::summary(&catalog));
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::ExitCode::from(2)
        }
    }
}
