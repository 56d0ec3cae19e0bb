#!/usr/bin/env bash
# Measures every contender with criterion, then prints the summary table
# (ns per decision, ratio to governor from the same run, bytes per key) and
# writes it into bench/README.md, between its markers.
#   scripts/bench.sh            all benchmarks; the page's table is rewritten
#   scripts/bench.sh hot-key    only groups whose name matches; the page is
#                               left as it is (its table is of a whole run)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo bench -p ratelimit-kata-bench --bench limiters -- "${1:-}"
table="$(mktemp)"
trap 'rm -f "$table"' EXIT
cargo run --release -q -p ratelimit-kata-bench --bin summary | tee "$table"
if [ -z "${1:-}" ]; then
    scripts/bench-table.sh bench/README.md "$table"
    echo "bench/README.md: the table of every limiter, side by side, is this run's"
fi
