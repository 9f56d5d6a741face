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
#
# 4. Figures in the prose. A number the text states about a run is tied to the command that
#    prints it by a marker on its own line after the paragraph (an HTML comment: not shown):
#        The pool's bound is 1,297.9 req/s and it serves 1,287 ± 2.
#        <!-- figure: 1,297.9; 1,287 = ./sim --headless scenarios/mixed.scn | grep -E 'pool|thr' -->
#    Before " = ": one or more figures, separated by ";", each written exactly as in the
#    paragraph above the marker (the lines back to the last blank line), which must contain
#    it; after: a shell command, run as in part 1. Each figure must be one of the numbers
#    the command prints, to the figure's own rounding (1,305 holds 1,304.7; 0.25 holds 0.248):
#    write a figure rounded further as "FIGURE ~T" (within T) or "FIGURE ~P%" (within P% of
#    it). A figure with a sign must match the sign; without one, either sign. Narrow the
#    command to the line (grep) or the field (awk) that the figure reads, so that another
#    number of the output cannot stand in for it. A figure from outside the project is
#    marked with its source instead, a key of the Sources list (TUTORIAL.md's "Sources",
#    whose items open with `KEY`):
#        <!-- source: 15.8x; 3,160 = thesis -->
#    A figure changed in the text, or printed otherwise by the program, fails with the line
#    of its marker; after the documents the check proves that on a copy of TUTORIAL.md.
#    A figure written twice in one paragraph is found while either is left, so
#    FIGURES_UNMARKED=1 lists the numbers of marked paragraphs that no marker names.
#
# 5. Code. A function (or struct, or macro) the text names is tied to its file by a marker
#    on its own line after the paragraph:
#        The pool grows in `plat_admit`, and the kernel wakes a thread in `plat_wake`.
#        <!-- code: sim.c plat_admit plat_wake -->
#    Each name must be in the paragraph above, as a whole word, and defined in the file: a
#    line at its first column that declares it (for C, "... NAME(", "struct NAME" or
#    "#define NAME"; for Java, a declaration "NAME(" or "class|record|interface NAME").
#    Quoted code is marked by the line before its block:
#        <!-- quote: aggregator.c -->
#        ```c
#        ...lines of the file...
#        ```
#    The block's lines must be lines of the file, consecutive and in order, compared with
#    runs of spaces folded, a comment's leading "*" or "//" left out (so code written in a
#    comment quotes as code) and blank lines left out; a line that is only "..." stands for
#    lines left out. A renamed function or a changed line fails with the marker's line; after
#    the documents the check proves both on a copy of TUTORIAL.md.
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
if [ ! -e "\$c.rc" ]; then   # written aside, then renamed: two runs at once may fill one entry
    "$dir/sim" "\$@" > "\$c.out.\$\$" 2> "\$c.err.\$\$"; echo \$? > "\$c.rc.\$\$"
    mv "\$c.out.\$\$" "\$c.out"; mv "\$c.err.\$\$" "\$c.err"; mv "\$c.rc.\$\$" "\$c.rc"
fi
cat "\$c.out"; cat "\$c.err" >&2; exit \$(cat "\$c.rc")
EOF
chmod +x "$work/sim"
ln -s "$dir/aggregator" "$work/aggregator"

fold() { sed -E 's/[[:space:]]+/ /g; s/^ //; s/ $//'; }

# run_two FILE.cmd...: each file's command, run from the scratch top, its output in FILE (the
# name without .cmd), its stderr in FILE.err and its status in FILE.rc; two at a time, one per
# core. Only for the quoted outputs' and the figures' commands: runs of ./sim and of --help,
# greps and awks, which compute and read no clock (each writes only files of its own name);
# the sh blocks, whose servers and make test-simple time things, run one at a time.
run_two() {
    [ $# -gt 0 ] || return 0
    printf '%s\n' "$@" | xargs -P 2 -n 1 sh -c '
        n=${1%.cmd}
        (cd "$0" && sh -c "$(cat "$1")") > "$n" 2> "$n.err"; echo $? > "$n.rc"' "$work"
}

# How a block with servers gets its own network namespace: "unshare -n" as root, else a user
# namespace; empty when neither works here.
netns=""
if unshare -n sh -c 'ip link set lo up' 2>/dev/null; then netns="unshare -n"
elif unshare -rn sh -c 'ip link set lo up' 2>/dev/null; then netns="unshare -rn"; fi

# check_outputs DOC: part 1.
check_outputs() {
    cdoc=$1
    rm -f "$tmp"/*.cmd "$tmp"/*.want "$tmp"/*.line
    awk -v dir="$tmp" '
        /^<!-- check: .* -->$/ { cmd = $0; sub(/^<!-- check: /, "", cmd); sub(/ -->$/, "", cmd);
                                 at = NR; pending = 1; next }
        pending && /^```/ { n++; print cmd > (dir "/" n ".cmd"); print at > (dir "/" n ".line");
                           inblock = 1; pending = 0; printf "" > (dir "/" n ".want"); next }
        inblock && /^```/ { inblock = 0; next }
        inblock { print > (dir "/" n ".want") }
        pending && !/^$/ { pending = 0 }' "$1"
    set -- "$tmp"/*.cmd
    [ -e "$1" ] || return 0
    run_two "$@"
    for c in "$@"; do
        n=${c%.cmd}
        mv "$n" "$n.out"
        if [ "$(cat "$n.rc")" != 0 ]; then
            fail=$((fail + 1))
            echo "tutorial_check: FAIL: $cdoc:$(cat "$n.line"): '$(cat "$c")' failed: $(head -c 300 "$n.err")" >&2
            continue
        fi
        fold < "$n.out" > "$n.got"
        missing=$(fold < "$n.want" | grep -v -x -e '\.\.\.' -e '' | while IFS= read -r line; do
            grep -q -x -F -- "$line" "$n.got" || printf '    %s\n' "$line"; done)
        if [ -z "$missing" ]; then pass=$((pass + 1))
        else fail=$((fail + 1)); printf 'tutorial_check: FAIL: %s:%s: %s no longer prints:\n%s\n' "$cdoc" "$(cat "$n.line")" "$(cat "$c")" "$missing" >&2; fi
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
            if (blockskip != "") {
                gsub(/\\?\n[ \t]*/, " ", c)              # a continued command: one listing line
                printf "%d\t%s\t%s\n", at, blockskip, c > (base ".skip"); return
            }
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

# split_figures DOC: part 4's markers, one line per figure: line TAB kind TAB figure TAB
# tolerance ("-": none) TAB command (or source key) TAB 1 when the paragraph above holds it.
split_figures() {
    awk '
        function holds(text, fig,   i, rest, pre, post) {     # fig in text, as a whole number
            rest = text
            while ((i = index(rest, fig)) > 0) {
                pre = i > 1 ? substr(rest, i - 1, 1) : ""
                post = substr(rest, i + length(fig), 2)
                if (pre !~ /[0-9.,]/ && post !~ /^[0-9]/ && post !~ /^[.,][0-9]/) return 1
                rest = substr(rest, i + 1)
            }
            return 0
        }
        /^```/ { fence = !fence; para = ""; next }
        fence { next }
        /^[ \t]*$/ { para = ""; next }
        /^<!-- (figure|source): .* = .* -->$/ {
            kind = $0; sub(/^<!-- /, "", kind); sub(/:.*/, "", kind)
            body = $0; sub(/^<!-- [a-z]+: /, "", body); sub(/ -->$/, "", body)
            i = index(body, " = "); figs = substr(body, 1, i - 1); what = substr(body, i + 3)
            n = split(figs, f, ";")
            for (j = 1; j <= n; j++) {
                fig = f[j]; gsub(/^ +| +$/, "", fig); tol = "-"
                if (kind == "figure" && (k = index(fig, " ~")) > 0) {
                    tol = substr(fig, k + 2); fig = substr(fig, 1, k - 1)
                }
                printf "%d\t%s\t%s\t%s\t%s\t%d\n", NR, kind, fig, tol, what, holds(para, fig)
            }
            next
        }
        /^<!-- / { next }
        { para = para " " $0 }' "$1"
}

# prints_figure FIG TOL < OUTPUT: whether the output prints FIG (to its rounding, or within TOL).
prints_figure() {
    awk -v fig="$1" -v tol="$2" '
        function num(s) { gsub(/,/, "", s); return s + 0 }
        BEGIN {
            signed = fig ~ /^[-+]/; want = num(fig); d = 0
            if (match(fig, /\.[0-9]+$/)) d = RLENGTH - 1
            if (tol ~ /%$/) t = num(tol) / 100 * (want < 0 ? -want : want)
            else if (tol != "") t = num(tol)
            else t = 0.5 * 10 ^ (-d)
            t = t * (1 + 1e-9) + 1e-12
        }
        # A run of digits and commas is one number when its commas group thousands (1,297.9),
        # else a list (10,100,1000) of numbers.
        function try(tok, neg,   n, p, i, v) {
            sub(/,+$/, "", tok)
            if (tok ~ /,/ && tok !~ /^[0-9][0-9]?[0-9]?(,[0-9][0-9][0-9])+(\.[0-9]+)?$/)
                n = split(tok, p, ",")
            else { n = 1; p[1] = tok }
            for (i = 1; i <= n; i++) {
                v = num(p[i])
                if (neg && i == 1) v = -v
                if (!signed && want < 0) v = -v
                if (v - want <= t && want - v <= t) return 1
            }
            return 0
        }
        {
            s = $0
            while (match(s, /[0-9][0-9,]*(\.[0-9]+)?/)) {
                neg = signed && RSTART > 1 && substr(s, RSTART - 1, 1) == "-"
                if (try(substr(s, RSTART, RLENGTH), neg)) { found = 1; exit }
                s = substr(s, RSTART + RLENGTH)
            }
        }
        END { exit !found }'
}

# check_figures DOC: part 4. A command's output is kept for the other markers that name it.
check_figures() {
    fdoc=$1
    split_figures "$1" > "$tmp/figures"
    mkdir -p "$tmp/figs"
    awk -F '\t' '$2 == "figure" { print $5 }' "$tmp/figures" | sort -u > "$tmp/figs.list"
    set --   # each command not yet run: run_two fills its output, which the loop below reads
    while IFS= read -r what; do
        out=$tmp/figs/$(printf '%s' "$what" | md5sum | cut -c1-32)
        [ -e "$out" ] || { printf '%s\n' "$what" > "$out.cmd"; set -- "$@" "$out.cmd"; }
    done < "$tmp/figs.list"
    run_two "$@"
    while IFS="$(printf '\t')" read -r at kind fig tol what held; do
        [ "$tol" = - ] && tol=""
        if [ "$held" != 1 ]; then
            fail=$((fail + 1))
            printf 'tutorial_check: FAIL: %s:%s: the figure %s is not in the paragraph above its marker\n' \
                "$fdoc" "$at" "$fig" >&2
            continue
        fi
        if [ "$kind" = source ]; then
            if sources_keys | grep -q -x -F -e "$what"; then pass=$((pass + 1))
            else fail=$((fail + 1))
                printf 'tutorial_check: FAIL: %s:%s: %s cites the source "%s", which the Sources list lacks\n' \
                    "$fdoc" "$at" "$fig" "$what" >&2
            fi
            continue
        fi
        out=$tmp/figs/$(printf '%s' "$what" | md5sum | cut -c1-32)
        [ -e "$out" ] || (cd "$work" && sh -c "$what") > "$out" 2> /dev/null
        if prints_figure "$fig" "$tol" < "$out"; then pass=$((pass + 1)); continue; fi
        fail=$((fail + 1))
        printf "tutorial_check: FAIL: %s:%s: the text says %s%s where '%s' prints:\n" \
            "$fdoc" "$at" "$fig" "${tol:+ (within $tol)}" "$what" >&2
        head -n 4 "$out" | sed 's/^/    /' >&2
    done < "$tmp/figures"
}

# split_code DOC: part 5's markers, one line each: line TAB "code" TAB file TAB name TAB 1 when
# the paragraph above holds the name, or line TAB "quote" TAB file TAB the block's text, its
# lines joined by a \001.
split_code() {
    awk '
        function word(text, w,   i, rest, pre, post) {
            rest = text
            while ((i = index(rest, w)) > 0) {
                pre = i > 1 ? substr(rest, i - 1, 1) : ""; post = substr(rest, i + length(w), 1)
                if (pre !~ /[A-Za-z0-9_]/ && post !~ /[A-Za-z0-9_]/) return 1
                rest = substr(rest, i + 1)
            }
            return 0
        }
        inq && /^```/ { printf "%d\tquote\t%s\t%s\n", qat, qfile, q; inq = 0; next }
        inq { q = q $0 "\001"; next }
        pendq && /^```/ { inq = 1; pendq = 0; q = ""; fence = 0; next }
        pendq && !/^$/ { pendq = 0 }
        /^<!-- quote: [^ ]+ -->$/ { qfile = $3; qat = NR; pendq = 1; next }
        /^```/ { fence = !fence; para = ""; next }
        fence { next }
        /^[ \t]*$/ { para = ""; next }
        /^<!-- code: [^ ]+ .* -->$/ {
            n = split($0, f, " ")
            for (j = 4; j < n; j++)
                printf "%d\tcode\t%s\t%s\t%d\n", NR, f[3], f[j], word(para, f[j])
            next
        }
        /^<!-- / { next }
        { para = para " " $0 }' "$1"
}

# defines FILE NAME: whether FILE declares NAME at a line's first column.
defines() {
    e="([^A-Za-z0-9_]|\$)"                                   # the name ends there
    case $1 in
    *.java) re="^[[:space:]]*[A-Za-z].*([^A-Za-z0-9_.]$2[[:space:]]*\("
            re="$re|(class|record|interface|enum) $2$e)" ;;
    *) re="^([A-Za-z].*[^A-Za-z0-9_]$2\(|(struct|union|enum) $2$e|#define $2$e)" ;;
    esac
    grep -q -E "$re" "$top/$1"
}

# quoted FILE TEXT: whether TEXT's lines (joined by \001) are lines of FILE, consecutive and
# in order, spaces folded and blank lines left out; "..." skips lines.
quoted() {
    fold < "$top/$1" | sed -E 's,^(\*|//) ?,,' | grep -v -x -e '' | awk -v q="$2" '
        BEGIN {
            n = split(q, want, "\001"); k = 0
            for (i = 1; i <= n; i++) {
                w = want[i]; gsub(/[ \t]+/, " ", w); sub(/^ /, "", w); sub(/ $/, "", w)
                sub(/^(\*|\/\/) ?/, "", w); if (w != "") line[++k] = w
            }
            n = k
        }
        { have[NR] = $0 }
        END {
            at = 1; i = 1
            while (i <= n) {
                if (line[i] == "...") { i++; continue }
                for (j = i; j <= n && line[j] != "..."; j++) ;      # the segment i..j-1
                found = 0
                for (s = at; s + (j - i) - 1 <= NR && !found; s++) {
                    ok = 1
                    for (t = i; t < j && ok; t++) ok = have[s + t - i] == line[t]
                    if (ok) { found = 1; at = s + (j - i) }
                }
                if (!found) exit 1
                i = j
            }
            exit 0
        }'
}

# check_code DOC: part 5.
check_code() {
    split_code "$1" > "$tmp/code"
    while IFS="$(printf '\t')" read -r at kind file what held; do
        if [ ! -f "$top/$file" ]; then
            fail=$((fail + 1))
            printf 'tutorial_check: FAIL: %s:%s: names the file %s, which the project lacks\n' \
                "$1" "$at" "$file" >&2
        elif [ "$kind" = code ] && [ "$held" != 1 ]; then
            fail=$((fail + 1))
            printf 'tutorial_check: FAIL: %s:%s: the name %s is not in the paragraph above %s\n' \
                "$1" "$at" "$what" "its marker" >&2
        elif [ "$kind" = code ] && ! defines "$file" "$what"; then
            fail=$((fail + 1))
            printf 'tutorial_check: FAIL: %s:%s: %s defines no %s\n' "$1" "$at" "$file" "$what" >&2
        elif [ "$kind" = quote ] && ! quoted "$file" "$what"; then
            fail=$((fail + 1))
            printf 'tutorial_check: FAIL: %s:%s: the quoted code is no longer in %s\n' \
                "$1" "$at" "$file" >&2
        else pass=$((pass + 1)); fi
    done < "$tmp/code"
}

# sources_keys: the keys of the Sources list: its items open with `KEY`.
sources_keys() {
    [ -f TUTORIAL.md ] && awk '/^## / { in_src = ($0 ~ /^## Sources/) ; next }
        in_src && /^- `[^`]+`/ { k = $0; sub(/^- `/, "", k); sub(/`.*/, "", k); print k }' TUTORIAL.md
}

# unmarked_figures DOC: the numbers of each paragraph with markers that no marker of it names
# (a figure written twice, once changed, shows here): FIGURES_UNMARKED=1 lists them.
unmarked_figures() {
    awk '
        function flush(   s, tok) {
            if (marked != "") {
                s = para
                while (match(s, /[0-9][0-9,]*(\.[0-9]+)?/)) {
                    tok = substr(s, RSTART, RLENGTH); sub(/,+$/, "", tok)
                    if (index(marked, ";" tok ";") == 0)
                        printf "tutorial_check: unmarked: %s:%d: %s\n", FILENAME, at, tok
                    s = substr(s, RSTART + RLENGTH)
                }
            }
            para = ""; marked = ""
        }
        /^```/ { flush(); fence = !fence; next }
        fence { next }
        /^[ \t]*$/ { flush(); next }
        /^<!-- (figure|source): .* = .* -->$/ {
            body = $0; sub(/^<!-- [a-z]+: /, "", body); sub(/ = .*/, "", body)
            n = split(body, f, ";")
            for (j = 1; j <= n; j++) { g = f[j]; sub(/ ~.*/, "", g); gsub(/ /, "", g); marked = marked ";" g ";" }
            at = NR; next
        }
        /^<!-- / { next }
        { para = para " " $0 }
        END { flush() }' "$1"
}

# FIGURES_ONLY=1 checks part 4 alone (quick, while writing the prose).
for doc in "$@"; do
    if [ "${FIGURES_ONLY:-0}" != 1 ]; then
        check_outputs "$doc"
        run_commands "$doc"
    fi
    check_figures "$doc"
    check_code "$doc"
    [ "${FIGURES_UNMARKED:-0}" = 1 ] && unmarked_figures "$doc"
done

# Part 5's self-test: in a copy of TUTORIAL.md, the first code marker's first name changed in
# its paragraph and its marker, and the first quote's first line changed, each must fail
# naming its marker's line.
if [ -f TUTORIAL.md ] && grep -q '^<!-- quote: ' TUTORIAL.md &&
    grep -q '^<!-- code: ' TUTORIAL.md; then
    mkdir -p "$tmp/self5"
    split_code TUTORIAL.md > "$tmp/code5"
    for kind in code quote; do
        at=$(awk -F '\t' -v k="$kind" '$2 == k { print $1; exit }' "$tmp/code5")
        name=$(awk -F '\t' '$2 == "code" { print $4; exit }' "$tmp/code5")
        awk -v at="$at" -v kind="$kind" -v name="$name" '
            { line[NR] = $0 }
            END {
                if (kind == "code") {
                    for (s = at; s > 1 && line[s - 1] !~ /^[ \t]*$/; s--) ;
                    for (i = s; i <= at; i++) gsub(name, name "_gone", line[i])
                } else {
                    for (i = at + 2; line[i] ~ /^[ \t]*(\.\.\.)?[ \t]*$/; i++) ;
                    line[i] = line[i] " x"
                }
                for (i = 1; i <= NR; i++) print line[i]
            }' TUTORIAL.md > "$tmp/self5/TUTORIAL.md"
        got=$(cd "$tmp/self5" && fail=0 && check_code TUTORIAL.md 2>&1 >/dev/null)
        if printf '%s\n' "$got" | grep -q -F "FAIL: TUTORIAL.md:$at: "; then pass=$((pass + 1))
        else fail=$((fail + 1))
            echo "tutorial_check: FAIL: self-test: a $kind changed at TUTORIAL.md:$at went" \
                "unnoticed" >&2
        fi
    done
fi

# Part 4's self-test: a figure changed in a copy of TUTORIAL.md, in its paragraph (then also in
# its marker, so that the program's output is what disagrees), must fail naming its line.
if [ -f TUTORIAL.md ] && grep -q '^<!-- figure: ' TUTORIAL.md; then
    mkdir -p "$tmp/self"
    at=$(split_figures TUTORIAL.md | awk -F '\t' '$2 == "figure" && $4 == "-" { print $1; exit }')
    for where in text both; do
        awk -v at="$at" -v where="$where" '
            { line[NR] = $0 }
            END {
                m = line[at]; sub(/^<!-- figure: /, "", m); sub(/[; ].*/, "", m)
                last = substr(m, length(m), 1); fig2 = substr(m, 1, length(m) - 1) (last + 1) % 10
                for (s = at - 1; s > 1 && line[s - 1] !~ /^[ \t]*$/; s--) ;
                for (i = s; i < at; i++) {
                    rest = line[i]; line[i] = ""
                    while ((k = index(rest, m)) > 0) {
                        line[i] = line[i] substr(rest, 1, k - 1) fig2; rest = substr(rest, k + length(m))
                    }
                    line[i] = line[i] rest
                }
                if (where == "both") sub(/^<!-- figure: [^; ]*/, "<!-- figure: " fig2, line[at])
                for (i = 1; i <= NR; i++) print line[i]
            }' TUTORIAL.md > "$tmp/self/TUTORIAL.md"
        got=$(cd "$tmp/self" && check_figures TUTORIAL.md 2>&1 >/dev/null)
        if printf '%s\n' "$got" | grep -q -F "FAIL: TUTORIAL.md:$at: "; then pass=$((pass + 1))
        else fail=$((fail + 1))
            echo "tutorial_check: FAIL: self-test: a figure changed ($where) at TUTORIAL.md:$at went unnoticed" >&2
        fi
    done
fi

# Part 3: every chapter of the tutorial has a picture (or says why not), a question with its
# answer, and an exercise with a worked answer, all folded in <details>; from chapter 2 on,
# also a code marker (part 5) and a "**Code exercise:**" that reads or changes the code.
if [ -f TUTORIAL.md ] && [ "${FIGURES_ONLY:-0}" != 1 ]; then
    short=$(awk '
        function check() {
            if (ch != "" && !(pic && q && ex && ans >= 2 && (num < 2 || (code && cex))))
                printf "%s (picture %d, question %d, exercise %d, answers %d, code %d, " \
                       "code exercise %d)\n", ch, pic, q, ex, ans, code, cex
        }
        /^## [0-9]+\. / { check(); ch = $0; num = $2 + 0; pic = q = ex = ans = code = cex = 0
                          next }
        /^## / { check(); ch = ""; next }
        /^<!-- code: / { code = 1 }
        /^\*\*Code exercise:\*\*/ { cex = 1 }
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
