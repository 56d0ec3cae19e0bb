//! Checks the built book (`mdbook build` writes `book/`): every link of every
//! page must point at a file. Links to the kata's own files (a lesson's
//! checks, its mistakes) resolve from `book/` inside the checkout, where the
//! book is read.

fn main() -> std::process::ExitCode {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let problems = kata_catalog::book_problems(&root);
    for p in &problems {
        println!("{p}");
    }
    if problems.is_empty() {
        println!("the book's links all point at files");
        std::process::ExitCode::SUCCESS
    } else {
        println!("the book has {} broken links", problems.len());
        std::process::ExitCode::FAILURE
    }
}
