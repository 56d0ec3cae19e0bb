//! For `cargo run -- bench N`: with `KATA_BENCH_LESSON=N`, compiles the
//! learner's `lessons/lesson_NN.rs` (that one only: another lesson's file may
//! not compile yet), the lesson's reference and its going-further solutions
//! (`solutions/lesson_NN_<name>.rs`) into the `versus` binary.
//! Without it, the binary has no learner to measure and says so.

use std::fmt::Write as _;
use std::path::PathBuf;

use kata_catalog::Measured;

fn main() {
    println!("cargo::rerun-if-env-changed=KATA_BENCH_LESSON");
    println!("cargo::rerun-if-changed=../lessons/lessons.toml");
    // A going-further solution added or removed.
    println!("cargo::rerun-if-changed=../solutions");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("run by cargo")).join("versus.rs");
    let kata = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo"))
        .join("..")
        .canonicalize()
        .expect("the kata's folder");
    let mut code = String::new();
    let wanted = std::env::var("KATA_BENCH_LESSON")
        .ok()
        .and_then(|n| n.trim().parse::<u32>().ok());
    let lesson = match wanted {
        None => None,
        Some(n) => match kata_catalog::Catalog::load(&kata) {
            Ok(catalog) => catalog.lesson(n).cloned(),
            Err(e) => {
                println!("cargo::error={e}");
                return;
            }
        },
    };
    let measured = lesson.as_ref().map(|l| (l, l.kind.measured_as()));
    match measured {
        None => code.push_str(
            "/// No lesson was asked for.\npub const LESSON: Option<Lesson> = None;\npub const LAYER: Option<LayerLesson> = None;\n",
        ),
        Some((_, None)) => {
            code.push_str(
                "/// Not measured here.\npub const LESSON: Option<Lesson> = None;\npub const LAYER: Option<LayerLesson> = None;\n",
            )
        }
        Some((l, Some(Measured::Layer))) => {
            code.push_str("/// Not a limiter: see `LAYER`.\npub const LESSON: Option<Lesson> = None;\n");
            let body = format!(
                "pub fn build() -> Result<crate::layer::Svc, kata::http::PolicyError> {{
        use crate::layer;
        let layer = imp::{ty}::new(
            layer::limiter(),
            layer::policy(),
            kata::http::KeyRule::by_address(),
            kata::http::MonotonicClock::new(),
        )?;
        Ok(tower::util::BoxCloneService::new(tower::Layer::layer(&layer, layer::inner())))
    }}",
                ty = l.type_name
            );
            let further = learner_and_reference(&mut code, &kata, l, &body);
            let _ = writeln!(
                code,
                "pub const LAYER: Option<LayerLesson> = Some(LayerLesson {{ number: {}, title: {:?}, learner: learner::build, reference: reference::build, further: &[{further}] }});",
                l.number, l.title
            );
        }
        Some((l, Some(Measured::Decisions { exclusive, arguments }))) => {
            // How one decision is asked of the learner's type: lesson 01's
            // `check(&mut self)` behind a lock, `RateLimiter::check` as is.
            let (holder, access, wrap) = if exclusive {
                (
                    format!("std::sync::Mutex<imp::{}>", l.type_name),
                    "self.0.lock().unwrap_or_else(|e| e.into_inner())",
                    "Driven(std::sync::Mutex::new(l))",
                )
            } else {
                (format!("imp::{}", l.type_name), "self.0", "Driven(l)")
            };
            let body = format!(
                "pub struct Driven({holder});

    impl crate::Contender for Driven {{
        fn decide(&self, key: &String, now: u64) -> bool {{
            #[allow(unused_imports)]
            use kata::RateLimiter as _;
            {access}.check(key, kata::Timestamp::from_nanos(now)).is_allowed()
        }}
    }}

    pub fn build(limit: u64, period: std::time::Duration) -> Result<Box<dyn crate::Contender>, kata::ConfigError> {{
        imp::{ty}::new({arguments}).map(|l| Box::new({wrap}) as Box<dyn crate::Contender>)
    }}",
                ty = l.type_name
            );
            let further = learner_and_reference(&mut code, &kata, l, &body);
            code.push_str("/// Not a layer.\npub const LAYER: Option<LayerLesson> = None;\n");
            let _ = writeln!(
                code,
                "pub const LESSON: Option<Lesson> = Some(Lesson {{ number: {}, title: {:?}, algorithm: {:?}, shared: {}, learner: learner::build, reference: reference::build, further: &[{further}] }});",
                l.number,
                l.title,
                l.algorithm,
                l.kind.concurrent()
            );
        }
    }
    kata_catalog::write_if_changed(&out, &code);
}

/// Modules `learner`, `reference` and one per going-further solution
/// (`solutions/lesson_NN_<name>.rs`, as `further_<name>`), each the file
/// compiled as `imp` (over std's primitives) followed by `body`; and the
/// going-further ones as the entries of a slice: `("<name>", further_<name>::build),`.
fn learner_and_reference(
    code: &mut String,
    kata: &std::path::Path,
    lesson: &kata_catalog::Lesson,
    body: &str,
) -> String {
    let root = kata.to_string_lossy().replace('\\', "/");
    let further: Vec<(String, String)> = lesson
        .alternatives
        .iter()
        .filter(|a| a.path.starts_with("solutions/"))
        .map(|a| (format!("further_{}", a.name), a.path.clone()))
        .collect();
    let mut entries = String::new();
    for (module, file) in [
        ("learner".to_string(), lesson.learner_file()),
        ("reference".to_string(), lesson.reference_file()),
    ]
    .into_iter()
    .chain(further.iter().cloned())
    {
        let _ = writeln!(
            code,
            "pub mod {module} {{
    #[allow(unused_imports)]
    pub mod sync {{
        pub use crate::sync::*;
    }}
    #[path = {path:?}]
    #[allow(dead_code)]
    pub mod imp;

    {body}
}}",
            path = format!("{root}/{file}"),
        );
        if let Some(name) = module.strip_prefix("further_") {
            let _ = write!(entries, "({name:?}, {module}::build), ");
        }
    }
    entries
}
