#!/usr/bin/env bash
# Runs chosen subjects of chosen lessons over and over, several at once and
# under load, and reports every run that ended by a signal (a crash), with
# its output. A maintainer's tool for faults that show once in many runs.
#
#   scripts/stress.sh [options] LESSON[:SUBJECT] ...
#
#   03                  every subject of lesson 03 (reference, stub, each
#                       mistake and alternative)
#   03:reference        one subject
#   07:mistake:api_key_trimmed
#
# Options:
#   --minutes M   stop starting runs after M minutes (default 30)
#   --runs N      stop after N runs (default: no limit but the time)
#   --jobs J      runs at once (default 2)
#   --load L      busy loops beside them, to shift every timing (default 1)
#   --threads T   test threads in each run (default: the test binary's, one a core)
#   --cores       let a crashed run dump core (where the kernel's
#                 core_pattern puts it), for gdb
#
# The test binaries are built once and run directly, as the self-check runs
# them. Each run has KATA_SUBJECT set and is killed after 15 minutes (a hang
# is the watchdog's business, not this script's). A crash's output is kept in
# target/stress/; the summary names each crash with its signal and the tests
# that had started and not finished.
set -eo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

minutes=30
runs=0
jobs=2
load=1
threads=""
cores=0
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="$2"; shift 2 ;;
        --runs) runs="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --load) load="$2"; shift 2 ;;
        --threads) threads="$2"; shift 2 ;;
        --cores) cores=1; shift ;;
        -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "stress.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [ ${#targets[@]} -eq 0 ]; then
    echo "stress.sh: name at least one lesson, as 03 or 03:reference (see --help)" >&2
    exit 2
fi

# Every subject a lesson compiles in: as the catalog finds them.
subjects_of() {
    local n="$1" f
    echo reference
    echo stub
    for f in mistakes/lesson_"$n"/*.diff; do
        [ -e "$f" ] || continue
        f="${f##*/}"
        echo "mistake:${f%.*}"
    done
    for f in tests/alternatives/lesson_"$n"/*.rs solutions/lesson_"$n"_*.rs; do
        [ -e "$f" ] || continue
        f="${f##*/}"
        f="${f%.rs}"
        echo "alternative:${f#lesson_"$n"_}"
    done
}

plan=()
lessons=()
for t in "${targets[@]}"; do
    n="${t%%:*}"
    n="$(printf '%02d' "$((10#$n))")"
    [ -f "tests/lesson_$n.rs" ] || { echo "stress.sh: there is no lesson $n" >&2; exit 2; }
    lessons+=("$n")
    if [[ "$t" == *:* ]]; then
        plan+=("$n ${t#*:}")
    else
        while read -r s; do plan+=("$n $s"); done < <(subjects_of "$n")
    fi
done

echo "building the lessons' tests ..." >&2
declare -A binary
while IFS=$'\t' read -r name exe; do
    binary[$name]="$exe"
done < <(cargo test --quiet --no-run --message-format=json \
    $(printf -- '--test lesson_%s ' $(printf '%s\n' "${lessons[@]}" | sort -u)) |
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and "test" in m["target"]["kind"]:
        print(m["target"]["name"] + "\t" + m["executable"])
')

for n in "${lessons[@]}"; do
    if [ -z "${binary[lesson_$n]:-}" ]; then
        echo "stress.sh: lesson_$n's tests did not build (see above)" >&2
        exit 2
    fi
done

out="target/stress"
mkdir -p "$out"
log="$(mktemp -d)"
burners=()
cleanup() {
    for p in "${burners[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$log"
}
trap cleanup EXIT
for _ in $(seq 1 "$load"); do
    (while :; do :; done) &
    burners+=("$!")
done

# One run: its exit status in $log/<id>.rc, its output in $log/<id>.out.
run_one() {
    local id="$1" n="$2" subject="$3"
    local args=(--format pretty)
    [ -n "$threads" ] && args+=(--test-threads "$threads")
    set +e
    [ "$cores" = 1 ] && ulimit -c unlimited
    KATA_SUBJECT="$subject" INSTA_UPDATE=no RUST_BACKTRACE=0 KATA_RESULTS="$log/$id.jsonl" \
        timeout --kill-after=10 900 "${binary[lesson_$n]}" "${args[@]}" \
        >"$log/$id.out" 2>&1 </dev/null
    echo $? >"$log/$id.rc.new"
    mv "$log/$id.rc.new" "$log/$id.rc"
}

# The tests a crashed run had started and not finished: the binary writes
# a line to KATA_RESULTS when each starts and when each ends.
unfinished() {
    local results="$1" t
    sed -n 's/^{"event":"started","name":"\([^"]*\)"}$/\1/p' "$results" |
        while read -r t; do
            grep -q "\"name\":\"$t\"" <(grep -v '"event":"started"' "$results") || echo "$t"
        done
}

started="$(date +%s)"
deadline=$((started + minutes * 60))
total=0
crashes=0
odd=0
declare -A running
report() {
    local id="$1" rc n subject
    rc="$(cat "$log/$id.rc")"
    n="${running[$id]%% *}"
    subject="${running[$id]#* }"
    unset "running[$id]"
    total=$((total + 1))
    # 124: stopped after 15 minutes, a hang and no crash; 128+N: ended by
    # signal N.
    if [ "$rc" -eq 124 ]; then
        echo "HUNG  lesson_$n $subject: still running after 15 minutes"
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 101 ] && [ "$rc" -le 128 ]; then
        # Neither passed (0) nor failed (101): it could not run at all.
        odd=$((odd + 1))
        echo "ODD   lesson_$n $subject: exit code $rc"
    elif [ "$rc" -gt 128 ]; then
        crashes=$((crashes + 1))
        local keep="$out/lesson_$n-${subject//:/-}-$id.log"
        cp "$log/$id.out" "$keep"
        echo "CRASH lesson_$n $subject: signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null || echo '?'))," \
            "running: $(unfinished "$log/$id.jsonl" | paste -sd, -); output in $keep"
    fi
    rm -f "$log/$id.out" "$log/$id.rc" "$log/$id.jsonl"
}

limit="${minutes} min"
[ "$runs" -gt 0 ] && limit="$limit or $runs runs"
echo "stress: ${#plan[@]} subject(s), $jobs at once, $load busy loop(s), for $limit" >&2
next=0
id=0
while :; do
    # Collect finished runs.
    for r in "${!running[@]}"; do
        [ -f "$log/$r.rc" ] && report "$r"
    done
    now="$(date +%s)"
    out_of_time=$((now >= deadline))
    out_of_runs=$((runs > 0 && id >= runs))
    if [ "$out_of_time" = 1 ] || [ "$out_of_runs" = 1 ]; then
        # Let the runs under way end (not the busy loops), and report them.
        for r in "${!running[@]}"; do
            while [ ! -f "$log/$r.rc" ]; do sleep 0.2; done
        done
        for r in "${!running[@]}"; do
            [ -f "$log/$r.rc" ] && report "$r"
        done
        break
    elif [ ${#running[@]} -lt "$jobs" ]; then
        entry="${plan[$((next % ${#plan[@]}))]}"
        next=$((next + 1))
        id=$((id + 1))
        running[$id]="$entry"
        run_one "$id" ${entry} &
        continue
    fi
    sleep 0.2
done
echo "stress: $total runs in $(( ($(date +%s) - started) / 60 )) min, $crashes ended by a signal" \
    "(scripts/stress.sh --minutes $minutes --jobs $jobs --load $load ${targets[*]})"
[ "$odd" -eq 0 ] || echo "stress: $odd run(s) could not run at all" >&2
[ "$crashes" -eq 0 ] && [ "$odd" -eq 0 ]
