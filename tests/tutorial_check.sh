#!/bin/sh
# tutorial_check.sh DIR [FILE.md...]: what README.md and TUTORIAL.md say is what the programs do.
#
# 1. Quoted outputs. An output block is marked by the line before it:
#        <!-- check: ./sim --headless scenarios/default.scn -->
#        ```text
#        ...what the command prints, whole or abridged...
#        ```
#    Every line of the block must be a line of the command's output, compared with runs of
#    spaces folded (a block may leave lines out, never change one); a line that is only "..."
#    stands for lines left out. So a quoted figure that the program no longer prints fails.
#
# 2. Commands. Every command line of a ```sh block runs, and must exit 0 unless its comment
#    says otherwise:
#        ./sim --headless scenarios/x.scn --set users=-1     # exits 2: users must be positive
#        make calibrate                                      # long: about 6 minutes
#    A line whose comment starts with "long:" is not run (JVM runs, benchmarks, anything over
#    a few seconds): it is listed with its reason. So is every line of a block that follows
#        <!-- sh: skip: REASON -->
#    A block runs as one shell script, line after line (a variable set on one line serves the
#    next; a line ending in "\" continues on the next). A line ending in "&" starts a server,
#    stopped when the block ends; such a block runs in a private network namespace
#    (unshare -n), so that its fixed ports are its own, and is skipped where none can be made.
#
# Commands run from a scratch directory that looks like the repository's top (its files
# symlinked, ./sim and ./aggregator taken from DIR), so what they write lands there, and with
# no display: a command that would open the window prints the headless report instead.
# 3. Every chapter of the tutorial has a picture (or says why not), a question, an exercise
#    and their answers.
dir=$(cd "${1:-.}" && pwd) || exit 2
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- README.md TUTORIAL.md
top=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset DISPLAY WAYLAND_DISPLAY
pass=0; fail=0; ran=0; skipped=0
BLOCK_SECONDS=${BLOCK_SECONDS:-120}   # a block that takes longer has hung: it fails

# The scratch top: the repository's files, the programs from DIR.
work=$tmp/top
mkdir -p "$work/out"
for f in "$top"/* "$top"/.ci; do
    case ${f##*/} in sim | aggregator | out) ;; *) ln -s "$f" "$work/${f##*/}" ;; esac
done
# ./sim keeps its report for arguments it has seen (the simulator is deterministic), so a run
# quoted in a check and shown in a sh block costs once; a run that writes files always runs.
mkdir -p "$tmp/cache"
cat > "$work/sim" <<EOF
#!/bin/sh
case " \$* " in *" --screenshot "* | *" --plot "* | *" --series "* | *" --trace "* | *" --frames "* | *" --live "*)
    exec "$dir/sim" "\$@" ;;
esac
c=$tmp/cache/\$(printf '%s\n' "\$@" | grep -v -x -e --headless | md5sum | cut -c1-32)
[ -e "\$c.rc" ] || { "$dir/sim" "\$@" > "\$c.out" 2> "\$c.err"; echo \$? > "\$c.rc"; }
cat "\$c.out"; cat "\$c.err" >&2; exit \$(cat "\$c.rc")
EOF
chmod +x "$work/sim"
ln -s "$dir/aggregator" "$work/aggregator"

fold() { sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//'; }

# How a block with servers gets its own network namespace: "unshare -n" as root, else a user
# namespace; empty when neither works here.
netns=""
if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then netns="unshare -n"
elif unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then netns="unshare -rn"; fi

# check_outputs DOC: part 1.
check_outputs() {
    rm -f "$tmp"/*.cmd "$tmp"/*.want "$tmp"/*.line
    awk -v dir="$tmp" '
        /^<!-- check: .* -->$/ { cmd = $0; sub(/^<!-- check: /, "", cmd); sub(/ -->$/, "", cmd);
                                 at = NR; pending = 1; next }
        pending && /^```/ { n++; print cmd > (dir "/" n ".cmd"); print at > (dir "/" n ".line");
                           inblock = 1; pending = 0; printf "" > (dir "/" n ".want"); next }
        inblock && /^```/ { inblock = 0; next }
        inblock { print > (dir "/" n ".want") }
        pending && !/^$/ { pending = 0 }' "$1"
    for c in "$tmp"/*.cmd; do
        [ -e "$c" ] || continue
        n=${c%.cmd}
        if ! (cd "$work" && sh -c "$(cat "$c")") > "$n.out" 2> "$n.err"; then
            fail=$((fail + 1))
            echo "tutorial_check: FAIL: $1:$(cat "$n.line"): '$(cat "$c")' failed: $(head -c 300 "$n.err")" >&2
            continue
        fi
        fold < "$n.out" > "$n.got"
        missing=$(fold < "$n.want" | grep -v -x -e '\.\.\.' -e '' | while IFS= read -r line; do
            grep -q -x -F -- "$line" "$n.got" || printf '    %s\n' "$line"; done)
        if [ -z "$missing" ]; then pass=$((pass + 1))
        else fail=$((fail + 1)); printf 'tutorial_check: FAIL: %s:%s: %s no longer prints:\n%s\n' "$1" "$(cat "$n.line")" "$(cat "$c")" "$missing" >&2; fi
    done
}

# split_commands DOC: part 2's blocks as $tmp/bN.sh (the script), $tmp/bN.cmds (line TAB
# expected status TAB command, one per command run) and $tmp/bN.skip (line TAB reason TAB
# command). A block with servers gets a $tmp/bN.net.
split_commands() {
    rm -f "$tmp"/b*.sh "$tmp"/b*.cmds "$tmp"/b*.skip "$tmp"/b*.net
    awk -v dir="$tmp" '
        function flush(   rc, why, c) {
            if (cmd == "") return
            c = cmd; cmd = ""
            if (blockskip != "") { printf "%d\t%s\t%s\n", at, blockskip, c > (base ".skip"); return }
            if (match(c, /#[ \t]*long:[^#]*$/)) {
                why = substr(c, RSTART, RLENGTH); sub(/^#[ \t]*long:[ \t]*/, "", why)
                printf "%d\t%s\t%s\n", at, why, c > (base ".skip"); return
            }
            rc = 0
            if (match(c, /#.*exits [0-9]+/)) { rc = substr(c, RSTART, RLENGTH); sub(/.*exits /, "", rc) }
            if (c ~ /&[ \t]*(#.*)?$/) {
                printf "%s\ntc_bg=\"$tc_bg $!\"\n", c > (base ".sh"); printf "" > (base ".net")
                return
            }
            k++
            printf "%d\t%d\t%s\n", at, rc, c > (base ".cmds")
            printf "%s\necho \"%d $?\" >> %s/status\n", c, k, base > (base ".sh")
        }
        /^<!-- sh: skip: .* -->$/ { why = $0; sub(/^<!-- sh: skip: /, "", why); sub(/ -->$/, "", why)
                                     pendskip = why; next }
        !inblock && /^```sh[ \t]*$/ { n++; base = dir "/b" n; inblock = 1; k = 0; cmd = ""
                                       blockskip = pendskip; pendskip = ""
                                       printf "tc_bg=\"\"\n" > (base ".sh"); next }
        !inblock { if (!/^$/) pendskip = ""; next }
        /^```/ { flush(); inblock = 0
                 printf "[ -n \"$tc_bg\" ] && kill $tc_bg 2>/dev/null; wait\n" > (base ".sh"); next }
        cmd != "" { cmd = cmd "\n" $0; if (!/\\$/) flush(); next }
        /^[ \t]*(#.*)?$/ { next }
        { cmd = $0; at = NR; if (!/\\$/) flush() }' "$1"
}

# run_commands DOC: part 2.
run_commands() {
    rdoc=$1
    split_commands "$rdoc"
    for s in "$tmp"/b*.sh; do
        [ -e "$s" ] || continue
        b=${s%.sh}
        if [ -e "$b.skip" ]; then
            while IFS="$(printf '\t')" read -r at why c; do
                skipped=$((skipped + 1))
                echo "tutorial_check: not run: $rdoc:$at: $(echo "$c" | sed 's/[[:space:]]*#.*//') ($why)"
            done < "$b.skip"
        fi
        [ -e "$b.cmds" ] || continue
        wrap=""
        if [ -e "$b.net" ]; then
            if [ -z "$netns" ]; then
                while IFS="$(printf '\t')" read -r at rc c; do
                    skipped=$((skipped + 1))
                    echo "tutorial_check: not run: $rdoc:$at: $c (its servers need a private network namespace)"
                done < "$b.cmds"
                continue
            fi
            wrap=$netns
        fi
        rm -f "$b/status"; mkdir -p "$b"
        if [ -n "$wrap" ]; then set -- $wrap sh -c 'ip link set lo up && exec sh "$0"' "$s"
        else set -- sh "$s"; fi
        (cd "$work" && timeout "$BLOCK_SECONDS" "$@" < /dev/null) > "$b.out" 2>&1
        k=0
        while IFS="$(printf '\t')" read -r at rc c; do
            k=$((k + 1)); ran=$((ran + 1))
            got=$(awk -v k="$k" '$1 == k { print $2 }' "$b/status" 2>/dev/null)
            if [ "$got" = "$rc" ]; then pass=$((pass + 1)); continue; fi
            fail=$((fail + 1))
            [ -n "$got" ] || got="none (the block stopped or took over ${BLOCK_SECONDS} s)"
            printf 'tutorial_check: FAIL: %s:%s: %s\n    exit status %s, the text implies %s; the block printed:\n' \
                "$rdoc" "$at" "$c" "$got" "$rc" >&2
            tail -n 5 "$b.out" | sed 's/^/    /' >&2
        done < "$b.cmds"
    done
}

for doc in "$@"; do
    check_outputs "$doc"
    run_commands "$doc"
done

# Part 3: every chapter of the tutorial has a picture (or says why not), a question with its
# answer, and an exercise with a worked answer, all folded in <details>.
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

echo "tutorial_check: $ran commands run, $skipped not run (listed above); $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
