//! The kata's modules, as their `use`s connect them, checked: no import
//! circles in any crate, the harness's modules in layers that only look
//! down ([`LAYERS`]), no kind of lesson importing another, and every module
//! of the harness listed where ARCHITECTURE.md lists them. A module's
//! tests (`mod tests`, inline or a file of their own) are left out: they
//! may use whatever they test with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The harness's top-level modules (`src/`), in layers from the bottom up:
/// a module may use its own layer's modules and those below, never one
/// above. In the layer of the kinds, a kind uses no other kind: what two
/// kinds share lives below them.
pub const LAYERS: &[(&str, &[&str])] = &[
    ("leaves", &["text", "time", "files", "subject", "trial"]),
    ("the contract's types", &["decision"]),
    ("the facade and what may be used", &["sync", "source"]),
    (
        "processes and threads watched",
        &["watchdog", "signals", "heartbeat"],
    ),
    ("the real servers subjects run on", &["infra"]),
    (
        "timelines and models",
        &["timeline", "models", "rules", "keys", "store"],
    ),
    (
        "drawings, generators and drivers",
        &["render", "gen", "drive", "kind"],
    ),
    ("scenarios and runs", &["scenarios", "run", "snapshot"]),
    ("the checks every limiter passes", &["checks"]),
    // What two kinds share: lesson 07's layer and lesson 08's Redis
    // limiter, whose contracts and checks lesson 10's kind uses again, and
    // virtual time (over lesson 07's clock), for the kinds whose subjects
    // wait.
    (
        "the layer, the Redis limiter and virtual time, which kinds share",
        &["layer", "redis_limiter", "virtual_time"],
    ),
    // Every kind's module (`Kind::module` of the catalog's kinds): a new
    // kind is in its layer without a line here.
    ("the kinds", &[]),
    (
        "what is asked of the kinds and the macros every lesson's tests expand",
        &["kinds", "macros"],
    ),
];

/// The layer of [`LAYERS`] whose modules are kinds of lesson.
const KINDS: &str = "the kinds";

/// The kinds that still use another kind, and the kinds each uses: what
/// they share is still to be moved below the kinds. The check fails on a
/// use of a kind by a kind not listed here, and on a listing no use needs,
/// so that the list only shrinks.
pub const NOT_YET_BELOW: &[(&str, &[&str])] = &[];

/// The folders whose code decides nothing by naming a kind of lesson: what
/// the runner, the self-check, the bench and the demo do differently for a
/// kind is the kind's own (a catalog fact, or a function of the kind in the
/// harness, through `kata::kinds`).
pub const KIND_BLIND: [&str; 4] = ["runner", "class-view", "bench", "demo"];

/// The crates whose modules must not import in a circle.
pub const CRATES: [&str; 6] = [
    "src",
    "runner/src",
    "class-view/src",
    "catalog/src",
    "demo/src",
    "bench/src",
];

/// A crate's modules (one per file, tests left out) and, for each, the
/// modules it uses.
#[derive(Debug, Default)]
pub struct Graph {
    pub modules: BTreeMap<String, PathBuf>,
    pub uses: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    /// The graph of the crate whose root folder is `root` (`src/`).
    pub fn of(root: &Path) -> Graph {
        let mut graph = Graph::default();
        let mut files = Vec::new();
        crate::problems::walk(root, &mut files);
        for file in files
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        {
            let Ok(relative) = file.strip_prefix(root) else {
                continue;
            };
            let mut path: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(
                path.last().map(String::as_str),
                Some("mod" | "lib" | "main")
            ) {
                path.pop();
            }
            // A binary of its own (`src/bin/x.rs`) is a crate root, not a module.
            if path.first().is_some_and(|p| p == "bin") || path.iter().any(|p| p == "tests") {
                continue;
            }
            graph.modules.insert(path.join("::"), file);
        }
        for (module, file) in &graph.modules {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let used = paths(&without_tests(&text))
                .into_iter()
                .filter_map(|p| resolve(&p, module, &graph.modules))
                .filter(|m| m != module)
                .collect();
            graph.uses.insert(module.clone(), used);
        }
        graph
    }

    /// The uses between modules neither of which is inside the other (a
    /// module and its parent may use each other: the parent declares it).
    fn across(&self) -> BTreeMap<&str, Vec<&str>> {
        self.uses
            .iter()
            .map(|(from, to)| {
                let to = to
                    .iter()
                    .filter(|t| !inside(from, t) && !inside(t, from))
                    .map(String::as_str)
                    .collect();
                (from.as_str(), to)
            })
            .collect()
    }

    /// The import circles: each a set of modules that reach each other
    /// (strongly connected, Tarjan's), in order.
    pub fn circles(&self) -> Vec<Vec<String>> {
        struct Search<'g> {
            edges: BTreeMap<&'g str, Vec<&'g str>>,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            found: Vec<Vec<String>>,
        }
        fn visit<'g>(s: &mut Search<'g>, v: &'g str) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            for w in s.edges.get(v).cloned().unwrap_or_default() {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.stack.contains(&w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let at = s.stack.iter().rposition(|m| *m == v).expect("on the stack");
                let mut circle: Vec<String> = s.stack.drain(at..).map(String::from).collect();
                if circle.len() > 1 {
                    circle.sort();
                    s.found.push(circle);
                }
            }
        }
        let mut search = Search {
            edges: self.across(),
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            found: Vec::new(),
        };
        for module in self.modules.keys() {
            if !search.index.contains_key(module.as_str()) {
                visit(&mut search, module);
            }
        }
        search.found
    }
}

/// Whether module `inner` is `outer` or inside it.
fn inside(inner: &str, outer: &str) -> bool {
    inner == outer || inner.starts_with(&format!("{outer}::"))
}

/// `text` up to its tests (`#[cfg(test)]` or any `cfg` naming `test`,
/// before `mod tests`), each line without its `//` comment.
fn without_tests(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if trimmed.starts_with("#[cfg(")
            && trimmed.contains("test")
            && lines
                .peek()
                .is_some_and(|l| l.trim().starts_with("mod tests"))
        {
            break;
        }
        let code = line.find("//").map_or(line, |at| &line[..at]);
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every path of `text` that starts at the crate's root or a module's
/// parent: each `use` tree expanded (`use crate::a::{b, c::d}` gives
/// `crate::a::b` and `crate::a::c::d`), and each path written inline
/// (`crate::a::f()`, a macro's `$crate::a::B`).
fn paths(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in text.match_indices("use ") {
        if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let rest = &text[at + 4..];
        let tree = rest[..rest.find(';').unwrap_or(rest.len())].trim();
        if ["crate::", "super::", "self::", "$crate::"]
            .iter()
            .any(|p| tree.starts_with(p))
        {
            expand(tree, "", &mut found);
        }
    }
    for start in ["crate::", "super::"] {
        for (at, _) in text.match_indices(start) {
            if text[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = text[at..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push(path.trim_end_matches(':').to_string());
        }
    }
    found
}

/// The paths of a `use` tree, after `prefix`.
fn expand(tree: &str, prefix: &str, out: &mut Vec<String>) {
    let tree = tree.trim().trim_start_matches('$');
    let joined = |p: &str| {
        if prefix.is_empty() {
            p.to_string()
        } else {
            format!("{prefix}::{p}")
        }
    };
    let Some(open) = tree.find('{') else {
        let path = tree.split_whitespace().next().unwrap_or_default();
        out.push(joined(path.trim_end_matches("::*").trim_end_matches(':')));
        return;
    };
    let head = joined(tree[..open].trim().trim_end_matches(':'));
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(&inner[from..i], &head, out);
                from = i + 1;
            }
            _ => {}
        }
    }
    if from < inner.len() {
        expand(&inner[from..], &head, out);
    }
}

/// The module of `modules` that `path`, written in `module`, names: the
/// longest one its segments start with.
fn resolve(path: &str, module: &str, modules: &BTreeMap<String, PathBuf>) -> Option<String> {
    let mut segments = path.split("::").filter(|s| !s.is_empty()).peekable();
    let mut full: Vec<&str> = match segments.peek() {
        Some(&"crate") => {
            segments.next();
            Vec::new()
        }
        Some(&"super" | &"self") => module.split("::").filter(|s| !s.is_empty()).collect(),
        _ => return None,
    };
    while let Some(&s) = segments.peek() {
        match s {
            "super" => {
                full.pop();
            }
            "self" => {}
            _ => break,
        }
        segments.next();
    }
    full.extend(segments);
    (0..=full.len())
        .rev()
        .map(|n| full[..n].join("::"))
        .find(|m| modules.contains_key(m))
        .filter(|m| !m.is_empty())
}

/// Every way the kata's modules break the rules above, each a sentence
/// that names the file to fix.
pub fn problems(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for krate in CRATES {
        let graph = Graph::of(&root.join(krate));
        for circle in graph.circles() {
            found.push(format!(
                "{krate}: the modules {} import each other in a circle; move what they share \
                 below them",
                circle.join(", ")
            ));
        }
    }
    found.extend(kinds_named(root));
    let harness = Graph::of(&root.join("src"));
    found.extend(layer_problems(&harness));
    found.extend(unlisted_modules(root, &harness));
    found.extend(crate::sizes::problems(root, &CRATES));
    found
}

/// The harness's modules that are in no layer, use a layer above theirs,
/// or, being kinds, use another kind.
fn layer_problems(harness: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    let layer_of = |module: &str| {
        let top = module.split("::").next().unwrap_or(module);
        LAYERS.iter().position(|(name, modules)| {
            modules.contains(&top)
                || *name == KINDS && crate::Kind::ALL.iter().any(|k| k.module() == top)
        })
    };
    for module in harness
        .modules
        .keys()
        .filter(|m| !m.contains("::") && !m.is_empty())
    {
        if layer_of(module).is_none() {
            found.push(format!(
                "src/: the module `{module}` is in no layer (LAYERS in catalog/src/layers.rs) \
                 and is no kind of the catalog (Kind::module)"
            ));
        }
    }
    let mut edges = BTreeSet::new();
    for (from, to) in &harness.uses {
        for to in to {
            let top = |m: &str| m.split("::").next().unwrap_or(m).to_string();
            let (a, b) = (top(from), top(to));
            if a != b {
                edges.insert((a, b, from.clone(), to.clone()));
            }
        }
    }
    let mut said = BTreeSet::new();
    let mut needed = BTreeSet::new();
    for (a, b, from, to) in edges {
        let (Some(la), Some(lb)) = (layer_of(&a), layer_of(&b)) else {
            continue;
        };
        let why = if lb > la {
            format!(
                "uses `{b}`, a layer above it ({} over {})",
                LAYERS[lb].0, LAYERS[la].0
            )
        } else if la == lb && LAYERS[la].0 == KINDS {
            let listed = NOT_YET_BELOW
                .iter()
                .any(|(kind, uses)| *kind == a && uses.contains(&b.as_str()));
            if listed {
                needed.insert((a.clone(), b.clone()));
                continue;
            }
            format!("is a kind and uses another kind, `{b}`: what two kinds share lives below them")
        } else {
            continue;
        };
        if said.insert((a.clone(), b.clone())) {
            found.push(format!(
                "src/: `{a}` {why} (first seen: `{from}` uses `{to}`)"
            ));
        }
    }
    found
}

/// The files of [`KIND_BLIND`] (their tests left out) that name a kind of
/// the catalog (`Kind::HttpLayer`).
fn kinds_named(root: &Path) -> Vec<String> {
    let variants: Vec<String> = crate::Kind::ALL
        .iter()
        .map(|k| format!("Kind::{k:?}"))
        .collect();
    let mut found = Vec::new();
    let mut files = Vec::new();
    for dir in KIND_BLIND {
        crate::problems::walk(&root.join(dir), &mut files);
    }
    files.sort();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let relative = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .replace('\\', "/");
        if relative.contains("/tests/")
            || relative.ends_with("/tests.rs")
            || relative.contains("/target/")
        {
            continue;
        }
        let text = without_tests(&std::fs::read_to_string(file).unwrap_or_default());
        let Some(named) = variants.iter().find(|v| text.contains(v.as_str())) else {
            continue;
        };
        found.push(format!(
            "{relative}: names `{named}`: what it decides for that kind belongs to the kind \
             (a fact of kata_catalog::Kind, or the kind's own function through kata::kinds)"
        ));
    }
    found
}

/// The harness's top-level modules that ARCHITECTURE.md's table of them
/// and `src/lib.rs`'s index leave out, and what they list that is not one.
fn unlisted_modules(root: &Path, harness: &Graph) -> Vec<String> {
    let mut found = Vec::new();
    let top: BTreeSet<&str> = harness
        .modules
        .keys()
        .filter(|m| !m.contains("::") && !m.is_empty())
        .map(String::as_str)
        .collect();
    let architecture = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    let table: String = architecture
        .lines()
        .skip_while(|l| !l.starts_with("| module of the harness"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(1).unwrap_or_default().to_string() + "\n")
        .collect();
    let index = std::fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    let index: String = index.lines().take_while(|l| l.starts_with("//!")).collect();
    for module in &top {
        let file = if root.join(format!("src/{module}.rs")).is_file() {
            format!("`{module}.rs`")
        } else {
            format!("`{module}/`")
        };
        if !table.contains(&file) {
            found.push(format!(
                "ARCHITECTURE.md: the table of the harness's modules does not list {file}"
            ));
        }
        if !index.contains(&format!("[`{module}`]")) && !index.contains(&format!("`{module}`")) {
            found.push(format!("src/lib.rs: the index does not name `{module}`"));
        }
    }
    for listed in table.split('`').skip(1).step_by(2) {
        let name = listed.trim_end_matches(".rs").trim_end_matches('/');
        if (listed.ends_with(".rs") || listed.ends_with('/')) && !top.contains(name) {
            found.push(format!(
                "ARCHITECTURE.md: the table of the harness's modules lists `{listed}`, \
                 which is no module of src/"
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kata_root() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// The kata's modules keep to their layers, import in no circle, and
    /// are listed where the docs list them.
    #[test]
    fn the_modules_keep_to_their_layers() {
        let found = problems(&kata_root());
        assert!(found.is_empty(), "\n{}", found.join("\n"));
    }

    /// A `use` tree gives each of its paths (and, read inline, its head).
    #[test]
    fn use_trees_expand_to_every_path() {
        let text = "use crate::a::{b, c::{d, e as f}, g::*};\nuse std::x;\n\
                    fn h() { crate::i::j(); $crate::k::L; my_crate::m(); }\n";
        let mut got = paths(text);
        got.sort();
        assert_eq!(
            got,
            [
                "crate::a",
                "crate::a::b",
                "crate::a::c::d",
                "crate::a::c::e",
                "crate::a::g",
                "crate::i::j",
                "crate::k::L"
            ]
        );
    }

    /// A circle, an upward use and a kind using a kind are each named; a
    /// module and its parent using each other are not a circle.
    #[test]
    fn names_circles_and_uses_that_look_up_or_sideways() {
        let dir = std::env::temp_dir().join(format!("kata-layers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let put = |path: &str, text: &str| {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        };
        put("lib.rs", "mod time;\nmod text;\nmod http;\nmod redis;\n");
        put("time.rs", "use crate::http::Clock;\n");
        put("text.rs", "use super::time::T;\n");
        put("http/mod.rs", "mod drive;\nuse drive::D;\n");
        put(
            "http/drive.rs",
            "use super::Policy;\nuse crate::redis::Rule;\n",
        );
        put(
            "redis/mod.rs",
            "use crate::http::drive::D;\n\n#[cfg(test)]\nmod tests {\n    use crate::time::x;\n}\n",
        );
        let graph = Graph::of(&dir);
        assert_eq!(
            graph.circles(),
            [vec!["http::drive".to_string(), "redis".to_string()]]
        );
        assert_eq!(
            graph.uses["redis"],
            BTreeSet::from(["http::drive".to_string()])
        );
        assert_eq!(graph.uses["time"], BTreeSet::from(["http".to_string()]));
        assert_eq!(graph.uses["text"], BTreeSet::from(["time".to_string()]));
        assert_eq!(
            layer_problems(&graph),
            [
                "src/: `http` is a kind and uses another kind, `redis`: what two kinds share \
                 lives below them (first seen: `http::drive` uses `redis`)",
                "src/: `redis` is a kind and uses another kind, `http`: what two kinds share \
                 lives below them (first seen: `redis` uses `http::drive`)",
                "src/: `time` uses `http`, a layer above it (the kinds over leaves) \
                 (first seen: `time` uses `http`)",
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A module the docs leave out, and one they list that is gone, are
    /// named.
    #[test]
    fn names_a_module_the_docs_leave_out() {
        let dir = std::env::temp_dir().join(format!("kata-listed-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("src/kind")).unwrap();
        std::fs::write(
            dir.join("src/lib.rs"),
            "//! [`time`] and `kind`
mod time;
",
        )
        .unwrap();
        std::fs::write(dir.join("src/time.rs"), "").unwrap();
        std::fs::write(dir.join("src/text.rs"), "").unwrap();
        std::fs::write(dir.join("src/kind/mod.rs"), "").unwrap();
        std::fs::write(
            dir.join("ARCHITECTURE.md"),
            "| module of the harness | what |\n|---|---|\n| `time.rs`, `kind/` | x |\n\
             | `gone.rs` | y |\n",
        )
        .unwrap();
        let found = unlisted_modules(&dir, &Graph::of(&dir.join("src")));
        assert_eq!(
            found,
            [
                "ARCHITECTURE.md: the table of the harness's modules does not list `text.rs`",
                "src/lib.rs: the index does not name `text`",
                "ARCHITECTURE.md: the table of the harness's modules lists `gone.rs`, which is \
                 no module of src/",
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A runner, bench or demo file that names a kind is named; its tests
    /// may name kinds.
    #[test]
    fn names_a_file_that_decides_by_naming_a_kind() {
        let dir = std::env::temp_dir().join(format!("kata-blind-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in [
            (
                "runner/src/serve.rs",
                "if kind == kata_catalog::Kind::HttpLayer {}\n",
            ),
            (
                "runner/src/fine.rs",
                "if kind.serves().is_some() {}\n#[cfg(test)]\nmod tests {\n    Kind::Limiter;\n}\n",
            ),
            ("demo/tests/t.rs", "Kind::Limiter\n"),
            ("bench/build.rs", "match kind.measured_as() {}\n"),
        ] {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        assert_eq!(
            kinds_named(&dir),
            [
                "runner/src/serve.rs: names `Kind::HttpLayer`: what it decides for that kind \
                 belongs to the kind (a fact of kata_catalog::Kind, or the kind's own function \
                 through kata::kinds)",
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
