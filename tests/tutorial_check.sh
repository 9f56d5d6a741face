#!/bin/sh
# tutorial_check.sh DIR [FILE.md...]: every output quoted in the docs is what the programs print.
#
# In README.md and TUTORIAL.md an output block is marked by the line before it:
#     <!-- check: ./sim --headless scenarios/default.scn -->
#     ```text
#     ...what the command prints, whole or abridged...
#     ```
# The command runs from the repository's top with ./sim and ./aggregator taken from DIR. Every
# line of the block must be a line of the command's output, compared with runs of spaces
# folded (a block may leave lines out, never change one); a line that is only "..." stands
# for lines left out. So a quoted figure that the program no longer prints fails the check.
dir=${1:-.}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- README.md TUTORIAL.md
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

fold() { sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//'; }

for doc in "$@"; do
    # split the doc into numbered (command, block) pairs: $tmp/N.cmd, $tmp/N.want, $tmp/N.line
    rm -f "$tmp"/*.cmd "$tmp"/*.want "$tmp"/*.line
    awk -v dir="$tmp" '
        /^<!-- check: .* -->$/ { cmd = $0; sub(/^<!-- check: /, "", cmd); sub(/ -->$/, "", cmd);
                                 at = NR; pending = 1; next }
        pending && /^```/ { n++; print cmd > (dir "/" n ".cmd"); print at > (dir "/" n ".line");
                           inblock = 1; pending = 0; printf "" > (dir "/" n ".want"); next }
        inblock && /^```/ { inblock = 0; next }
        inblock { print > (dir "/" n ".want") }
        pending && !/^$/ { pending = 0 }' "$doc"
    for c in "$tmp"/*.cmd; do
        [ -e "$c" ] || continue
        n=${c%.cmd}
        cmd=$(sed -e "s|\./sim |$dir/sim |g; s|\./aggregator |$dir/aggregator |g" "$c")
        if ! sh -c "$cmd" > "$n.out" 2> "$n.err"; then
            fail=$((fail + 1)); echo "tutorial_check: FAIL: $doc:$(cat "$n.line"): '$(cat "$c")' failed: $(head -c 300 "$n.err")" >&2
            continue
        fi
        fold < "$n.out" > "$n.got"
        missing=$(fold < "$n.want" | grep -v -x -e '\.\.\.' -e '' | while IFS= read -r line; do
            grep -q -x -F -- "$line" "$n.got" || printf '    %s\n' "$line"; done)
        if [ -z "$missing" ]; then pass=$((pass + 1))
        else fail=$((fail + 1)); printf 'tutorial_check: FAIL: %s:%s: %s no longer prints:\n%s\n' "$doc" "$(cat "$n.line")" "$(cat "$c")" "$missing" >&2; fi
    done
done

# Every chapter of the tutorial has a picture (or says why not), a question with its answer,
# and an exercise with a worked answer, all folded in <details>.
if [ -f TUTORIAL.md ]; then
    short=$(awk '
        function check() { if (ch != "" && !(pic && q && ex && ans >= 2))
                               printf "%s (picture %d, question %d, exercise %d, answers %d)\n", ch, pic, q, ex, ans }
        /^## [0-9]+\. / { check(); ch = $0; pic = q = ex = ans = 0; next }
        /^!\[.*\]\(assets\/.*\.png\)/ || /^<!-- no picture: / { pic = 1 }
        /<summary>Question/ { q = 1 }
        /^\*\*Exercise:\*\*/ { ex = 1 }
        /<\/details>/ { ans++ }
        END { check() }' TUTORIAL.md)
    if [ -z "$short" ]; then pass=$((pass + 1))
    else fail=$((fail + 1)); printf 'tutorial_check: FAIL: chapters short of a picture, question, exercise or answer:\n%s\n' "$short" >&2; fi
fi

echo "tutorial_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
