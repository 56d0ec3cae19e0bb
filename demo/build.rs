//! For `cargo run -- serve`: compiles the layer of the kata's serving lesson
//! (the catalog's kind that serves; `lessons/lesson_NN.rs`, or the reference
//! with `KATA_DEMO_SUBJECT=reference`) into the `serve` binary, that file
//! only: another lesson's file may not compile yet. The kata is the one
//! `KATA_DEMO_ROOT` names (the runner's `--root`), or this crate's parent.

use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    println!("cargo::rerun-if-env-changed=KATA_DEMO_ROOT");
    println!("cargo::rerun-if-env-changed=KATA_DEMO_SUBJECT");
    println!("cargo::rerun-if-env-changed=KATA_DEMO_LESSON");
    println!("cargo::rustc-check-cfg=cfg(served_stack)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("run by cargo")).join("served.rs");
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo"));
    let root = std::env::var_os("KATA_DEMO_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join(".."));
    let root = match root.canonicalize() {
        Ok(r) => r,
        Err(e) => {
            println!("cargo::error=the kata's folder {}: {e}", root.display());
            return;
        }
    };
    println!(
        "cargo::rerun-if-changed={}",
        root.join(kata_catalog::FILE).display()
    );
    let catalog = match kata_catalog::Catalog::load(&root) {
        Ok(c) => c,
        Err(e) => {
            println!("cargo::error={e}");
            return;
        }
    };
    // `KATA_DEMO_LESSON`: the lesson whose whole stack is served as app
    // server processes (`serve --servers N`), else the lesson whose layer is.
    let stack = std::env::var("KATA_DEMO_LESSON")
        .ok()
        .filter(|n| !n.is_empty());
    let lesson = match &stack {
        Some(number) => catalog.lessons.iter().find(|l| {
            l.number.to_string() == *number && l.kind.serves() == Some(kata_catalog::Serves::Stack)
        }),
        None => catalog
            .lessons
            .iter()
            .find(|l| l.kind.serves() == Some(kata_catalog::Serves::Layer)),
    };
    let Some(lesson) = lesson else {
        println!(
            "cargo::error=no lesson of {} serves{}",
            root.display(),
            stack.map_or(String::new(), |n| format!(
                " as app servers with number {n}"
            ))
        );
        return;
    };
    let reference = std::env::var("KATA_DEMO_SUBJECT").as_deref() == Ok("reference");
    let file = if reference {
        lesson.reference_file()
    } else {
        lesson.learner_file()
    };
    let path = root.join(&file).to_string_lossy().replace('\\', "/");
    println!("cargo::rerun-if-changed={path}");
    let mut code = String::new();
    if stack.is_some() {
        println!("cargo::rustc-cfg=served_stack");
        let _ = writeln!(
            code,
            "/// The file served, as learners name it.\npub const FILE: &str = {file:?};\n\
             #[allow(unused_imports)]\npub mod sync {{\n    pub use kata::sync::std_backend::*;\n}}\n\
             #[path = {path:?}]\npub mod imp;\n\
             pub use imp::{{{ty} as Limiter, AsyncRateLimitLayer as Layer}};",
            ty = lesson.type_name,
        );
        kata_catalog::write_if_changed(&out, &code);
        return;
    }
    let _ = writeln!(
        code,
        "/// The file served, as learners name it.\npub const FILE: &str = {file:?};\n\
         /// The rule of the limiter behind it.\npub const ALGORITHM: kata::models::Algorithm = kata::models::Algorithm::{algorithm};\n\
         #[allow(unused_imports)]\npub mod sync {{\n    pub use kata::sync::std_backend::*;\n}}\n\
         #[path = {path:?}]\npub mod imp;\n\
         /// The served layer, over the demo's limiter, on the demo's clock.\n\
         pub fn layer(limiter: std::sync::Arc<crate::limiter::Metered>, policy: kata::http::Policy, keys: kata::http::KeyRule, clock: kata::http::MonotonicClock) \
         -> Result<imp::{ty}<crate::limiter::Metered, kata::http::MonotonicClock>, kata::http::PolicyError> {{\n    \
         imp::{ty}::new(limiter, policy, keys, clock)\n}}",
        ty = lesson.type_name,
        algorithm = lesson.algorithm,
    );
    kata_catalog::write_if_changed(&out, &code);
}
