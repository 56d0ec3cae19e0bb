#!/usr/bin/env bash
# Measures, then writes each table it measured into bench/README.md, in
# place of the last run's (between the table's markers). Each table is one
# whole run of its benchmark.
#   scripts/bench.sh                  every table: limiters, layer, inflight, memory, redis
#   scripts/bench.sh limiters layer   only those
# limiters: every limiter beside governor (criterion, then the summary table
#           of ns, ratios to governor from the same run and bytes per key)
# layer:    lesson 07's layer beside tower_governor on the same service
# inflight: lesson 12's concurrency limit and shedder beside tower's
# memory:   lesson 09's bounded stores under a flood of a million keys
# redis:    lessons 08 and 10 on a redis-server of its own, beside
#           redis-benchmark (needs redis-server and redis-benchmark)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$#" -eq 0 ]; then
    set -- limiters layer inflight memory redis
fi
for table in "$@"; do
    case "$table" in
        limiters | layer | inflight | memory | redis) ;;
        *)
            echo "scripts/bench.sh: no table \"$table\"; the tables are limiters, layer, inflight, memory and redis" >&2
            exit 2
            ;;
    esac
done
if [[ " $* " == *" redis "* ]]; then
    for tool in redis-server redis-benchmark; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "scripts/bench.sh: the redis table needs $tool (Debian: apt-get install redis-server); nothing measured" >&2
            exit 1
        fi
    done
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
summary() {
    cargo run --release -q -p ratelimit-kata-bench --bin summary -- "$@"
}
for table in "$@"; do
    echo "== $table"
    case "$table" in
        limiters)
            cargo bench -p ratelimit-kata-bench --bench limiters
            summary > "$work/table"
            ;;
        layer | inflight)
            cargo bench -p ratelimit-kata-bench --bench "$table"
            summary "$table" > "$work/table"
            ;;
        memory | redis)
            # These print their table themselves, among other lines.
            cargo bench -p ratelimit-kata-bench --bench "$table" | tee "$work/printed"
            grep '^|' "$work/printed" > "$work/table" || true
            ;;
    esac
    cat "$work/table"
    scripts/bench-table.sh bench/README.md "$table" "$work/table"
    echo "bench/README.md: the table \"$table\" is this run's"
done
