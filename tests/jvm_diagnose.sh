#!/bin/sh
# jvm_diagnose.sh DIR: diagnose the JVM aggregator by hand, as TUTORIAL ch. 12 does, in about
# a minute (make jvm-diagnose). Two JVMs behind one C backend (DIR/aggregator, 100 ms):
#   pinned  --pin native with a flight recording: its virtual threads block inside qsort's
#           upcall, a native frame a virtual thread cannot unmount over (JDK 25 too; JEP 491
#           freed only `synchronized`), and JFR records each as jdk.VirtualThreadPinned.
#           (JDK 21, without the FFM API: --pin synchronized, which pins there.)
#   parked  the plain virtual mode: a thread dump (jcmd Thread.dump_to_file) in the middle of
#           its load shows the request threads parked in their socket reads, off any carrier.
# Each gets a little load (DIR/aggregator load, loopback, a few seconds); the events and the
# dump are printed in part and kept whole in out/diagnose/. Every server is stopped by the
# PID this script started. Without a JDK 21+ or Tomcat's jars: one line, exit 0.
dir=${1:-.}
agg=$dir/aggregator
root=$(cd "$(dirname "$0")/.." && pwd)
out=out/diagnose
JAVA=$("$root/java/find-jdk" 2>&1) || { echo "jvm-diagnose: skipped: $JAVA"; exit 0; }
CP=$("$root/java/find-jdk" --classpath 2>&1) || { echo "jvm-diagnose: skipped: $CP"; exit 0; }
bin=${JAVA%/java}
[ -x "$agg" ] || { echo "jvm-diagnose: no $agg (build it first)"; exit 1; }
mkdir -p "$out" && rm -f "$out"/*

pids=""
stop() { # the servers this script started, by their PIDs; a JVM deaf to SIGTERM for 5 s is killed
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do
        i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
}
trap stop EXIT
trap 'exit 1' INT TERM HUP

# serve NAME COMMAND...: start it in the background, its log in $out/NAME.log and its PID in
# $out/NAME.pid. Every server here binds port 0 (any free port), so none can clash.
serve() {
    name=$1; shift
    "$@" >"$out/$name.log" 2>&1 &
    echo $! >"$out/$name.pid"; pids="$pids $!"
}
port_of() { # port_of NAME: the port from "... listening on 127.0.0.1:PORT", bounded: 60 s
    i=0
    while [ $i -lt 600 ]; do
        p=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/$1.log" 2>/dev/null)
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.1; i=$((i + 1))
    done
    echo "jvm-diagnose: $1 did not start:" >&2; cat "$out/$1.log" >&2
    return 1
}
# The compiled classes if make java built them since the last edit, else the single-file
# source launcher; JDK 25's preview flags either way (--on-failure cancel needs them).
if [ "$root/build/java/Aggregator.class" -nt "$root/java/Aggregator.java" ]; then
    main="$("$root/java/find-jdk" --preview) -cp $root/build/java:$CP Aggregator"
else main="$("$root/java/find-jdk" --preview-source) -cp $CP $root/java/Aggregator.java"; fi

pin=native
v=$("$JAVA" -version 2>&1 | sed -n 's/^[^"]* version "\([0-9]*\).*/\1/p' | sed -n 1p)
[ "${v:-0}" -ge 22 ] 2>/dev/null || pin=synchronized

serve backend "$agg" backend --port 0 --delay-ms 100
B=$(port_of backend) || exit 1
# shellcheck disable=SC2086 # $main splits on purpose
serve pinned "$JAVA" --enable-native-access=ALL-UNNAMED -XX:StartFlightRecording:settings=default \
    $main --port 0 --mode virtual --pin $pin --timeout-ms 500 --backends 127.0.0.1:$B
# shellcheck disable=SC2086
serve parked "$JAVA" $main --port 0 --mode virtual --backends 127.0.0.1:$B
P=$(port_of pinned) && U=$(port_of parked) || exit 1
pinned_pid=$(cat "$out/pinned.pid"); parked_pid=$(cat "$out/parked.pid")
echo "jvm-diagnose: backend pid $(cat "$out/backend.pid"), pinned JVM pid $pinned_pid (port $P)," \
    "parked JVM pid $parked_pid (port $U)"

# The load: 10 users on the pinned one, 100 on the other, 6 s each after 1 s of warm-up,
# both at once. A request makes 3 calls of 100 ms, so by Little's law about 100 requests are
# in the parked one at any time, nearly all waiting for an answer: the dump is taken then
# (early in the window: jcmd is a JVM too, and takes a while to start and attach).
"$agg" load --url "http://127.0.0.1:$P/aggregate" --users 10 --duration 6 >"$out/pinned.load" 2>&1 &
lp=$!
"$agg" load --url "http://127.0.0.1:$U/aggregate" --users 100 --duration 6 >"$out/parked.load" 2>&1 &
lu=$!
sleep 2 # the warm-up, then 1 s of the window
"$bin/jcmd" "$parked_pid" Thread.dump_to_file -format=text "$PWD/$out/threads.txt" >/dev/null
wait $lp $lu
rps() { awk '/Requests\/sec/ { print $2 }' "$out/$1.load"; }
echo "jvm-diagnose: req/s: pinned $(rps pinned) (10 users), parked $(rps parked) (100 users)"

# JFR: what the recording holds so far, then the pinned events with their stacks (a few at
# start-up are class loading; the ones of the load name the native frame). The first of those
# is printed from its header down to the servlet, without the JDK's socket-read frames: the
# virtual thread parks *on its carrier* (parkOnCarrierThread) in a downstream read, below
# NativeFrame.compare, the Java side of qsort's upcall, whose C frame Java stacks do not show.
"$bin/jcmd" "$pinned_pid" JFR.dump filename="$PWD/$out/pinned.jfr" >/dev/null
"$bin/jfr" print --stack-depth 40 --events jdk.VirtualThreadPinned "$out/pinned.jfr" >"$out/pinned.txt"
echo "jvm-diagnose: $(grep -c '^jdk.VirtualThreadPinned' "$out/pinned.txt") jdk.VirtualThreadPinned events," \
    "$(grep -c 'pinnedReason = "Native or VM frame on stack"' "$out/pinned.txt") with a native frame; the first" \
    "(jfr print --events jdk.VirtualThreadPinned $out/pinned.jfr):"
awk '/^jdk.VirtualThreadPinned/ { ev = "" }
     /^    (java\.util\.concurrent|sun\.nio|java\.net\.Socket|java\.io|sun\.net|java\.lang\.System)/ { next }
     { ev = ev $0 "\n" }
     /AggregateServlet\.aggregate/ && (ev ~ /Native or VM frame/ || ev !~ /pinnedReason/) { printf "%s    ...\n", ev; exit }' "$out/pinned.txt"

# The thread dump: how many virtual threads, how many parked in a socket read, and one of
# those, filtered as the JFR stack above: parked by parkNanos, off its carrier (no
# "parkOnCarrierThread"), in the same downstream read, with no native frame below it.
echo "jvm-diagnose: thread dump ($out/threads.txt): $(grep -c '" virtual' "$out/threads.txt") virtual threads," \
    "$(grep -c 'sun.nio.ch.NioSocketImpl.park' "$out/threads.txt") parked in a socket read; one of them:"
awk '/" virtual/ { th = "" }
     /^ +at java\.base\/(java\.util\.concurrent|sun\.nio|java\.net\.Socket|java\.io|sun\.net|java\.lang\.System)/ { next }
     /^ +- locked/ { next } # (a monitor of a frame left out: JEP 491 unmounted it anyway)
     { th = th $0 "\n" }
     /AggregateServlet\.aggregate/ && th ~ /" virtual/ { printf "%s    ...\n", th; exit }' "$out/threads.txt"

stop
trap - EXIT
echo "jvm-diagnose: stopped pids$pids; files in $out/"
