#!/usr/bin/env bash
# Measures every contender with criterion, then prints the summary table
# (ns per decision, ratio to governor from the same run, bytes per key).
#   scripts/bench.sh            all benchmarks
#   scripts/bench.sh hot-key    only groups whose name matches
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p ratelimit-kata-bench --bench limiters -- "${1:-}"
cargo run --release -q -p ratelimit-kata-bench --bin summary
