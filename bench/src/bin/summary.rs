//! The summary table: ns per decision from criterion's last run, the ratio to
//! governor measured in the same run, and bytes per key after inserting
//! 1,000,000 keys of 13 bytes (measured here, with a counting allocator).
//!
//! With `layer`, the table of lesson 07's layer instead: ns per request
//! through each layer on the same service, from criterion's last run of
//! `--bench layer`, and what each adds to the service alone; with
//! `inflight`, lesson 12's concurrency limit and shedder beside tower's, from
//! `--bench inflight`, the same way.
//!
//! `scripts/bench.sh` runs the benchmarks, then this.

use std::path::PathBuf;

use kata::memory::Counting;
use ratelimit_kata_bench::{contenders, keys};

/// The harness's counting allocator: the bytes held at any moment.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

const GROUPS: [(&str, &str); 5] = [
    ("hot-key", "1 hot key"),
    ("keys-10k", "10k keys"),
    ("keys-1m", "1M keys"),
    ("two-threads", "2 threads, 1 key"),
    ("two-threads-10k", "2 threads, 10k keys"),
];

fn criterion_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")));
    target.join("criterion")
}

/// The median ns per iteration criterion estimated, if it ran that benchmark.
fn median(group: &str, name: &str) -> Option<f64> {
    let path = criterion_dir()
        .join(group)
        .join(name)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let json: serde_json::Value = serde_json::from_str(&text).ok()?;
    json["median"]["point_estimate"].as_f64()
}

/// The layers of `--bench layer`, as the table names them.
const LAYERS: [(&str, &str); 5] = [
    ("no-layer", "the service alone"),
    (
        "two-headers-only",
        "two headers only: `RateLimit` and `RateLimit-Policy` inserted, their values built once, no key, clock or limiter",
    ),
    (
        "tower-governor",
        "tower_governor, its default (no rate-limit headers)",
    ),
    (
        "07-reference-layer",
        "07 reference (`RateLimit` and `RateLimit-Policy` on every response)",
    ),
    (
        "tower-governor-headers",
        "tower_governor with `use_headers()` (its `x-ratelimit-*` headers)",
    ),
];

/// The contenders of `--bench inflight`, as the table names them.
const INFLIGHT: [(&str, &str); 6] = [
    ("no-limit", "the service alone"),
    (
        "body-held-only",
        "the body held only: each answer's body wrapped by `hold_until_done`, holding nothing, no permits",
    ),
    (
        "tower-concurrency-limit",
        "tower's `ConcurrencyLimit` (its permit given back when the response future completes)",
    ),
    (
        "12-concurrency-limit",
        "12 reference `ConcurrencyLimitLayer` (its permit held until the body has ended)",
    ),
    (
        "tower-load-shed",
        "tower's `load_shed` over `ConcurrencyLimit`",
    ),
    (
        "12-shed",
        "12 reference `ShedLayer` (a permit and a key's count, held until the body has ended)",
    ),
];

/// ns per request through each of `rows` on the same service, and what
/// each adds to the first, the service alone.
fn added_table(group: &str, rows: &[(&str, &str)]) {
    let bare = median(group, rows[0].0);
    println!("| on the same service | ns per request | added to the service alone |");
    println!("|---|---|---|");
    for (i, (name, label)) in rows.iter().enumerate() {
        match (median(group, name), bare) {
            (Some(ns), _) if i == 0 => println!("| {label} | {ns:.0} | |"),
            (Some(ns), Some(bare)) => println!("| {label} | {ns:.0} | {:.0} |", ns - bare),
            (Some(ns), None) => println!("| {label} | {ns:.0} | not measured |"),
            (None, _) => println!("| {label} | not measured | |"),
        }
    }
}

fn main() {
    match std::env::args().nth(1).as_deref() {
        Some("layer") => return added_table("layer", &LAYERS),
        Some("inflight") => return added_table("inflight", &INFLIGHT),
        _ => {}
    }
    let million = keys(1_000_000);
    let names: Vec<&str> = contenders().iter().map(|(n, _)| *n).collect();
    let mut bytes_per_key = Vec::new();
    for name in &names {
        let before = Counting::held();
        let (_, limiter) = contenders()
            .into_iter()
            .find(|(n, _)| n == name)
            .expect("a contender");
        for (i, key) in million.iter().enumerate() {
            limiter.decide(key, i as u64);
        }
        let after = Counting::held();
        bytes_per_key.push(after.saturating_sub(before) as f64 / million.len() as f64);
        drop(limiter);
    }

    print!("| limiter |");
    for (_, label) in GROUPS {
        print!(" {label}: ns (× governor) |");
    }
    println!(" bytes per key at 1M keys |");
    println!("|---|{}---|", "---|".repeat(GROUPS.len()));
    for (i, name) in names.iter().enumerate() {
        let label = match *name {
            "governor" => "governor (`FakeRelativeClock`)",
            "governor-real-clock" => "governor (its default clock)",
            other => other,
        };
        print!("| {label} |");
        for (group, _) in GROUPS {
            match (median(group, name), median(group, "governor")) {
                (Some(ns), Some(base)) => print!(" {ns:.1} ({:.2}×) |", ns / base),
                (Some(ns), None) => print!(" {ns:.1} |"),
                _ => print!(" not measured |"),
            }
        }
        println!(" {:.0} |", bytes_per_key[i]);
    }
}
