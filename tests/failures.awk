# failures.awk - from node's TAP logs, why each failed test failed: its
# name, where it is, and the first lines of its error. tests/run prints
# this last, just above its count line, because a CI page often shows only
# the head and the tail of a long run: the dump of failures in the middle
# was cut there, and a flaky failure seen once in CI could not be read.
#
#   awk -v max=30 -f tests/failures.awk LOG...   (at most max lines in all)
function flush() {
    if (name != "" && type != "'subtestsFailed'")
        for (i = 1; i <= n && shown < max; i++) { print buf[i]; shown++ }
    name = ""; n = 0
}
function keep(line) { if (n < 24) buf[++n] = line }
/^ *not ok [0-9]+ - / {
    flush()
    if ($0 ~ / # (TODO|SKIP)/) next
    name = $0; sub(/^ *not ok [0-9]+ - /, "", name); type = ""; in_error = 0
    keep("FAILED: " name)
    next
}
name == "" { next }
/^ *(ok|not ok) [0-9]+ - |^ *\.\.\.$|^# Subtest/ { flush(); next }
# The lines of an error block are indented deeper than its key.
in_error && (!NF || match($0, /[^ ]/) - 1 > err_indent) {
    line = $0; sub(/^ */, "", line); if (NF) keep("  " line); next
}
{ in_error = 0 }
/^ *failureType: / { type = $2; next }
/^ *location: / { keep("  at " substr($2, 2, length($2) - 2)); next }
/^ *error: [|]-$/ { in_error = 1; err_indent = match($0, /[^ ]/) - 1; next }
/^ *error: / { line = $0; sub(/^ *error: /, "", line); keep("  " line); next }
/^ *(expected|actual): / { line = $0; sub(/^ */, "", line); keep("  " line); next }
END { flush() }
