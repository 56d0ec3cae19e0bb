#!/usr/bin/env bash
# Puts the table in TABLE_FILE into PAGE, in place of the lines between the
# markers of the table NAME: a line that starts with
# `<!-- scripts/bench.sh writes the table "NAME" below` and, after it, a line
# that starts with `<!-- end of the table "NAME" -->`. Refuses, saying why and
# leaving PAGE as it is, when the markers are not so, or when the table is
# empty or has a cell that was not measured.
#   scripts/bench-table.sh PAGE NAME TABLE_FILE
set -euo pipefail
page="$1" name="$2" table="$3"
begin="<!-- scripts/bench.sh writes the table \"$name\" below"
end="<!-- end of the table \"$name\" -->"
if ! grep -q '^|' "$table"; then
    echo "scripts/bench-table.sh: the table \"$name\" is empty; $page is left as it is" >&2
    exit 1
fi
if grep -qE 'not measured|did not run' "$table"; then
    echo "scripts/bench-table.sh: the table \"$name\" has cells that were not measured; $page is left as it is:" >&2
    grep -E 'not measured|did not run' "$table" >&2
    exit 1
fi
next="$(mktemp)"
trap 'rm -f "$next"' EXIT
# Exit 3: no begin marker; 4: no end marker after it; 5: more than one.
if ! awk -v table="$table" -v begin="$begin" -v end="$end" '
    index($0, begin) == 1 {
        if (found) { exit 5 }
        print; while ((getline line < table) > 0) print line
        skipping = 1; found = 1; next
    }
    index($0, end) == 1 && skipping { skipping = 0; closed = 1 }
    !skipping
    END { if (!found) exit 3; if (!closed) exit 4 }
' "$page" > "$next"; then
    echo "$page has no markers for the table \"$name\" in order, once each (a line starting \"$begin\", then one starting \"$end\"); not written" >&2
    exit 1
fi
# In place, so that the page keeps its mode.
cat "$next" > "$page"
