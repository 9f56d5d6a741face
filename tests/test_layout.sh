#!/bin/sh
# test_layout.sh: the two programs read as the README promises. Each file opens with a map
# of at most 60 lines whose contents list names the Parts and sections in the order their
# banners appear; each file marks its lesson and keeps it bounded; sim.c keeps every
# difference between the models behind model_ops, its window behind the engine's view, and
# makes no upward call from Part I; the latency histogram, and Student's t with the CSV
# columns, are each one text in both files; no code or test carries a date or an issue
# number. Run from the repository's top.
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "test_layout: FAIL: $*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# map FILE: the first comment, from line 1 to its closing */
map() { awk '{ print } /\*\// { exit }' "$1"; }

# contents FILE: the titles the map lists ("Part I. Title" or "I.2 Title"), one a line;
# a title ends at the first run of two spaces, where its description starts
contents() {
    map "$1" | sed -nE 's/^ \*[ ]+((Part [IVX]+\. |[IVX]+\.[0-9]+ ).*)$/\1/p' | sed -E 's/  .*//; s/ +$//'
}

# banners FILE: the titles of the Part and section banners, in file order
banners() {
    sed -nE 's|^/\* ==== (Part [IVX]+\. .*) ==== \*/$|\1|p; s|^/\* ---- ([IVX]+\.[0-9]+ .*) ---- \*/$|\1|p' "$1"
}

for f in sim.c aggregator.c; do
    lines=$(map "$f" | wc -l)
    [ "$lines" -le 60 ] && ok || bad "$f: the map is $lines lines (at most 60)"
    contents "$f" > "$tmp/contents"
    banners "$f" > "$tmp/banners"
    [ -s "$tmp/banners" ] && ok || bad "$f: no Part banners (/* ==== Part I. Title ==== */)"
    if cmp -s "$tmp/contents" "$tmp/banners"; then ok
    else bad "$f: the map's contents and the banners disagree (< map, > banners):"
         diff "$tmp/contents" "$tmp/banners" | grep '^[<>]' >&2; fi
    # every ==== banner is a Part banner: no section escapes the contents list
    stray=$(grep -nE '^/\* ==== ' "$f" | grep -vE '^[0-9]+:/\* ==== Part [IVX]+\. .* ==== \*/$')
    [ -z "$stray" ] && ok || bad "$f: banners outside the Part convention: $stray"
done

# sim.c: the word "kind" only inside model_init and the two ops tables
outside=$(awk '
    /^(static )?[a-z].*[ *]model_init\(/ && !/;$/ { inside = 1 }
    /^static const struct model_ops (plat|vt)_ops = \{/ { inside = 1 }
    /kind/ && !inside { printf "%d: %s\n", NR, $0 }
    inside && /^(\}|\};)$/ { inside = 0 }' sim.c)
[ -z "$outside" ] && ok || bad "sim.c: 'kind' outside model_init and the ops tables:
$outside"

# sim.c: Part V, the window, reads the models through model_ops' words and view: it names no
# model, so a third model touches none of its lines
named=$(awk '/^\/\* ==== Part V\./ { on = 1 } /^\/\* ==== Part VI\./ { on = 0 }
    on && /MODEL_(PLATFORM|VIRTUAL)|->(plat|vt)\./ { printf "%d: %s\n", NR, $0 }' sim.c)
[ -z "$named" ] && ok || bad "sim.c: Part V names a model:
$named"

# sim.c: Part V reads the models through model_ops and the engine's view (I.11), never the
# model's arrays, free list or event queue: a field access such as m->req, th->req or
# ms[k].thr between the Part V and Part VI banners fails
reads=$(awk '/^\/\* ==== Part V\./ { on = 1 } /^\/\* ==== Part VI\./ { on = 0 }
    on && /(->|\]\.)(req|thr|call|free_req|events)([^A-Za-z0-9_]|$)/ { printf "%d: %s\n", NR, $0 }' sim.c)
[ -z "$reads" ] && ok || bad "sim.c: Part V reads the engine's internals (use the view, I.11):
$reads"

# sim.c: no upward calls. Part I (the lesson and what it calls by name) calls no function
# defined in Parts III to VI (the instruments and front ends reach it through hooks such as
# model.on_span), and nothing named trace_, rep_, val_, live_ or ui_. Part II, the tools the
# models stand on, is declared ahead and may be called. Comments are skipped.
later=$(awk '/^\/\* ==== Part III\./ { on = 1 }
    on && /^[a-zA-Z_].*[ *][a-z_0-9]+\(/ && !/;$/ {
        s = $0; sub(/\(.*/, "", s); sub(/.*[ *]/, "", s); print s }' sim.c | sort -u)
upward=$(awk -v names="$later" '
    BEGIN { n = split(names, a, "\n"); for (i = 1; i <= n; i++) later[a[i]] = 1 }
    /^\/\* ==== Part I\./ { on = 1 } /^\/\* ==== Part II\./ { on = 0 }
    !on { next }
    { line = $0; sub(/\/\*.*/, "", line); if (line ~ /^ \*/) next
      while (match(line, /[A-Za-z_][A-Za-z_0-9]*\(/)) {
          name = substr(line, RSTART, RLENGTH - 1); line = substr(line, RSTART + RLENGTH)
          if (name in later || name ~ /^(trace|rep|val|live|ui)_/)
              printf "%d: %s() in %s\n", NR, name, $0 } }' sim.c)
[ -n "$later" ] && [ -z "$upward" ] && ok || bad "sim.c: Part I calls up into a later Part:
$upward"

# lesson FILE MAXLINES: the file marks its lesson with one banner line saying "The lesson
# begins" and one, after it, saying "The lesson ends", at most MAXLINES apart (counted
# inclusively), and its map tells the reader where it begins and ends
lesson() {
    nb=$(grep -c 'The lesson begins' "$1"); ne=$(grep -c 'The lesson ends' "$1")
    if [ "$nb" -ne 1 ] || [ "$ne" -ne 1 ]; then
        bad "$1: $nb lines say 'The lesson begins' and $ne 'The lesson ends' (one each)"; return
    fi
    b=$(grep -n 'The lesson begins' "$1" | cut -d: -f1)
    e=$(grep -n 'The lesson ends' "$1" | cut -d: -f1)
    n=$((e - b + 1))
    [ "$b" -lt "$e" ] && ok || bad "$1: 'The lesson ends' (line $e) comes before it begins (line $b)"
    [ "$n" -le "$2" ] && ok || bad "$1: the lesson is $n lines (at most $2)"
    # the map's text as one line, so that a phrase may wrap
    flat=$(map "$1" | sed -E 's/^ *\*? ?//' | tr '\n' ' ' | tr -s ' ')
    printf '%s' "$flat" | grep -qi 'lesson begins' && printf '%s' "$flat" | grep -qi 'lesson ends' &&
        ok || bad "$1: the map does not say where the lesson begins and ends"
}
lesson sim.c 1600
lesson aggregator.c 1300

# sim.c: main is short, one call per mode
main_lines=$(awk '/^int main\(/ { on = 1 } on { n++ } on && /^\}$/ { print n; exit }' sim.c)
[ -n "$main_lines" ] && [ "$main_lines" -le 45 ] && ok || bad "sim.c: main is ${main_lines:-?} lines (about 40 at most)"

# the latency histogram: the same text in both files, between the same two markers
hist() { sed -n '/^\/\* ---- latency histogram: the same text/,/^\/\* ---- end of the shared latency histogram ---- \*\/$/p' "$1"; }
hist sim.c > "$tmp/h1"; hist aggregator.c > "$tmp/h2"
[ -s "$tmp/h1" ] && cmp -s "$tmp/h1" "$tmp/h2" && ok || bad "the latency histogram differs between sim.c and aggregator.c (or is missing)"

# Student's t and the CSV columns: the same text in both files, between its two banner lines,
# so that the writer of each CSV (bench) and its reader (--validate) read one column table
shared() {
    sed -n "/^\/\* ---- Student's t and the CSV columns: the same text/,\
/^\/\* ---- end of Student's t and the CSV columns ---- \*\/\$/p" "$1"
}
shared sim.c > "$tmp/s1"; shared aggregator.c > "$tmp/s2"
[ -s "$tmp/s1" ] && cmp -s "$tmp/s1" "$tmp/s2" && ok ||
    bad "Student's t and the CSV columns differ between sim.c and aggregator.c (or are missing)"

# code and tests carry no dates or issue numbers: they go stale, and belong in README and the
# commit messages
stale=$(grep -nE '[Ii]ssues? #?[0-9]+|20[0-9][0-9]-[01][0-9]-[0-3][0-9]' sim.c aggregator.c \
    tests/*.c tests/*.sh tests/*.py tests/bench tests/study java/*.java java/find-jdk Makefile .ci/* \
    2>/dev/null)
[ -z "$stale" ] && ok || bad "a date or issue number in code or tests:
$stale"

echo "test_layout: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
