#!/usr/bin/env bash
# Puts the table in TABLE_FILE into PAGE, in place of the lines between its
# markers (`<!-- scripts/bench.sh writes the table below… -->` and
# `<!-- end of the table scripts/bench.sh writes -->`). A page without both
# markers is left as it is, and the script says so and fails.
#   scripts/bench-table.sh PAGE TABLE_FILE
set -euo pipefail
page="$1" table="$2"
begin='<!-- scripts/bench.sh writes the table below'
end='<!-- end of the table scripts/bench.sh writes -->'
if ! grep -qF "$begin" "$page" || ! grep -qF "$end" "$page"; then
    echo "$page has no markers for the table (\"$begin …\" and \"$end\"); not written" >&2
    exit 1
fi
next="$(mktemp)"
awk -v table="$table" -v begin="$begin" -v end="$end" '
    index($0, begin) == 1 { print; while ((getline line < table) > 0) print line; skipping = 1; next }
    index($0, end) == 1 { skipping = 0 }
    !skipping
' "$page" > "$next"
mv "$next" "$page"
