#!/bin/sh
# test_cli.sh DIR: the ./sim command line as a user meets it: exit codes, messages, and
# byte-identical output for the same scenario and seed.
dir=${1:-.}
sim="$dir/sim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "test_cli: FAIL: $*" >&2; }

# expect STATUS PATTERN -- ARGS...: the exit status and a pattern in stderr
expect() {
    want=$1; pat=$2; shift 3
    "$sim" "$@" >"$tmp/out" 2>"$tmp/err"; got=$?
    if [ "$got" -eq "$want" ] && grep -q -- "$pat" "$tmp/err"; then ok
    else bad "sim $*: want exit $want and '$pat', got exit $got: $(head -c 300 "$tmp/err")"; fi
}

printf 'users = 10\nthread = 3\n' > "$tmp/bad.scn"
expect 2 "$tmp/bad.scn:2: unknown key 'thread'" -- --headless "$tmp/bad.scn"
expect 2 "cannot open" -- --headless "$tmp/missing.scn"
expect 2 "unknown option '--frobnicate'" -- --headless scenarios/default.scn --frobnicate
expect 2 "unknown option '--seriess' (did you mean '--series'?)" -- --headless scenarios/default.scn --seriess x.csv
printf 'program = call(inventory) call(pricing)\nservice.invntory.pool = 3\n' > "$tmp/typo.scn"
expect 2 "$tmp/typo.scn:2: service 'invntory' is not called by the program (services: inventory, pricing)" -- --headless "$tmp/typo.scn"
expect 2 "--set service.invntory.pool=3: service 'invntory' is not called" -- --headless scenarios/massive-io.scn --set service.invntory.pool=3
expect 2 "no scenario file" -- --headless
expect 2 "--set users=lots: users: 'lots' is not a number" -- --headless scenarios/default.scn --set users=lots
expect 2 "needs a value" -- --headless scenarios/default.scn --set
"$sim" --help | grep -q "usage: ./sim" && ok || bad "--help prints usage"
"$sim" --keys | grep -q "platform.max_threads" && ok || bad "--keys lists the keys"
# usage fits an 80-column terminal: ./sim's, and ./aggregator's and each of its commands'
fits80() { awk 'length > 80 { print FILENAME ": " length ": " $0; n++ } END { exit n > 0 }'; }
"$sim" --help | fits80 && ok || bad "./sim --help has lines over 80 columns"
for cmd in "" serve backend load bench microbench calibrate netns; do
    "$dir/aggregator" $cmd --help | fits80 && ok || bad "./aggregator $cmd --help: over 80 columns"
done
"$dir/aggregator" load --frobnicate 2>&1 | fits80 && ok || bad "a flag error's usage: over 80 columns"

# determinism: the same scenario and seed, twice: identical report and time series
args="--headless scenarios/default.scn --set duration=3s --set warmup=1s --quiet"
"$sim" $args --series "$tmp/s1.csv" > "$tmp/r1.txt"
"$sim" $args --series "$tmp/s2.csv" > "$tmp/r2.txt"
cmp -s "$tmp/r1.txt" "$tmp/r2.txt" && ok || bad "same seed: reports differ"
cmp -s "$tmp/s1.csv" "$tmp/s2.csv" && ok || bad "same seed: time series differ"
"$sim" $args --seed 2 > "$tmp/r3.txt"
cmp -s "$tmp/r1.txt" "$tmp/r3.txt" && bad "another seed gives the same report" || ok
[ "$(wc -l < "$tmp/s1.csv")" -gt 40 ] && ok || bad "time series has rows"

# machine formats carry the names scripts rely on
"$sim" $args --json > "$tmp/r.json"
for k in '"scenario"' '"seed"' '"engine"' '"events_per_s"' '"peak_rss_bytes"' '"platform"' '"virtual"' \
         '"throughput_rps"' '"p999"' '"peak_os_threads"' '"peak_carriers_busy"' '"peak_vthreads_parked"' \
         '"peak_ports_time_wait"' '"peak_thread_memory_bytes"' '"in_flight"' \
         '"bounds"' '"littles_law"' '"cpu"' '"pool"' '"ports"' '"binding"'; do
    grep -q "$k" "$tmp/r.json" && ok || bad "--json lacks $k"
done
[ "$("$sim" $args --csv | wc -l)" -eq 3 ] && ok || bad "--csv: a header and two rows"
# the bounds in --csv as in the table and JSON: each bound, which binds
"$sim" $args --csv | head -1 | grep -q ',bound_littles_law_rps,bound_cpu_rps,bound_pool_rps,bound_ports_rps,binding,steady,' && ok || bad "--csv lacks the bounds"
"$sim" $args --csv | grep -q '^platform,.*,pool,[01],[0-9]*$' && ok || bad "--csv: the platform's pool binds in default.scn"
# the virtual scheduler: a key like the others, checked, with the nearest word
expect 2 "virtual.scheduler: 'steel' is not one of steal, fifo, home (did you mean 'steal'?)" -- $args --set virtual.scheduler=steel
"$sim" --keys | grep -q 'virtual.scheduler  *steal' && ok || bad "--keys lists virtual.scheduler, default steal"
"$sim" $args --trace "$tmp/t.json" > /dev/null && head -c 1 "$tmp/t.json" | grep -q '\[' && tail -n 1 "$tmp/t.json" | grep -q '\]' && ok || bad "--trace writes a JSON array"

# intervals: replications are deterministic; every headline figure has its ci95
"$sim" $args --replications 3 --json > "$tmp/i1.json"
"$sim" $args --replications 3 --json | grep -v wall_s > "$tmp/i2.json"
grep -v wall_s "$tmp/i1.json" | cmp -s - "$tmp/i2.json" && ok || bad "--replications 3: reports differ"
for k in '"intervals": {"level": 0.95, "method": "replications", "n": 3}' '"throughput_rps_ci95": ' \
         '"mean_ci95": ' '"p50_ci95": ' '"p99_ci95": ' '"cpu_utilisation_ci95": '; do
    grep -q -F "$k" "$tmp/i1.json" && ok || bad "--replications 3 --json lacks $k"
done
grep -q '"steady": \(true\|false\), "steady_why": "' "$tmp/i1.json" && ok || bad "--json lacks steady, steady_why"
"$sim" --headless scenarios/pinning.scn --set duration=20s --set warmup=5s --replications 1 --quiet | grep -q '^  virtual: not steady: the 15 s window is 0.2 response-time tails (in flight / throughput' && ok || bad "pinning's short window is declared"
# the warm-up left to the default: rep_warmup ends it where the users' 30 s ramp ends
printf 'users = 300\nrampup = 30s\nduration = 60s\nthink = exp(100ms)\nprogram = cpu(exp(100us)) call(A)\nservice.A.latency = exp(100ms)\n' > "$tmp/ramp.scn"
w=$("$sim" --headless "$tmp/ramp.scn" --replications 2 --json | grep '"warmup_rule": "measured"' | sed 's/.*"warmup_s": \([0-9.]*\).*/\1/')
echo "$w" | awk '{ exit !($1 >= 30 && $1 <= 36) }' && ok || bad "the measured warm-up after a 30 s ramp: '$w'"
"$sim" --headless "$tmp/ramp.scn" --set warmup=1s --replications 1 --json | grep -q '"warmup_s": 1, "warmup_rule": "scenario"' && ok || bad "a warm-up given is kept"
"$sim" $args --batches 4 --json | grep -q '"method": "batch_means", "n": 4' && ok || bad "--batches 4 in JSON"
"$sim" $args --replications 1 --json | grep -q '"throughput_rps_ci95": null' && ok || bad "one run: ci95 null"
"$sim" $args --replications 2 --csv | head -1 | grep -q 'throughput_rps,throughput_rps_ci95,' && ok || bad "--csv: ci95 columns"
"$sim" $args | grep -q '95% interval over 5 replications' && ok || bad "a cheap report has 5 replications"
expect 2 "are alternatives" -- $args --replications 3 --batches 4
expect 2 "--replications 0: want a whole number" -- $args --replications 0
# another seed: a different answer, within the intervals of each other (mmc is random)
mm="--headless scenarios/mmc.scn --set duration=20s --quiet --json"
t1=$("$sim" $mm --seed 7 | grep '"virtual"' | sed 's/.*"mean": \([0-9.]*\), "mean_ci95": \([0-9.e-]*\).*/\1 \2/')
t2=$("$sim" $mm --seed 8 | grep '"virtual"' | sed 's/.*"mean": \([0-9.]*\), "mean_ci95": \([0-9.e-]*\).*/\1 \2/')
echo "$t1 $t2" | awk '{ d = $1 - $3; if (d < 0) d = -d; exit !(d > 0 && d <= $2 + $4) }' && ok || bad "seeds 7, 8: mmc means $t1 / $t2 not different and close"

# Every shipped scenario: each "# expect:" line in its header holds. Its forms:
#   MODEL.KEY = NUMBER   the printed 95% interval (KEY_ci95; a key without one, such as a peak,
#                        must match) holds NUMBER, within half a unit of its last digit
#   MODEL.KEY = EXPR     the interval holds EXPR, a first-principles figure computed apart from
#                        the simulator by tests/expect_eval.awk (lnmean, emax, closed: the
#                        product form of a closed network; see that file)
#   MODEL.KEY <= EXPR    a bound: the interval's lower end is not above EXPR
#   MODEL.KEY ~ EXPR within P%   EXPR, where no exact figure exists (the header says why),
#                        holds within P% of it beyond the interval
# And another seed gives a different report whose throughputs are within their intervals of
# each other. Each runs as shipped (5 replications or 10 batches, ~12 s in all), so not under
# ASan, where it would take minutes.
# figure FILE MODEL KEY: KEY's value and its half-width (0 without one) in MODEL's JSON line
figure() {
    line=$(grep "^  \"$2\": " "$1")
    v=$(printf '%s' "$line" | sed -n "s/.*\"$3\": \([-0-9.e+]*\).*/\1/p")
    h=$(printf '%s' "$line" | sed -n "s/.*\"$3_ci95\": \([-0-9.e+]*\).*/\1/p")
    echo "$v ${h:-0}"
}
# expect_holds FILE.json LINE: 0 when the expect line (without "# expect: ") holds, else a
# message on stderr
expect_holds() {
    model=${2%%.*}; rest=${2#*.}; key=${rest%% *}; rest=${rest#* }; op=${rest%% *}; rhs=${rest#* }
    got=$(figure "$1" "$model" "$key"); pct=0; tol=0
    case $got in " "*) echo "$2: the report has no $model.$key" >&2; return 1 ;; esac
    case "$op $rhs" in
    "= "*[!-0-9.]*) want=$(awk -f tests/expect_eval.awk -v expr="$rhs") || return 1 ;;
    "= "*) want=$rhs; d=${rhs#*.}; [ "$d" = "$rhs" ] && d=""
           tol=$(awk -v n=${#d} 'BEGIN { print 0.5 * 10 ^ -n }') ;;
    "<= "*) want=$(awk -f tests/expect_eval.awk -v expr="$rhs") || return 1 ;;
    "~ "*" within "*%) pct=${rhs##* within }; pct=${pct%\%}; rhs=${rhs% within *}
                       want=$(awk -f tests/expect_eval.awk -v expr="$rhs") || return 1 ;;
    *) echo "expect: cannot read '$2'" >&2; return 1 ;;
    esac
    echo "$got $want $tol $pct" | awk -v op="$op" '{ v = $1; h = $2; x = $3; d = v - x; if (d < 0) d = -d
        if (op == "<=") exit !(v - h <= x)
        exit !(d <= h + $4 + $5 / 100 * x + 1e-9 * x) }' && return 0
    echo "$2: the model prints $got (value, 95% half-width), the figure is $want" >&2
    return 1
}
if ! grep -q __asan_init "$sim"; then
    for scn in scenarios/*.scn; do
        "$sim" --headless "$scn" --quiet --json > "$tmp/a.json"
        "$sim" --headless "$scn" --quiet --json --seed 2 > "$tmp/b.json"
        grep -q '^# expect: ' "$scn" && ok || bad "$scn: no '# expect:' line"
        grep '^# expect: ' "$scn" | sed 's/^# expect: //' | while read -r line; do
            expect_holds "$tmp/a.json" "$line" 2>&1 | sed "s|^|test_cli: FAIL: $scn: |" >&2
        done
        grep -v -e wall_s -e events_per_s -e '"seed"' "$tmp/a.json" > "$tmp/a2"; grep -v -e wall_s -e events_per_s -e '"seed"' "$tmp/b.json" > "$tmp/b2"
        cmp -s "$tmp/a2" "$tmp/b2" && bad "$scn: seeds 1 and 2 give the same report" || ok
        for model in platform virtual; do
            x=$(figure "$tmp/a.json" $model throughput_rps); y=$(figure "$tmp/b.json" $model throughput_rps)
            echo "$x $y" | awk '{ d = $1 - $3; if (d < 0) d = -d; exit !(d <= $2 + $4 + 1e-9 * $1) }' && ok ||
                bad "$scn: $model throughput, seed 1: $x, seed 2: $y (value, 95% half-width): not within each other's intervals"
        done
    done 2> "$tmp/expect.err"
    [ -s "$tmp/expect.err" ] && { cat "$tmp/expect.err" >&2; bad "a scenario's expected figure is outside its interval"; } || ok
fi

# --sweep: one row per point and model; a point is the report --set gives
sw="--sweep users=10,100 scenarios/default.scn --set duration=3s --set warmup=1s --replications 2"
"$sim" $sw --csv > "$tmp/sw.csv"
[ "$(wc -l < "$tmp/sw.csv")" -eq 5 ] && head -1 "$tmp/sw.csv" | grep -q '^users,model,throughput_rps,throughput_rps_ci95,' && ok || bad "--sweep --csv: a header and 4 rows"
one=$("$sim" --headless scenarios/default.scn --set duration=3s --set warmup=1s --replications 2 --set users=100 --csv | sed -n 2p | cut -d, -f4-5)
grep -q "^100,platform,$one," "$tmp/sw.csv" && ok || bad "--sweep's users=100 row differs from --set users=100 ($one)"
"$sim" --sweep 'users=10..1000*10' scenarios/default.scn --set duration=2s --set warmup=1s --replications 2 --csv | cut -d, -f1 | tr '\n' ' ' | grep -q '^users 10 10 100 100 1000 1000 $' && ok || bad "--sweep a..b*k: 10, 100, 1000"
[ "$("$sim" $sw --sweep 'think=0,exp(10ms)' --csv | wc -l)" -eq 9 ] && ok || bad "two --sweep keys: a grid of 4 points"
"$sim" $sw --json | grep -c '"values": {"users": ' | grep -q '^2$' && ok || bad "--sweep --json: two points"
"$sim" $sw --plot "$tmp/sw.png" > /dev/null && head -c 4 "$tmp/sw.png" | grep -q PNG && ok || bad "--plot writes a PNG without a display"
expect 2 "--plot draws one --sweep key" -- $sw --sweep 'think=0,1ms' --plot "$tmp/x.png"
expect 2 "want a..b\*k" -- --sweep 'users=100..10*2' scenarios/default.scn
expect 2 "users: 'lots' is not a number" -- --sweep 'users=10,lots' scenarios/default.scn

# screenshots: drawn without a display, deterministic, and the committed ones are current
"$sim" scenarios/default.scn --screenshot "$tmp/d.png" --at 5s && ok || bad "--screenshot fails"
cmp -s "$tmp/d.png" assets/default.png && ok || bad "assets/default.png is stale: run make tutorial-images"
expect 2 "--font /nonexistent.ttf: cannot open" -- scenarios/default.scn --screenshot "$tmp/x.png" --font /nonexistent.ttf
expect 2 "--theme blue: want light or dark" -- scenarios/default.scn --theme blue

# Hostile and careless input: every case ends by itself with a clear message,
# never a crash, a hang or unbounded memory. `run_bounded SECONDS ARGS...` runs ./sim under
# a time limit and records its status in $got (124: it hung).
run_bounded() { t=$1; shift; timeout "$t" "$sim" "$@" >"$tmp/out" 2>"$tmp/err"; got=$?; }
# expect_clean STATUS PATTERN SECONDS -- ARGS...: that status, that message, no sanitizer report
expect_clean() {
    want=$1; pat=$2; t=$3; shift 4
    run_bounded "$t" "$@"
    if [ "$got" -eq "$want" ] && grep -q -- "$pat" "$tmp/err" && ! grep -q 'Sanitizer' "$tmp/err"; then ok
    else bad "sim $*: want exit $want and '$pat' within $t s, got exit $got: $(head -c 300 "$tmp/err")"; fi
}
hdr="users,mode,pool,fanout,delay_ms,throughput_rps,p50_ms,p99_ms,peak_threads,peak_rss_bytes"
# S1: a fanout of 19..60 once overflowed the program buffer: simulated, or refused by line
printf '%s\n100,virtual,on,40,50,600,150,160,6,1000\n' "$hdr" > "$tmp/fan.csv"
run_bounded 60 --validate "$tmp/fan.csv"
{ [ "$got" -eq 0 ] || { [ "$got" -eq 2 ] && grep -q "$tmp/fan.csv:2:" "$tmp/err"; }; } && ! grep -q 'Sanitizer' "$tmp/err" \
    && ok || bad "--validate with fanout 40: exit $got: $(head -c 300 "$tmp/err")"
# --validate by server: a CSV of C and JVM rows needs --server, which selects
# them; for the JVM its RSS and p99 tail are not modelled, so they get no error %
printf '%s,server\n100,virtual,on,3,50,660,152,160,29,360000000,java\n100,virtual,on,3,50,640,153,170,6,9000000,c\n100,platform,on,3,50,655,152,158,127,370000000,java\n' "$hdr" > "$tmp/mixed.csv"
expect 2 "$tmp/mixed.csv:3: server 'c', where line 2 has 'java': the CSV mixes servers; choose one with --server c or --server java" -- --validate "$tmp/mixed.csv"
expect 2 "--server jvm: want c or java" -- --validate "$tmp/mixed.csv" --server jvm
"$sim" --validate "$tmp/mixed.csv" --server java > "$tmp/vj.txt" 2>&1
[ "$(grep -c '^    100 ' "$tmp/vj.txt")" -eq 2 ] && [ "$(grep -o 'not modelled' "$tmp/vj.txt" | wc -l)" -eq 7 ] &&
    grep -q '^java: .*RSS.*GC pauses' "$tmp/vj.txt" && grep -q 'p99_ms not modelled' "$tmp/vj.txt" && ok || bad "--server java: two rows, RSS and p99 not modelled: $(cat "$tmp/vj.txt")"
"$sim" --validate "$tmp/mixed.csv" --server c > "$tmp/vc.txt" 2>&1
[ "$(grep -c '^    100 ' "$tmp/vc.txt")" -eq 1 ] && ! grep -q 'not modelled' "$tmp/vc.txt" && ok || bad "--server c: one row, all modelled: $(cat "$tmp/vc.txt")"
"$sim" --validate "$tmp/mixed.csv" --server java --json | grep -q '"p99_ms": {"measured": 160, "predicted": null, "rel_error": null, "not_modelled": true}' && ok || bad "--server java --json: p99 not modelled"
expect 2 "no data rows of server 'java'" -- --validate "$tmp/fan.csv" --server java
# S2: a picture too large for memory is refused before SDL is asked for it
expect_clean 2 "--size 24000x24000: " 20 -- scenarios/default.scn --screenshot "$tmp/big.png" --size 24000x24000
# S3, S4, S5: files that are not scenario text
expect_clean 2 "/dev/zero: not a regular file (a character device)" 10 -- --headless /dev/zero
expect_clean 2 "/dev/zero: not a regular file" 10 -- --headless scenarios/default.scn --calibration /dev/zero
printf 'users = 5\000garbage\n' > "$tmp/nul.scn"
expect_clean 2 "$tmp/nul.scn:1: " 10 -- --headless "$tmp/nul.scn"
expect_clean 2 "$tmp: not a regular file (a directory)" 10 -- --headless "$tmp"
expect_clean 2 "$tmp: not a regular file (a directory)" 10 -- --headless scenarios/default.scn --calibration "$tmp"
# S6: in-range values whose product is runaway memory are refused with a reason. The time
# series is kept only for what draws or writes it (here --series): a report alone keeps none.
expect_clean 2 "memory" 20 -- --headless scenarios/default.scn --set sample_interval=1ms --set duration=86400s --series "$tmp/day.csv"
# S6: a retry storm (calls fail at once, retried 1us later) once queued an idle check per idle
# period of a pool thread (~75 MB/s): bounded in time, and in memory under ulimit -v (outside
# ASan, which reserves terabytes of address space)
# (under ASan a fifth of the storm: the same path, each event several times dearer, so that
# 60 s bound a hang and not a neighbour's share of the CPU)
if grep -q __asan_init "$sim"; then lim=unlimited; storm=10ms; else lim=150000; storm=50ms; fi
printf 'users = 100\nprogram = call(A)\nservice.A.timeout = 1ns\nretry_after = 1us\nduration = %s\nwarmup = 0\n' "$storm" > "$tmp/storm.scn"
(ulimit -v $lim; exec timeout 60 "$sim" --headless "$tmp/storm.scn" --quiet) > "$tmp/out" 2> "$tmp/err"; got=$?
[ "$got" -eq 0 ] && grep -q '^  timeout ' "$tmp/out" && ok || bad "retry storm: exit $got: $(head -c 300 "$tmp/err")"
# minor: numbers that are not numbers, and writes that fail
expect_clean 2 "--at 1e30s" 10 -- scenarios/default.scn --screenshot "$tmp/a.png" --at 1e30s
expect_clean 2 "--fps nan" 10 -- scenarios/default.scn --frames "$tmp/fr" --fps nan
expect_clean 2 "users: '0x10'" 10 -- --headless scenarios/default.scn --set users=0x10
expect_clean 1 "/dev/full" 30 -- --headless scenarios/default.scn --set duration=2s --set warmup=1s --quiet --trace /dev/full
timeout 30 "$sim" --headless scenarios/default.scn --set duration=2s --set warmup=1s --quiet > /dev/full 2> "$tmp/err"; got=$?
[ "$got" -ne 0 ] && grep -q "write" "$tmp/err" && ok || bad "report to /dev/full: exit $got, '$(head -c 200 "$tmp/err")'"
long=$(printf 'x%.0s' $(seq 100))
expect_clean 2 "service name" 10 -- --headless scenarios/default.scn --set "program=call($long)"

# Hardening: crashes, hangs and writes that failed silently. Each case
# ends within a second or two with a clear message: exit 2 for bad input, 1 for a failed write.
printf 'users = 10\nduration = 2s\nprogram = cpu(100us) call(A) cpu(50us)\n' > "$tmp/T.scn"
T="$tmp/T.scn"
# item 1: a zero-time loop is reported, and the model never made is not freed
expect_clean 2 "zero-time loop" 5 -- --headless --replications 1 "$T" --set 'program=cpu(0)'
expect_clean 2 "zero-time loop" 5 -- --headless --replications 1 "$T" --sweep 'program=cpu(0),cpu(1ms)'
# item 2: --font takes only a font the system installed (stb_truetype trusts every offset in
# a font file): anything else, a real font cut short and copied elsewhere included, is refused
# by its path before a byte is read
expect_clean 2 "--font /etc/passwd: not in the system's font directories" 2 -- "$T" --screenshot "$tmp/f.png" --font /etc/passwd
expect_clean 2 "--font /etc/passwd: not in the system's font directories" 2 -- --headless "$T" --sweep users=1,2 --plot "$tmp/f.png" --font /etc/passwd
expect_clean 2 "--font $tmp: not a regular file (a directory)" 2 -- "$T" --screenshot "$tmp/f.png" --font "$tmp"
head -c 20000 /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf > "$tmp/cut.ttf"
expect_clean 2 "--font $tmp/cut.ttf: not in the system's font directories" 2 -- "$T" --screenshot "$tmp/f.png" --font "$tmp/cut.ttf"
[ -e "$tmp/f.png" ] && bad "a picture was written with a font refused" || ok
# item 5: a FIFO (or any file that is not a regular one) is refused at once, never waited on
mkfifo "$tmp/fifo"
expect_clean 2 "$tmp/fifo: not a regular file (a FIFO)" 5 -- --headless "$tmp/fifo"
expect_clean 2 "$tmp/fifo: not a regular file (a FIFO)" 5 -- --headless "$T" --calibration "$tmp/fifo"
expect_clean 2 "$tmp/fifo: not a regular file (a FIFO)" 5 -- --validate "$tmp/fifo"
expect_clean 2 "--font $tmp/fifo: not a regular file (a FIFO)" 5 -- "$T" --screenshot "$tmp/f.png" --font "$tmp/fifo"
expect_clean 1 "cannot write $tmp/fifo: a FIFO that nobody reads" 5 -- --headless "$T" --sweep users=1,2 --plot "$tmp/fifo"
expect_clean 1 "cannot write $tmp/fifo: a FIFO that nobody reads" 5 -- --headless "$T" --series "$tmp/fifo"
# item 6: a series not written ends the run with exit 1, and no report of a run cut short
for fmt in "" --json; do
    expect_clean 1 "cannot write /dev/full: No space left on device" 5 -- --headless "$T" --series /dev/full $fmt
    [ -s "$tmp/out" ] && bad "--series /dev/full $fmt: a report was printed: $(head -c 200 "$tmp/out")" || ok
done
# every output: --help and --keys to a full disk fail too
for flag in --help --keys; do
    "$sim" $flag > /dev/full 2> "$tmp/err"; got=$?
    [ "$got" -eq 1 ] && grep -q "No space left on device" "$tmp/err" && ok || bad "$flag > /dev/full: exit $got"
done
# item 7: every picture's write is checked (stbi_write_png said yes to a full disk)
expect_clean 1 "cannot write /dev/full: No space left on device" 5 -- "$T" --screenshot /dev/full
expect_clean 1 "cannot write /dev/full: No space left on device" 5 -- --headless "$T" --sweep users=1,2 --plot /dev/full
mkdir "$tmp/fr"; ln -s /dev/full "$tmp/fr/frame_00002.png" # the third frame meets a full disk
expect_clean 1 "cannot write $tmp/fr/frame_00002.png: No space left on device" 10 -- "$T" --frames "$tmp/fr" --fps 2
grep -q "wrote" "$tmp/err" && bad "--frames onto a full disk says it wrote them" || ok
# items 3, 4, 16: --sweep lists are checked before anything runs (they looped forever on an
# infinite range, indexed point -1 for an empty list, ignored a trailing comma or a key twice)
expect_clean 2 "want a..b\*k with finite numbers" 2 -- --headless "$T" --sweep 'users=1e400..1e400*2'
expect_clean 2 "want a..b\*k with finite numbers" 2 -- --headless "$T" --sweep 'users=1..1e400*1e300'
expect_clean 2 "want a..b\*k with finite numbers" 2 -- --headless "$T" --sweep 'users=1..100*inf'
expect_clean 2 "takes more than 1000 steps" 2 -- --headless "$T" --sweep 'users=1..2*1.0000001'
expect_clean 2 "none empty" 2 -- --headless "$T" --sweep 'users=' --plot "$tmp/e.png"
[ -e "$tmp/e.png" ] && bad "--sweep users= wrote a picture" || ok
expect_clean 2 "none empty" 2 -- --headless "$T" --sweep 'nosuchkey='
expect_clean 2 "none empty" 2 -- --headless "$T" --sweep 'users=1,2,'
expect_clean 2 "'1' is given twice" 2 -- --headless "$T" --sweep 'users=1,2,1'
expect_clean 2 "--sweep users=3: the key is swept twice" 2 -- --headless "$T" --sweep users=1,2 --sweep users=3
expect_clean 2 "--plot $tmp/p.png draws a sweep: give --sweep" 2 -- --headless "$T" --plot "$tmp/p.png"
# item 15: a UTF-8 byte order mark, as some editors write, is not part of the first key
printf '\357\273\277users = 10\nduration = 2s\n' > "$tmp/bom.scn"
expect_clean 0 "" 10 -- --headless "$tmp/bom.scn" --replications 1
grep -q '^  10 users closed loop' "$tmp/out" && ok || bad "a BOM: the users key was not read: $(head -c 300 "$tmp/out")"
# item 15: a contradiction is blamed where it was made (the calibration's line), not on the
# scenario that loaded it, and names where the other key came from
printf 'platform.max_threads = 100\nplatform.min_spare = 300\n' > "$tmp/clash.ini"
expect_clean 2 "$tmp/clash.ini:2: platform.min_spare exceeds platform.max_threads (platform.max_threads set at $tmp/clash.ini:1)" 2 -- --headless "$T" --calibration "$tmp/clash.ini"
expect_clean 2 "^--set warmup=5s: warmup must be shorter than duration (duration set at $T:2)" 2 -- --headless "$T" --set warmup=5s
# item 12: a calibration that sets a point's workload is refused at its line (users = 1 made
# every --validate point a 1-user run, silently)
printf "users,mode,pool,fanout,delay_ms,throughput_rps,p50_ms,p99_ms,peak_threads,peak_rss_bytes\n1000,virtual,on,3,50,6000,150,160,6,1000\n" > "$tmp/v1000.csv"
printf '# costs\nvirtual.create = 2us\nusers = 1\n' > "$tmp/users.ini"
expect_clean 2 "$tmp/users.ini:3: users is set by each --validate point from its row" 5 -- --validate "$tmp/v1000.csv" --calibration "$tmp/users.ini"
printf 'duration = 3s\n' > "$tmp/dur.ini"
expect_clean 2 "$tmp/dur.ini:1: duration is set by each --validate point" 5 -- --validate "$tmp/v1000.csv" --calibration "$tmp/dur.ini"
printf 'service.backend.latency = 1ms\n' > "$tmp/lat.ini"
expect_clean 2 "$tmp/lat.ini:1: service.backend.\* is set by each --validate point" 5 -- --validate "$tmp/v1000.csv" --calibration "$tmp/lat.ini"
printf 'virtual.create = 2us\n' > "$tmp/ok.ini"
run_bounded 60 --validate "$tmp/v1000.csv" --calibration "$tmp/ok.ini"
[ "$got" -eq 0 ] && grep -q '^   1000 virtual ' "$tmp/out" && ok || bad "a calibration of costs only: exit $got: $(head -c 300 "$tmp/err")"

# The committed study report names paths as the project does, relative to it (tests/study's
# portable): an absolute path (a JDK's directory, a build directory) is one machine's.
abs=$(grep -noE '(^|[[:space:]:=(`"'"'"'])/[A-Za-z0-9._-]+/[^[:space:]:;,)`"]*' assets/study/study.md)
[ -z "$abs" ] && ok || bad "assets/study/study.md names this machine's paths: $(echo "$abs" | head -n 3 | tr '\n' ' ')"

# portable itself, on the JVM's command lines bench prints: with the JVM's own options before
# -cp (--enable-preview, and the source launcher's --source 25) and without, from a build and
# from the source file.
eval "$(sed -n '/^portable() {/,/^}/p' tests/study)"
for line in '/usr/lib/jvm/j/bin/java --enable-preview -cp /p/build/java:/u/a.jar Aggregator; x' \
    '/usr/lib/jvm/j/bin/java -cp /p/build/java:/u/a.jar Aggregator; x' \
    '/usr/lib/jvm/j/bin/java --enable-preview -cp /u/a.jar:/u/b.jar /p/java/Aggregator.java; x' \
    '/usr/lib/jvm/j/bin/java --enable-preview --source 25 -cp /u/a.jar /p/./java/Aggregator.java; x'; do
    got_line=$(echo "java: $line" | portable)
    case $got_line in
    *' /'*) bad "portable leaves a machine's path in: $got_line" ;;
    *--enable-preview*) ok ;;
    *) case $line in *--enable-preview*) bad "portable drops the JVM's options: $got_line" ;; *) ok ;; esac ;;
    esac
done
got_line=$(echo 'auth rs256: serve --auth rs256:/tmp/aggregator-bench.x1/rs256.pub' | portable)
[ "$got_line" = 'auth rs256: serve --auth rs256:rs256.pub' ] && ok ||
    bad "portable leaves bench's temporary key path in: $got_line"

# The structured fan-out under failures (tests/study's step 4), as committed: each row of
# assets/study/fail-SERVER.csv, read here by column name, against the topology's own truth (the
# first call's backend fails a share F of its calls after M ms, the K - 1 others answer after D):
# cancel's failed requests answer within 1.2 M, wait's after the slowest sibling (D to 1.2 D); every
# policy begins K calls a request (all are forked at once; within 10%: the JVM reads 2.9 under
# either policy, its counter read a little apart from the load's window); and the connection time
# per request is K D less, on the failed share F, what the policy saves of the siblings (cancel: K
# (D - M), all of the scope; wait: D - M, the failing call's own), within 10%. Then the simulator's
# prediction of the same rows (tests/study's costs), whose calls per request must be within 10% of
# the measured, and so must the failed p50 where a calibration gives the model the server's own CPU
# (assets/study/SERVER.ini): without one (the JVM's, which calibrate refuses on a busy machine) the
# model leaves out the few ms the JVM spends on a request, a tenth of a 20 ms failure, and that
# check is skipped and counted.
eval "$(sed -n '/^costs() {/,/^}/p' tests/study)"
fan_skipped=0
fan_uncal=""
for srv in c java; do
    csv=assets/study/fail-$srv.csv
    if [ ! -s "$csv" ]; then
        fan_skipped=$((fan_skipped + 1))
        continue
    fi
    # one line a row: policy M D K F failed_p50 calls_per_req call_ms_per_req
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { print $c["on_failure"], $c["fail_after_ms"], $c["delay_ms"], $c["fanout"],
                $c["fail_share"], $c["failed_p50_ms"], $c["calls_per_req"], $c["call_ms_per_req"] }' \
        "$csv" > "$tmp/fan-measured"
    err=$(awk '{ p = $1; m = $2; d = $3; k = $4; f = $5; p50 = $6; calls = $7; held = $8
        if (p == "cancel" && !(p50 <= 1.2 * m))
            printf "cancel: failed p50 %g ms above 1.2 x %g ms; ", p50, m
        if (p == "wait" && !(p50 >= 0.95 * d && p50 <= 1.2 * d))
            printf "wait: failed p50 %g ms, not the slowest sibling %g ms; ", p50, d
        if (p != "cancel" && p != "wait") printf "policy %s; ", p
        if (!(calls >= 0.9 * k && calls <= 1.1 * k))
            printf "%s: %g calls a request, not %d; ", p, calls, k
        saved = p == "cancel" ? k * (d - m) : d - m
        want = k * d - f * saved
        if (!(held >= 0.9 * want && held <= 1.1 * want))
            printf "%s: %g ms of connection a request, want %g within 10%%; ", p, held, want
    } END { if (NR < 2) printf "want a cancel and a wait row, got %d rows", NR }' "$tmp/fan-measured")
    [ -z "$err" ] && ok || bad "$csv: $err"
    # shellcheck disable=SC2046 # costs prints the options, split as tests/study splits them
    "$sim" --validate "$csv" --server "$srv" --json $(out=assets/study costs "$srv") \
        > "$tmp/fan.json" 2> "$tmp/err" || { bad "sim --validate $csv: $(head -c 300 "$tmp/err")"; continue; }
    sed -n 's/.*"failed_p50_ms": {[^}]*"predicted": \([-0-9.e+]*\)}.*"calls_per_req": {[^}]*"predicted": \([-0-9.e+]*\)}.*"call_ms_per_req": {[^}]*"predicted": \([-0-9.e+]*\)}.*/\1 \2 \3/p' \
        "$tmp/fan.json" > "$tmp/fan-predicted"
    cal=0
    [ -f "assets/study/$srv.ini" ] && cal=1
    [ $cal -eq 1 ] || fan_uncal="$fan_uncal $srv"
    err=$(paste -d' ' "$tmp/fan-measured" "$tmp/fan-predicted" | awk -v cal=$cal '
        { if (NF != 11) { printf "row %d: no prediction; ", NR; next }
          if (cal && !($9 >= 0.9 * $6 && $9 <= 1.1 * $6))
              printf "%s: failed p50 predicted %g ms, measured %g; ", $1, $9, $6
          if (!($10 >= 0.9 * $7 && $10 <= 1.1 * $7))
              printf "%s: calls a request predicted %g, measured %g; ", $1, $10, $7
          if (!($11 >= 0.9 * $8 && $11 <= 1.1 * $8))
              printf "%s: connection ms a request predicted %g, measured %g; ", $1, $11, $8 }')
    [ -z "$err" ] && ok || bad "sim --validate $csv: $err"
done
[ $fan_skipped -eq 0 ] || echo "test_cli: skipped $fan_skipped fan-out check(s): no assets/study/fail-*.csv (make study)"
[ -z "$fan_uncal" ] ||
    echo "test_cli: skipped the predicted failed p50 of$fan_uncal: no calibration in assets/study/"
skipped=$((fan_skipped + $(echo $fan_uncal | wc -w)))

# Where the prediction's binding bound is the CPU, the p99 is not modelled, on the C server too:
# printed so, with the reason once; where another bound binds, the p99 keeps its prediction.
# With the bench's server_p99_ms, the cpu: line gives each such row's server p99 beside the
# client's, as the CSV has them (read here by column name); a row another bound binds is not
# listed. (One simulation of both rows: 5,000 users are seconds under ASan.)
printf 'users,mode,pool,fanout,delay_ms,throughput_rps,p50_ms,p99_ms,peak_threads,peak_rss_bytes,server_p50_ms,server_p99_ms\n5000,virtual,on,1,1,20000,60,300,3,1000,40,210.5\n50,virtual,on,1,50,990,50,52,3,1000,50,51.2\n' > "$tmp/cpu.csv"
"$sim" --validate "$tmp/cpu.csv" --server c > "$tmp/out" 2> "$tmp/err"
cpu_rows=$(grep -cE '^ +5000 virtual .*\| +300.0 +not modelled \|' "$tmp/out")
io_rows=$(grep -cE '^ +50 virtual .*\| +52.0 +[0-9.]+ +[-+][0-9]+% \|' "$tmp/out")
[ "$cpu_rows" = 1 ] && [ "$io_rows" = 1 ] && grep -q '^cpu: the p99 where the CPU binds' "$tmp/out" && ok ||
    bad "sim --validate: the p99 unmodelled where the CPU binds, only there: $(head -c 600 "$tmp/out")"
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["users"] == 5000 { printf "client'"'"'s: %s %s %.1f of %.1f ms", $c["users"], $c["mode"], $c["server_p99_ms"], $c["p99_ms"] }' "$tmp/cpu.csv")
grep '^cpu: ' "$tmp/out" | grep -qF "$want" && ! grep '^cpu: ' "$tmp/out" | grep -q ' 50 virtual' && ok ||
    bad "sim --validate: the server's own p99 beside the client's where the CPU binds ($want): $(grep '^cpu: ' "$tmp/out")"
# and --json carries it per point, where the CSV has it (the I/O-bound row alone: cheap)
sed -n '1p;3p' "$tmp/cpu.csv" > "$tmp/io.csv"
"$sim" --validate "$tmp/io.csv" --server c --json 2> "$tmp/err" | grep -q '"server_p99_ms": 51.2,' && ok ||
    bad "sim --validate --json: no server_p99_ms 51.2 for the row that has it: $(cat "$tmp/err")"

# What a secured endpoint costs (tests/study's step 5), as committed: the RS256 check off and on,
# side by side, read by column name, against truths that are not the simulator's. Under massive
# I/O (auth-c-massive.csv) the check is CPU, not waiting: each side still serves within 15% of
# its Little's-law bound (the pool's 200 / K D, the users' N / K D). In every grid the CPU a
# request grows with the check by at least 0.8 of the check's own cost, timed alone in-process
# (the figure in the comment of auth-SERVER.ini's auth.rs256_cpu, or the key itself in a file
# that has only that: a second measurement). With short calls (auth-c-cpu.csv, and the JVM's
# auth-java-cpu.csv) the CPU bound binds the virtual side at the most users (under 0.8 N / D)
# and the check lowers it (fewer req/s than without). Then the simulator's prediction, from
# the server's auth-SERVER.ini (the check's cost under load, measured at calibrate's own
# saturated point, not these): on the C server within 5% of the measured throughput under
# massive I/O and within 10% at the CPU bound (the most users); on the JVM within 20% there
# (README says why it is 12% and 17% low: cpu.cache_pressure). Without a calibration (a busy
# machine) the cost and prediction checks are skipped and counted.
auth_col='NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }'
for grid in c-massive c-cpu java-cpu; do
    srv=${grid%%-*} part=${grid#*-}
    csv=assets/study/auth-$grid.csv auth_ini=assets/study/auth-$srv.ini
    if [ ! -s "$csv" ]; then
        skipped=$((skipped + 1))
        echo "test_cli: skipped the secured endpoint's $part check: no $csv (make study)"
        continue
    fi
    alone=$([ -f $auth_ini ] && sed -n -e 's/^auth.rs256_cpu = .* CPU clock, \([0-9.]*\) us, median.*/\1/p' \
        -e 't' -e 's/^auth.rs256_cpu = \([0-9.]*\)us.*/\1/p' $auth_ini)
    check=$(awk -F, -v cpu="$alone" \
        -v part=$part "$auth_col"'
        { key = $c["auth"] " " $c["mode"]; n = $c["users"]; kd = $c["fanout"] * $c["delay_ms"] / 1000
          bound = ($c["mode"] == "platform" && n > 200 ? 200 : n) / kd
          if (part == "massive" && !($c["throughput_rps"] >= 0.85 * bound))
              printf "%s: %g req/s at %d users, under 0.85 of its bound %g; ", key, $c["throughput_rps"], n, bound
          if (n >= top[key]) { top[key] = n; rps[key] = $c["throughput_rps"]; us[key] = $c["cpu_us_per_req"] } }
        END { for (m = 0; m < 2; m++) { mode = m ? "virtual" : "platform"
                  if (!(("off " mode) in rps) || !(("rs256 " mode) in rps)) { printf "no off and rs256 rows of %s; ", mode; continue }
                  grow = us["rs256 " mode] - us["off " mode]
                  if (cpu != "" && !(grow >= 0.8 * cpu))
                      printf "%s: CPU a request grew by %g us with the check, under 0.8 of its %g us; ", mode, grow, cpu }
              v = "virtual"; n = top["rs256 " v]
              if (part == "cpu" && !(rps["rs256 " v] < 0.8 * n / kd))
                  printf "rs256 virtual at %d users: %g req/s, not CPU-bound (N / D %g); ", n, rps["rs256 " v], n / kd
              if (part == "cpu" && !(rps["rs256 " v] < rps["off " v]))
                  printf "rs256 virtual at %d users: %g req/s, not under the %g without the check; ", n, rps["rs256 " v], rps["off " v] }' "$csv")
    [ -z "$check" ] && ok || bad "$csv: $check"
    if [ ! -f $auth_ini ]; then
        skipped=$((skipped + 2))
        echo "test_cli: skipped the secured endpoint's $part cost and prediction checks: no $auth_ini"
        continue
    fi
    "$sim" --validate "$csv" --server $srv --calibration $auth_ini --json > "$tmp/auth.json" 2> "$tmp/err" ||
        { bad "sim --validate $csv: $(head -c 300 "$tmp/err")"; continue; }
    tol=$(case $grid in c-massive) echo 0.05 ;; c-cpu) echo 0.10 ;; *) echo 0.20 ;; esac)
    err=$(sed -n 's/.*"users": \([0-9]*\), "mode": "\([a-z]*\)".*"throughput_rps": {[^}]*"rel_error": \([-0-9.e+]*\)}.*"auth": "\([a-z0-9]*\)".*"binding_bound": "\([a-z_]*\)".*/\1 \2 \3 \4 \5/p' \
        "$tmp/auth.json" | awk -v tol=$tol -v part=$part '{ n++; e = $3 < 0 ? -$3 : $3
            if (part == "massive" || ($1 >= 1600 && $5 == "cpu")) { cpu += part == "cpu"
                if (e > tol) printf "%s %s %s: predicted %+.1f%%; ", $4, $2, $1, 100 * $3 } }
        END { if (n < 4) printf "%d predictions, want a row each", n
              if (part == "cpu" && cpu < 2) printf "%d rows predicted CPU-bound at the most users, want 2", cpu }')
    [ -z "$err" ] && ok || bad "sim --validate $csv --calibration $auth_ini: $err"
done

echo "test_cli: $pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
