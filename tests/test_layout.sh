#!/bin/sh
# test_layout.sh: the two programs read as the README promises. Each file opens with a map
# of at most 60 lines whose contents list names the Parts and sections in the order their
# banners appear; sim.c keeps every difference between the models behind model_ops; the
# latency histogram is one text in both files; no code or test carries a date or an issue
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

# sim.c: main is short, one call per mode
main_lines=$(awk '/^int main\(/ { on = 1 } on { n++ } on && /^\}$/ { print n; exit }' sim.c)
[ -n "$main_lines" ] && [ "$main_lines" -le 45 ] && ok || bad "sim.c: main is ${main_lines:-?} lines (about 40 at most)"

# the latency histogram: the same text in both files, between the same two markers
hist() { sed -n '/^\/\* ---- latency histogram: the same text/,/^\/\* ---- end of the shared latency histogram ---- \*\/$/p' "$1"; }
hist sim.c > "$tmp/h1"; hist aggregator.c > "$tmp/h2"
[ -s "$tmp/h1" ] && cmp -s "$tmp/h1" "$tmp/h2" && ok || bad "the latency histogram differs between sim.c and aggregator.c (or is missing)"

# code and tests carry no dates or issue numbers: they go stale, and belong in README and the
# commit messages
stale=$(grep -nE '[Ii]ssues? #?[0-9]+|20[0-9][0-9]-[01][0-9]-[0-3][0-9]' sim.c aggregator.c \
    tests/*.c tests/*.sh tests/*.py tests/bench tests/study java/*.java java/find-jdk Makefile .ci/* \
    2>/dev/null)
[ -z "$stale" ] && ok || bad "a date or issue number in code or tests:
$stale"

echo "test_layout: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
