#!/usr/bin/env bash
# Measures each lesson's suite with automated mutants of its reference solution.
#
#   scripts/mutants.sh          every lesson
#   scripts/mutants.sh 02 03    some lessons
#
# cargo-mutants only mutates files it reaches from a crate's root, and the
# solutions are reached only from the lessons' tests. So this works in a
# scratch copy where the lessons' package has a library that includes each
# solution (over the std facade for concurrent lessons). Each lesson's mutants are then judged by that lesson's suite alone,
# with the reference as the subject: the learner-vs-reference comparisons are
# blind there (both sides carry the mutant), so what catches a mutant is the
# independent model, the invariants, the probes, the snapshots and loom.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

if ! cargo mutants --version >/dev/null 2>&1; then
    echo "installing cargo-mutants from crates.io ..." >&2
    cargo install --locked cargo-mutants
fi

lessons=("$@")
if [ ${#lessons[@]} -eq 0 ]; then
    # Every lesson of the catalog (a going-further solution is not a lesson).
    while read -r n; do
        lessons+=("$(printf '%02d' "$n")")
    done < <(sed -n 's/^number = \([0-9]*\)$/\1/p' "$root/lessons/lessons.toml")
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
git -C "$root" ls-files -z | (cd "$root" && xargs -0 cp --parents -t "$scratch")
# The lessons' package gets a library of its own there, which includes each
# solution: its mutants are then judged by that package's lesson tests.
{
    echo "//! Scaffold for mutation testing (scratch copy only)."
    for n in "${lessons[@]}"; do
        echo "#[doc(hidden)] #[path = \"\"] pub mod mutants_lesson_$n {"
        if grep -q "super::sync" "$root/solutions/lesson_$n.rs"; then
            echo "    pub mod sync { pub use kata::sync::std_backend::*; }"
        fi
        echo "    #[path = \"solutions/lesson_$n.rs\"] pub mod imp;"
        echo "}"
    done
} > "$scratch/mutants_scaffold.rs"
printf '\n[lib]\npath = "mutants_scaffold.rs"\n' >> "$scratch/Cargo.toml"

# The gallery's diffs are left out of the build (KATA_MISTAKES=off below): a
# mutant of a line a mistake's diff rests on would otherwise stop the build
# and count as unviable instead of caught or missed.
summary=()
for n in "${lessons[@]}"; do
    echo "== lesson $n" >&2
    out="$scratch/mutants-$n"
    (cd "$scratch" && KATA_SUBJECT=reference KATA_MISTAKES=off RUST_BACKTRACE=0 \
        cargo mutants --no-shuffle -j 1 --package ratelimit-kata \
        -f "solutions/lesson_$n.rs" -o "$out" -- --test "lesson_$n") || true
    dir="$out/mutants.out"
    count() {
        if [ -f "$dir/$1.txt" ]; then grep -c . "$dir/$1.txt" || true; else echo 0; fi
    }
    caught=$(count caught); missed=$(count missed); timeout=$(count timeout); unviable=$(count unviable)
    viable=$((caught + missed + timeout))
    summary+=("lesson $n: $((caught + timeout)) of $viable viable mutants caught ($timeout by timeout), $unviable unviable")
    if [ "$missed" -gt 0 ]; then
        summary+=("  survivors:")
        while read -r line; do summary+=("    $line"); done < "$dir/missed.txt"
    fi
done
printf '%s\n' "${summary[@]}"
