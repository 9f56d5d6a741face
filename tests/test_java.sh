#!/bin/sh
# test_java.sh DIR: java/Aggregator.java (embedded Tomcat on a JDK >= 21) against the C
# backend and load generator of DIR/aggregator: the contract of `aggregator serve` (answers,
# errors, /metrics) and the point of the lab: under load, the virtual mode holds far fewer OS
# threads than the platform pool; and `aggregator bench --server java`, whose CSV the
# simulator reads; the failure reasons and allocation counter of /metrics, who closes first
# without a pool (in private network namespaces, where one can be made), --pin native, and
# shedding load with --permits, and the structured fan-out (--on-failure cancel against wait,
# JDK 25 with --enable-preview, else skipped and counted), and bearer tokens (--auth, tokens
# minted by openssl, else skipped and counted). Loopback only, a block of 28 ports
# from 27600 on (the first that no other run holds), about a minute and a half (the drip cases
# wait for their deadlines). Without a JDK 21+ or embedded Tomcat it says why and counts every
# check as skipped.
dir=${1:-.}
agg=$dir/aggregator
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pids=""
cleanup() {
    for p in $pids; do kill "$p" 2>/dev/null; done
    for p in $pids; do # bounded: a JVM that ignores SIGTERM for 5 s is killed
        i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$p" 2>/dev/null
    done
    rm -rf "$tmp" ${portlock:+"$portlock"}
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
pass=0; fail=0; skipped=0

# check DESCRIPTION COMMAND...: one assertion (the skip count below counts these lines)
check() {
    d=$1; shift
    if "$@"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "test_java: FAIL: $d" >&2; fi
}

skip() {
    echo "test_java: $1"
    echo "test_java: 0 passed, 0 failed, $(grep -c '^ *check ' "$0") skipped"
    exit 0
}
JAVA=$("$root/java/find-jdk" 2>"$tmp/err") || skip "$(cat "$tmp/err")"
CP=$("$root/java/find-jdk" --classpath 2>"$tmp/err") || skip "$(cat "$tmp/err")"
PREVIEW=$("$root/java/find-jdk" --preview) # --enable-preview on JDK 25+: StructuredTaskScope
command -v curl >/dev/null || skip "curl not found: install curl"
[ -x "$agg" ] || { echo "test_java: no $agg (build it first)"; echo "test_java: 0 passed, 1 failed"; exit 1; }
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

# Compile once (the source launcher would compile again at every start).
if ! "${JAVA%/java}/javac" -nowarn -cp "$CP" -d "$tmp/classes" "$root/java/Aggregator.java" 2>"$tmp/javac"; then
    cat "$tmp/javac" >&2
    echo "test_java: 0 passed, 1 failed"
    exit 1
fi

# start NAME COMMAND...: run in the background, output in $tmp/NAME.log, pid in $tmp/NAME.pid
start() {
    name=$1; shift
    "$@" >"$tmp/$name.log" 2>&1 &
    echo $! >"$tmp/$name.pid"
    pids="$pids $!"
}
java_server() { # java_server NAME PORT FLAGS...
    name=$1; port=$2; shift 2
    # shellcheck disable=SC2086 # PREVIEW: no flag or one
    start "$name" "$JAVA" $PREVIEW -cp "$tmp/classes:$CP" Aggregator --port "$port" "$@"
}
# ready PORT PATH: poll until something answers HTTP there (bounded: 20 s).
ready() {
    i=0
    while [ $i -lt 200 ]; do
        curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$1$2" && return 0
        sleep 0.1; i=$((i + 1))
    done
    echo "test_java: nothing answers on port $1" >&2
    return 1
}
status() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }

# port_block: the first block of 30 ports, BASE..BASE+29 from 27600 on by steps of 100, that
# no other run of this test holds (a lock directory per block, taken with mkdir, holding its
# owner's pid; a dead owner's is taken over) and where nothing listens. Two runs of the tests
# on one machine would otherwise poll each other's servers.
port_block() {
    b=27600
    while [ $b -lt 32000 ]; do
        l=/tmp/loomlab-test-java.$b
        if mkdir "$l" 2>/dev/null || { o=$(cat "$l/pid" 2>/dev/null) && ! kill -0 "$o" 2>/dev/null; }; then
            echo $$ >"$l/pid"
            ss -Htln | awk -v lo=$b -v hi=$((b + 29)) '{ n = split($4, a, ":"); if (a[n] >= lo && a[n] <= hi) f = 1 }
                END { exit !f }' || { echo $b; return 0; }
            rm -rf "$l"
        fi
        b=$((b + 100))
    done
    return 1
}
base=$(port_block) || { echo "test_java: no free block of 30 ports from 27600"; echo "test_java: 0 passed, 1 failed"; exit 1; }
portlock=/tmp/loomlab-test-java.$base
echo "test_java: ports $base-$((base + 29))"
B=$base; SLOW=$((base + 8)); DEAD=$((base + 9))          # backends (nothing listens on DEAD)
V=$((base + 1)); P=$((base + 2)); D=$((base + 3)); N=$((base + 4)); H=$((base + 5))
T=$((base + 6)); G=$((base + 7))                          # Java servers
NATIVE=$((base + 15)); SHED=$((base + 16)); NSB=$((base + 17)); NSJ=$((base + 18)) # more; NSB and NSJ only inside namespaces
BENCH=$((base + 20))                                      # bench --port: it and the next
S300A=$((base + 22)); S300B=$((base + 23)); CANCEL=$((base + 24)); WAIT=$((base + 25)) # --on-failure
AUTHH=$((base + 26)); AUTHR=$((base + 27))                 # --auth hs256, rs256
CAUTHH=$((base + 28)); CAUTHR=$((base + 29))               # the same on the C server

# Who closes first, without a pool: each way in a private network namespace of its own with
# 100 ephemeral ports (40000-40099) and tcp_tw_reuse = 0, where a C backend (answering at
# once), the JVM with --no-pool --close-first MODE and 40 requests (120 calls) from one curl
# on one connection run. The
# namespace's `ss` says which side's sockets wait in TIME_WAIT; /metrics what the calls did.
# Started first, in the background: it runs beside the checks below.
cat >"$tmp/close_first.sh" <<CLOSE_FIRST
# close_first.sh MODE, inside the namespace: results in $tmp/ns-MODE.*
ip link set lo up && sysctl -q -w net.ipv4.ip_local_port_range="40000 40099" net.ipv4.tcp_tw_reuse=0 || exit 1
"$agg" backend --port $NSB --delay-ms 0 >/dev/null 2>&1 &
nb=\$!
"$JAVA" -cp "$tmp/classes:$CP" Aggregator --port $NSJ --backends 127.0.0.1:$NSB --no-pool --close-first \$1 \
    >"$tmp/ns-\$1.log" 2>&1 &
nj=\$!
i=0; until curl -s -o /dev/null --max-time 1 http://127.0.0.1:$NSJ/metrics || [ \$i -ge 200 ]; do sleep 0.1; i=\$((i + 1)); done
curl -s -o /dev/null --max-time 60$(for i in $(seq 40); do printf ' http://127.0.0.1:%s/aggregate' $NSJ; done)
ss -Htan state time-wait "( dport = :$NSB )" | wc -l >"$tmp/ns-\$1.tw-ours"     # our ephemeral ports
ss -Htan state time-wait "( sport = :$NSB )" | wc -l >"$tmp/ns-\$1.tw-backend" # the backend's port
curl -s --max-time 5 http://127.0.0.1:$NSJ/metrics >"$tmp/ns-\$1.metrics"
kill \$nj \$nb; wait \$nj \$nb
CLOSE_FIRST
namespace=""
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then namespace="unshare -n"
elif unshare -rn true 2>/dev/null; then namespace="unshare -rn"
else echo "test_java: skipped: cannot make a private network namespace: $(unshare -rn true 2>&1 | head -n 1)"; fi
ns_kids=""
if [ -n "$namespace" ]; then
    for mode in client server; do
        $namespace sh "$tmp/close_first.sh" $mode >"$tmp/ns-$mode.out" 2>&1 &
        ns_kids="$ns_kids $!"
    done
fi
start backend "$agg" backend --port $B --delay-ms 20
start slow "$agg" backend --port $SLOW --delay-ms 3000
java_server virtual $V --mode virtual --backends 127.0.0.1:$B
java_server platform $P --mode platform --threads 150 --backends 127.0.0.1:$B
java_server dead $D --mode virtual --timeout-ms 2000 --backends 127.0.0.1:$DEAD
java_server pin $N --mode virtual --pin --backends 127.0.0.1:$B
java_server httpclient $H --mode virtual --client httpclient --backends 127.0.0.1:$B
java_server timeout $T --mode platform --timeout-ms 300 --backends 127.0.0.1:$SLOW
java_server hcdefault $G --mode virtual --client httpclient-default --backends 127.0.0.1:$B
# --pin native with a flight recording (its jdk.VirtualThreadPinned events), and shedding: one
# permit, 200 ms to wait for it, a call of 3 s holding it.
start native "$JAVA" $PREVIEW --enable-native-access=ALL-UNNAMED -XX:StartFlightRecording:settings=default \
    -cp "$tmp/classes:$CP" Aggregator --port $NATIVE --mode virtual --pin native --timeout-ms 500 --backends 127.0.0.1:$B
java_server shed $SHED --mode virtual --fanout 1 --permits 1 --permit-wait-ms 200 --backends 127.0.0.1:$SLOW
# A backend that drips its answers, and behind it each client in each mode (DRIP + 1..4).
DRIP=$((base + 10)); DRIPPED="platform-urlconnection virtual-urlconnection platform-httpclient virtual-httpclient"
start drip "$JAVA" $PREVIEW -cp "$tmp/classes:$CP" Aggregator drip --port $DRIP --every-ms 200
port=$DRIP
for mc in $DRIPPED; do
    port=$((port + 1)); echo $port >"$tmp/$mc.port"
    java_server "$mc" $port --mode "${mc%-*}" --client "${mc#*-}" --timeout-ms 1000 --backends 127.0.0.1:$DRIP
done
# The fan-out's policy: K = 3 calls, to a dead port first (refused at once), then to two
# backends that answer after 300 ms.
start s300a "$agg" backend --port $S300A --delay-ms 300
start s300b "$agg" backend --port $S300B --delay-ms 300
three=127.0.0.1:$DEAD,127.0.0.1:$S300A,127.0.0.1:$S300B
policy=wait; [ -n "$PREVIEW" ] && policy=cancel # (without the scope its checks are skipped)
java_server cancel $CANCEL --mode virtual --on-failure $policy --backends $three
java_server wait $WAIT --mode virtual --on-failure wait --backends $three
# Bearer tokens: an HMAC secret and an RSA key pair, made by openssl (its own tool, so that
# the tokens below are minted independently of the code that checks them).
authed=""
if command -v openssl >/dev/null && head -c 32 /dev/urandom >"$tmp/hs.key" &&
    openssl genrsa -out "$tmp/rsa.pem" 2048 2>/dev/null && openssl rsa -in "$tmp/rsa.pem" -pubout -out "$tmp/rsa.pub" 2>/dev/null; then
    authed="$AUTHH $AUTHR $CAUTHH $CAUTHR"
    java_server authh $AUTHH --auth "hs256:$tmp/hs.key" --auth-issuer https://idp.lab --auth-audience aggregate --backends 127.0.0.1:$B
    java_server authr $AUTHR --auth "rs256:$tmp/rsa.pub" --auth-issuer https://idp.lab --auth-audience aggregate --backends 127.0.0.1:$B
    start cauthh "$agg" serve --port $CAUTHH --auth "hs256:$tmp/hs.key" --auth-issuer https://idp.lab --auth-audience aggregate --backends 127.0.0.1:$B
    start cauthr "$agg" serve --port $CAUTHR --auth "rs256:$tmp/rsa.pub" --auth-issuer https://idp.lab --auth-audience aggregate --backends 127.0.0.1:$B
fi
for port in $V $P $D $N $H $T $G $((DRIP + 1)) $((DRIP + 2)) $((DRIP + 3)) $((DRIP + 4)) $DRIP $NATIVE $SHED $CANCEL $WAIT $authed; do
    path=/metrics; [ $port = $DRIP ] && path=/cuts # its other answers drip
    ready $port $path || { fail=$((fail + 1)); cat "$tmp"/*.log >&2; }
done
[ $fail -eq 0 ] || { echo "test_java: 0 passed, $fail failed"; exit 1; }

# The start-up line, as `aggregator serve` prints it (scripts wait for it).
check "start-up line" grep -q "aggregator serve: listening on 127.0.0.1:$V (virtual threads" "$tmp/virtual.log"

# /aggregate: K = 3 items in a JSON array, sequential and fanned out, in every configuration.
items() { curl -s --max-time 10 "$1" | grep -o '"id":[0-9]*' | tr '\n' ' '; }
want='"id":0 "id":1 "id":2 '
check "virtual /aggregate: the 3 items" [ "$(items http://127.0.0.1:$V/aggregate)" = "$want" ]
check "virtual ?parallel=1: the 3 items" [ "$(items "http://127.0.0.1:$V/aggregate?parallel=1")" = "$want" ]
check "platform /aggregate: the 3 items" [ "$(items http://127.0.0.1:$P/aggregate)" = "$want" ]
check "platform ?parallel=1: the 3 items" [ "$(items "http://127.0.0.1:$P/aggregate?parallel=1")" = "$want" ]
check "httpclient /aggregate: the 3 items" [ "$(items http://127.0.0.1:$H/aggregate)" = "$want" ]
check "httpclient ?parallel=1: the 3 items" [ "$(items "http://127.0.0.1:$H/aggregate?parallel=1")" = "$want" ]
check "--pin /aggregate: the 3 items" [ "$(items http://127.0.0.1:$N/aggregate)" = "$want" ]
check "--pin ?parallel=1: the 3 items" [ "$(items "http://127.0.0.1:$N/aggregate?parallel=1")" = "$want" ]
# One request first, its answer not checked: the first call links qsort's upcall (the JDK
# makes the stubs then), which on a busy machine can take longer than the 500 ms deadline.
items http://127.0.0.1:$NATIVE/aggregate >/dev/null
check "--pin native /aggregate: the 3 items" [ "$(items http://127.0.0.1:$NATIVE/aggregate)" = "$want" ]
check "--pin native ?parallel=1: the 3 items" [ "$(items "http://127.0.0.1:$NATIVE/aggregate?parallel=1")" = "$want" ]
check "/aggregate is application/json" sh -c "curl -s -D - -o /dev/null http://127.0.0.1:$V/aggregate | grep -qi '^content-type: application/json'"

# Bad input: 404, 405, and a malformed request line sent raw (Tomcat's parser refuses it).
check "unknown path: 404" [ "$(status http://127.0.0.1:$V/nope)" = 404 ]
check "POST: 405" [ "$(status -X POST http://127.0.0.1:$V/aggregate)" = 405 ]
raw() { printf "$2" | curl -s --max-time 3 "telnet://127.0.0.1:$1" | head -n 1 | cut -c1-12; }
check "malformed request line: 400" [ "$(raw $V 'GE T /aggregate HTTP/1.1\r\nHost: x\r\n\r\n')" = "HTTP/1.1 400" ]
check "binary junk: 400" [ "$(raw $V '\001\002\003\r\n\r\n')" = "HTTP/1.1 400" ]
check "400 answered in plain text" sh -c "printf 'GE T / HTTP/1.1\r\n\r\n' | curl -s --max-time 3 telnet://127.0.0.1:$V | tail -n 1 | grep -qx 'Bad Request'"

# A dead backend: 502 well within the timeout; a slow one: 504 at the timeout.
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 http://127.0.0.1:$D/aggregate)
check "dead backend: 502 (got $out)" [ "${out% *}" = 502 ]
check "dead backend: answered within --timeout-ms 2000 (got ${out#* } s)" awk "BEGIN { exit !(${out#* } < 2.0) }"
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 http://127.0.0.1:$T/aggregate)
check "slow backend: 504 (got $out)" [ "${out% *}" = 504 ]
check "slow backend: 504 after ~--timeout-ms 300 (got ${out#* } s)" awk "BEGIN { t = ${out#* }; exit !(t >= 0.25 && t < 2.0) }"
# Why, in /metrics: each server made one call (a request stops at its first failure).
reasons() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | sed -n 's/^agg_downstream_failures_total{reason="\(.*\)"} /\1=/p' | tr '\n' ' '; }
check "dead backend: its one call counted as refused (got $(reasons $D))" \
    [ "$(reasons $D)" = "no_port=0 timeout=0 refused=1 bad_response=0 other=0 " ]
check "slow backend: its one call counted as timeout (got $(reasons $T))" \
    [ "$(reasons $T)" = "no_port=0 timeout=1 refused=0 bad_response=0 other=0 " ]

# The structured fan-out, K = 3 calls: a dead port (refused at once), then two backends that
# answer after 300 ms. With --on-failure cancel the refusal cancels the scope: the two
# siblings' virtual threads are interrupted, their sockets closed, and 502 comes at once; with
# wait it comes once both 300 ms calls are over. One request to warm up, then five; the time
# is curl's whole exchange.
metric() { curl -s --max-time 5 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
fanout_times() { # fanout_times PORT: "CODE SECONDS" of five ?parallel=1 requests
    curl -s -o /dev/null --max-time 10 "http://127.0.0.1:$1/aggregate?parallel=1"
    for i in 1 2 3 4 5; do
        curl -s -o /dev/null -w '%{http_code} %{time_total}\n' --max-time 10 "http://127.0.0.1:$1/aggregate?parallel=1"
    done
}
seconds() { awk '{ printf "%s%s", s, $2; s = " " }' "$1"; }
threads() { awk '/^Threads:/ { print $2 }' "/proc/$1/status"; }
fds() { ls "/proc/$1/fd" | wc -l; }
if [ -n "$PREVIEW" ]; then
    fanout_times $CANCEL >"$tmp/cancel.times"
    fanout_times $WAIT >"$tmp/wait.times"
    echo "test_java: ?parallel=1 with a refused call, s: cancel $(seconds "$tmp/cancel.times"); wait $(seconds "$tmp/wait.times")"
    check "--on-failure cancel: 502 each time (got $(awk '{ print $1 }' "$tmp/cancel.times" | tr '\n' ' '))" \
        awk '$1 != 502 { exit 1 }' "$tmp/cancel.times"
    check "--on-failure cancel: median under 0.15 s, not the siblings' 0.3 s (got $(seconds "$tmp/cancel.times"))" \
        sh -c "[ \$(sort -n -k2 '$tmp/cancel.times' | awk 'NR == 3 { print (\$2 < 0.15) }') = 1 ]"
    check "--on-failure wait: 502 each time (got $(awk '{ print $1 }' "$tmp/wait.times" | tr '\n' ' '))" \
        awk '$1 != 502 { exit 1 }' "$tmp/wait.times"
    check "--on-failure wait: each after the siblings' 0.3 s (got $(seconds "$tmp/wait.times"))" \
        awk '$2 < 0.3 { exit 1 }' "$tmp/wait.times"
    check "cancel: the refusals counted as failures, the siblings as cancelled (got $(reasons $CANCEL); cancelled $(metric $CANCEL agg_downstream_cancelled_total))" \
        [ "$(reasons $CANCEL)" = "no_port=0 timeout=0 refused=6 bad_response=0 other=0 " ]
    check "wait: nothing cancelled (got $(metric $WAIT agg_downstream_cancelled_total))" \
        [ "$(metric $WAIT agg_downstream_cancelled_total)" = 0 ]
    # The connections' time per request (6 each): wait holds both siblings' 0.3 s, cancel cuts them
    held() { echo $(( $(metric $1 agg_downstream_held_us_total) / 6000 )); }
    check "wait: connections held about 600 ms a request, both siblings' (got $(held $WAIT) ms)" \
        [ "$(held $WAIT)" -ge 500 ]
    check "cancel: connections held well under the siblings' 600 ms a request (got $(held $CANCEL) ms)" \
        [ "$(held $CANCEL)" -lt 300 ]
    # No leak: after 200 cancelled scopes (4 curls of 50 requests at once), the JVM's OS
    # threads, open fds and live virtual threads are back where they were before them.
    cpid=$(cat "$tmp/cancel.pid"); t0=$(threads "$cpid"); f0=$(fds "$cpid"); v0=$(metric $CANCEL agg_vthreads_alive)
    kids=""
    for j in 1 2 3 4; do
        curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 \
            $(for i in $(seq 50); do printf ' -o /dev/null http://127.0.0.1:%s/aggregate?parallel=1' $CANCEL; done) >"$tmp/leak.$j" &
        kids="$kids $!"
    done
    wait $kids
    sleep 1
    t1=$(threads "$cpid"); f1=$(fds "$cpid"); v1=$(metric $CANCEL agg_vthreads_alive)
    echo "test_java: 200 cancelled scopes: OS threads $t0 -> $t1, fds $f0 -> $f1, virtual threads alive $v0 -> $v1"
    check "200 cancelled scopes: all 502 (got $(cat "$tmp"/leak.* | sort | uniq -c | tr -s ' \n' ' '))" \
        [ "$(cat "$tmp"/leak.* | grep -c '^502$')" = 200 ]
    check "200 cancelled scopes: OS threads at baseline, within 4 (got $t0 -> $t1)" [ "$t1" -le $((t0 + 4)) ]
    check "200 cancelled scopes: open fds at baseline, within 8 (got $f0 -> $f1)" [ "$f1" -le $((f0 + 8)) ]
    check "200 cancelled scopes: virtual threads alive at baseline (got $v0 -> $v1)" [ "$v1" -le "$v0" ]
else
    skipped=$((skipped + 12))
    echo "test_java: skipped 12 checks: --on-failure cancel needs JDK 25 (StructuredTaskScope.open) with --enable-preview"
fi

# Bearer tokens, minted here with openssl: base64url (RFC 4648 5, no padding) of the header
# and the claims, signed with HMAC-SHA256 (the key's bytes as hex) or RSA-SHA256. Every bad
# one is 401 with WWW-Authenticate: Bearer error="invalid_token"; an oversized header is 431.
b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }
# jwt ALG-TO-SIGN HEADER-JSON CLAIMS-JSON: a token (hs = HMAC with hs.key, rs = RSA with rsa.pem,
# hspub = HMAC keyed with the RSA public key's PEM, the algorithm confusion; none = unsigned)
jwt() {
    hp="$(printf '%s' "$2" | b64url).$(printf '%s' "$3" | b64url)"
    case $1 in
        hs) sig=$(printf '%s' "$hp" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(od -An -tx1 "$tmp/hs.key" | tr -d ' \n')" -binary | b64url) ;;
        hspub) sig=$(printf '%s' "$hp" | openssl dgst -sha256 -mac HMAC -macopt "hexkey:$(od -An -tx1 "$tmp/rsa.pub" | tr -d ' \n')" -binary | b64url) ;;
        rs) sig=$(printf '%s' "$hp" | openssl dgst -sha256 -sign "$tmp/rsa.pem" -binary | b64url) ;;
        none) sig="" ;;
    esac
    printf '%s.%s' "$hp" "$sig"
}
bearer() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H "Authorization: Bearer $2" "http://127.0.0.1:$1/aggregate"; }
# auth_checks SERVER HS-PORT RS-PORT BIG: the corpus on one server's two, BIG its status for a
# 1 MB header (Tomcat refuses it, 400, before the servlet; the C server's head limit is 431)
auth_checks() {
    s=$1; AUTHH=$2; AUTHR=$3
    now=$(date +%s)
    HS='{"alg":"HS256","typ":"JWT"}'; RS='{"alg":"RS256","typ":"JWT"}'
    ok="\"iss\":\"https://idp.lab\",\"aud\":\"aggregate\""
    good="{$ok,\"exp\":$((now + 300))}"
    check "$s --auth: no token, 401" [ "$(status http://127.0.0.1:$AUTHH/aggregate)" = 401 ]
    check "$s --auth: 401 says WWW-Authenticate: Bearer error=\"invalid_token\"" \
        sh -c "curl -s -D - -o /dev/null http://127.0.0.1:$AUTHH/aggregate | grep -q '^WWW-Authenticate: Bearer error=\"invalid_token\"'"
    check "$s --auth hs256: a good token, 200" [ "$(bearer $AUTHH "$(jwt hs "$HS" "$good")")" = 200 ]
    check "$s --auth rs256: a good token, 200" [ "$(bearer $AUTHR "$(jwt rs "$RS" "$good")")" = 200 ]
    check "$s --auth rs256: an audience array holding ours, 200" \
        [ "$(bearer $AUTHR "$(jwt rs "$RS" "{\"iss\":\"https://idp.lab\",\"aud\":[\"x\",\"aggregate\"],\"exp\":$((now + 300))}")")" = 200 ]
    check "$s --auth: expired 10 s ago, within the 30 s skew, 200" [ "$(bearer $AUTHH "$(jwt hs "$HS" "{$ok,\"exp\":$((now - 10))}")")" = 200 ]
    # hostile NAME WANT PORT TOKEN: one bad token, its status
    hostile() { got=$(bearer "$3" "$4"); check "$s --auth: $1, $2 (got $got)" [ "$got" = "$2" ]; }
    hostile "alg none, no signature" 401 $AUTHH "$(jwt none '{"alg":"none"}' "$good")"
    hostile "alg none on rs256" 401 $AUTHR "$(jwt none '{"alg":"none"}' "$good")"
    hostile "HS256 keyed with the RSA public key (algorithm confusion)" 401 $AUTHR "$(jwt hspub "$HS" "$good")"
    hostile "RS256 token on the hs256 server" 401 $AUTHH "$(jwt rs "$RS" "$good")"
    hostile "expired a minute ago" 401 $AUTHH "$(jwt hs "$HS" "{$ok,\"exp\":$((now - 60))}")"
    hostile "not valid for another minute (nbf)" 401 $AUTHH "$(jwt hs "$HS" "{$ok,\"exp\":$((now + 300)),\"nbf\":$((now + 60))}")"
    hostile "no exp" 401 $AUTHH "$(jwt hs "$HS" "{$ok}")"
    hostile "exp not a number" 401 $AUTHH "$(jwt hs "$HS" "{$ok,\"exp\":\"$((now + 300))\"}")"
    hostile "wrong issuer" 401 $AUTHH "$(jwt hs "$HS" "{\"iss\":\"https://evil\",\"aud\":\"aggregate\",\"exp\":$((now + 300))}")"
    hostile "wrong audience" 401 $AUTHR "$(jwt rs "$RS" "{\"iss\":\"https://idp.lab\",\"aud\":\"other\",\"exp\":$((now + 300))}")"
    hostile "duplicate claim (exp twice)" 401 $AUTHH "$(jwt hs "$HS" "{$ok,\"exp\":$((now + 300)),\"exp\":1}")"
    t=$(jwt hs "$HS" "$good")
    hostile "signature one byte short" 401 $AUTHH "${t%??}"
    hostile "padded base64url" 401 $AUTHH "$t="
    hostile "claims changed after signing" 401 $AUTHH "$(printf '%s' "$HS" | b64url).$(printf '%s' "{$ok,\"exp\":$((now + 9999))}" | b64url).${t##*.}"
    hostile "a control byte in a claim" 401 $AUTHH "$(jwt hs "$HS" "$(printf '{"iss":"https://idp.lab\001","aud":"aggregate","exp":%s}' $((now + 300)))")"
    hostile "two parts" 401 $AUTHH "${t%.*}"
    hostile "a 6 KB header" 431 $AUTHH "$(head -c 6000 /dev/zero | tr '\0' a)"
    # Over Tomcat's own 8 KiB for the whole header, Tomcat refuses it before the servlet: 400.
    printf 'Authorization: Bearer %s\n' "$(head -c 1000000 /dev/zero | tr '\0' a)" >"$tmp/big.header" # too long for argv
    got=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 -H @"$tmp/big.header" http://127.0.0.1:$AUTHH/aggregate)
    check "$s --auth: a 1 MB header, $4 (got $got)" [ "$got" = "$4" ]
}
if [ -n "$authed" ]; then
    auth_checks java $AUTHH $AUTHR 400
    auth_checks c $CAUTHH $CAUTHR 431
    # calibrate --server java's token check, timed by the JVM itself (Aggregator time-auth):
    # a good RS256 token gives "median least greatest" µs per check, in order, and the median
    # is an RSA-2048 verify: at least 0.8x openssl's own (libcrypto's assembly; the JDK's adds
    # base64url and the claims), below openssl's signature (20x a verify: the wrong operation
    # or a clock that counts waiting); an expired token exits 1 (its figure would time the
    # refusal, not the check).
    printf 'Bearer %s\n' "$(jwt rs "$RS" "$good")" >"$tmp/rs.token"
    printf 'Bearer %s\n' "$(jwt rs "$RS" "{$ok,\"exp\":$((now - 100))}")" >"$tmp/old.token"
    # shellcheck disable=SC2086 # PREVIEW: no flag or one
    ta=$("$JAVA" $PREVIEW -cp "$tmp/classes:$CP" Aggregator time-auth "$tmp/rs.token" --auth "rs256:$tmp/rsa.pub" --auth-issuer https://idp.lab --auth-audience aggregate 2>"$tmp/ta.err")
    ssl=$(openssl speed -mr -seconds 1 rsa2048 2>/dev/null | awk -F: '/^\+F2:/ { print 1e6 / $4, 1e6 / $5 }')
    check "time-auth rs256: median, least, greatest, in order ($ta; $(head -c 200 "$tmp/ta.err"))" \
        awk -v t="$ta" 'BEGIN { n = split(t, v, " "); exit !(n == 3 && v[2] > 0 && v[2] <= v[1] && v[1] <= v[3]) }'
    if [ -n "$ssl" ]; then
        check "time-auth rs256: $ta us, an RSA verify (openssl's sign, verify: $ssl us)" \
            awk -v t="$ta" -v s="$ssl" 'BEGIN { split(t, v, " "); split(s, o, " "); exit !(v[1] >= 0.8 * o[2] && v[1] < o[1]) }'
    else
        skipped=$((skipped + 1)); echo "test_java: skipped 1 check: no openssl speed figure"
    fi
    # shellcheck disable=SC2086
    "$JAVA" $PREVIEW -cp "$tmp/classes:$CP" Aggregator time-auth "$tmp/old.token" --auth "rs256:$tmp/rsa.pub" --auth-issuer https://idp.lab --auth-audience aggregate >"$tmp/ta.out" 2>&1
    st=$?
    check "time-auth: an expired token exits 1 ($st), no figure ($(cat "$tmp/ta.out"))" \
        sh -c "[ $st = 1 ] && ! grep -q '^[0-9]' '$tmp/ta.out'"
else
    skipped=$((skipped + 51))
    echo "test_java: skipped 51 checks: --auth needs openssl to mint its tokens"
fi

# Shedding: the first request holds the one permit for 3 s (the slow backend); once /metrics
# says it is taken, a second one waits --permit-wait-ms 200 for it and is answered 503, well
# before the 3 s; the first is answered 200.
curl -s -o /dev/null -w '%{http_code}' --max-time 20 http://127.0.0.1:$SHED/aggregate >"$tmp/shed.first" &
shed_first=$!
i=0; while [ "$(metric $SHED agg_permits_available)" != 0 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 10 http://127.0.0.1:$SHED/aggregate)
check "--permits 1: a second request is shed, 503 (got $out)" [ "${out% *}" = 503 ]
check "--permit-wait-ms 200: after 0.2-2 s, not the 3 s the holder takes (got ${out#* } s)" \
    awk "BEGIN { t = ${out#* }; exit !(t >= 0.2 && t < 2.0) }"
check "--permits 1: /metrics counted 1 shed call (got $(metric $SHED agg_shed_total))" [ "$(metric $SHED agg_shed_total)" = 1 ]
# (the holder's 200 is checked below, once its 3 s are over)

# A dripping backend: headers at once, then a body byte every 200 ms, so a per-read timeout
# never fires and only a deadline for the whole call (--timeout-ms 1000) ends it. Every client
# in every mode answers 504 at the deadline, not before and well within 3 s: before the fix,
# HttpURLConnection's took 1.4 to 7.9 s, since disconnect() waited for the stream's lock
# while the caller read the body. And it closes the connections it cut instead of draining
# them back into its pool: the backend counts one cut per sequential request (its first call
# takes the whole budget) and K = 3 per ?parallel=1 one, 16 for the 8 requests (0 before).
kids=""
for mc in $DRIPPED; do
    for q in seq par; do
        url="http://127.0.0.1:$(cat "$tmp/$mc.port")/aggregate"; [ $q = par ] && url="$url?parallel=1"
        curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 20 "$url" >"$tmp/$mc.$q" &
        kids="$kids $!"
    done
done
wait $kids
# dripped MC: both requests of client-in-mode MC answered 504, between 0.9 and 3 s
dripped() {
    for q in seq par; do
        read -r code t <"$tmp/$1.$q"
        [ "$code" = 504 ] && awk "BEGIN { exit !($t >= 0.9 && $t < 3) }" || return 1
    done
}
got() { echo "$(cat "$tmp/$1.seq"), parallel $(cat "$tmp/$1.par")"; }
check "drip, platform + urlconnection: 504 in 0.9-3 s (got $(got platform-urlconnection))" dripped platform-urlconnection
check "drip, virtual + urlconnection: 504 in 0.9-3 s (got $(got virtual-urlconnection))" dripped virtual-urlconnection
check "drip, platform + httpclient: 504 in 0.9-3 s (got $(got platform-httpclient))" dripped platform-httpclient
check "drip, virtual + httpclient: 504 in 0.9-3 s (got $(got virtual-httpclient))" dripped virtual-httpclient
# The backend sees a cut at its next byte or the one after (the peer's reset): poll, bounded.
cuts() { curl -s --max-time 2 "http://127.0.0.1:$DRIP/cuts"; }
i=0; while [ "$(cuts)" != 16 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
check "drip: the 16 cut calls closed their connections (got $(cuts))" [ "$(cuts)" = 16 ]

# /metrics: the Prometheus text format, the C server's names.
curl -s --max-time 10 http://127.0.0.1:$V/metrics >"$tmp/metrics"
check "/metrics: every sample line is 'name{labels} number' or 'name number'" \
    sh -c "! grep -v '^#' '$tmp/metrics' | grep -v -E '^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'"
check "/metrics: counted the 200s" grep -q -E '^agg_requests_total\{status="200"\} [1-9]' "$tmp/metrics"
check "/metrics: counted the 404 and the 400s" sh -c "grep -q -E '^agg_requests_total\{status=\"404\"\} [1-9]' '$tmp/metrics' && grep -q -E '^agg_requests_total\{status=\"400\"\} [1-9]' '$tmp/metrics'"
check "/metrics: the C server's metric names" sh -c 'for m in agg_request_seconds_bucket agg_request_seconds_count \
    agg_os_threads agg_rss_bytes agg_vthreads_alive agg_downstream_calls_total; do grep -q "^$m" "$1" || exit 1; done' _ "$tmp/metrics"
check "/metrics: virtual threads started" grep -q -E '^agg_vthreads_started_total [1-9]' "$tmp/metrics"

# Under load: a platform request holds a pool thread, so the JVM's OS threads reach the pool
# size; a virtual one holds none, so the JVM stays near its carriers and housekeeping threads.
# load_peak NAME PORT USERS SECONDS: the load generator's report in $tmp/NAME.load, and the
# most OS threads (Threads: in /proc/PID/status, every 100 ms) of the server NAME meanwhile.
load_peak() {
    pid=$(cat "$tmp/$1.pid")
    (peak=0
     while [ ! -e "$tmp/$1.done" ]; do
         t=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
         [ -n "$t" ] && [ "$t" -gt "$peak" ] && peak=$t
         echo "$peak" >"$tmp/$1.peak"
         sleep 0.1
     done) &
    sampler=$!
    "$agg" load --url "http://127.0.0.1:$2/aggregate" --users "$3" --duration "$4" >"$tmp/$1.load" 2>&1
    touch "$tmp/$1.done"
    wait $sampler
    cat "$tmp/$1.peak"
}
served() { awk '/requests in/ { print $1 }' "$tmp/$1.load"; }
served_clean() { # some requests answered, none failed
    [ "$(served "$1")" -gt 0 ] 2>/dev/null && grep -q 'Errors: connect 0 read/write 0 timeout 0 status 0 parse 0' "$tmp/$1.load"
}
wait $shed_first
check "--permits 1: the holder is answered 200 (got $(cat "$tmp/shed.first"))" [ "$(cat "$tmp/shed.first")" = 200 ]

users=200; threads=150
pp=$(load_peak platform $P $users 2)
alloc0=$(metric $V agg_alloc_bytes_total)
vp=$(load_peak virtual $V $users 2)
alloc1=$(metric $V agg_alloc_bytes_total)
np=$(load_peak pin $N 100 1)
gp=$(load_peak hcdefault $G $users 2)
rps() { awk '/Requests\/sec/ { print $2 }' "$tmp/$1.load"; }
echo "test_java: req/s at $users users: platform $(rps platform), virtual $(rps virtual); --pin at 100 users: $(rps pin)"
echo "test_java: OS threads at $users users: platform $pp, virtual $vp (--threads $threads); --pin at 100 users: $np"
check "platform under load: served without errors" served_clean platform
check "virtual under load: served without errors" served_clean virtual
check "--pin under load: served without errors" served_clean pin
check "platform: OS threads >= min(users, maxThreads) = $threads (got $pp)" [ "$pp" -ge $threads ]
check "virtual: fewer OS threads than requests in flight (got $vp < $threads)" [ "$vp" -lt $threads ]
check "virtual: fewer OS threads than platform (got $vp < $pp)" [ "$vp" -lt "$pp" ]
# The pitfall: HttpClient left with its default executor runs its work on its own cached pool
# of platform threads, which grows with the calls in flight, so a virtual-thread server
# holds OS threads again (more than the carriers and housekeeping of the one above).
echo "test_java: OS threads at $users users with HttpClient's default executor: $gp (virtual executor: $vp)"
check "httpclient-default under load: served without errors" served_clean hcdefault
check "httpclient-default: its own pool adds OS threads (got $gp > $vp + 10)" [ "$gp" -gt $((vp + 10)) ]
# Pinning: before JDK 24 a virtual thread blocked inside synchronized pinned its carrier, so
# --pin collapsed to carriers / (K * D) = cores / (3 * 20 ms); JDK 24+ unmounts it (JEP 491).
# The JDK that ran says which to expect. This machine has JDK 25 and 17 only: the JDK 21
# collapse is the model's prediction here, not a measurement.
jdk=$(sed -n 's/.*; java \([0-9]*\),.*/\1/p' "$tmp/pin.log")
collapse=$(awk "BEGIN { print $(nproc) / (3 * 0.020) }")
pin_verdict() {
    if [ "$jdk" -ge 24 ]; then awk "BEGIN { exit !($(rps pin) > 3 * $collapse) }"
    else awk "BEGIN { exit !($(rps pin) < 1.5 * $collapse) }"; fi
}
echo "test_java: --pin on JDK $jdk: $(rps pin) req/s at 100 users; pinned carriers would allow $collapse"
check "--pin on JDK $jdk: $( [ "$jdk" -ge 24 ] 2>/dev/null && echo 'no collapse, > 3x' || echo 'collapsed, < 1.5x') carriers/(K*D) = $collapse req/s (got $(rps pin))" pin_verdict
# The allocation counter: every request served builds its answer (3 items, 220 bytes) at least
# once, so the bytes allocated under load are at least that many per request.
echo "test_java: virtual allocated $(( (alloc1 - alloc0) / 1024 )) KiB for its $(served virtual) requests under load"
check "agg_alloc_bytes_total grew by >= 220 B per request served (got $alloc0 -> $alloc1, $(served virtual) requests)" \
    awk "BEGIN { exit !($alloc1 - $alloc0 >= 220 * $(served virtual) && $(served virtual) > 0) }"
# --pin native: the calls inside qsort's upcall. A native frame pins on every JDK, so with 10
# users both carriers are soon pinned, and it serves at most carriers / (K * D) (unpinned,
# 10 users / 60 ms would be 167 req/s). On JDK 25 the sockets' read pollers are virtual
# threads themselves, so with every carrier pinned they cannot run either, and the reads end
# only at --timeout-ms: served falls to about none. JFR, the JVM's own account, names it.
load_peak native $NATIVE 10 1 >/dev/null
echo "test_java: --pin native: $(rps native) req/s at 10 users; pinned carriers would allow $collapse"
check "--pin native: at most 1.5x carriers/(K*D) = $collapse req/s (got $(rps native))" \
    awk "BEGIN { exit !($(rps native) < 1.5 * $collapse) }"
("${JAVA%/java}/jcmd" "$(cat "$tmp/native.pid")" JFR.dump filename="$tmp/native.jfr" >/dev/null 2>&1
 "${JAVA%/java}/jfr" print --events jdk.VirtualThreadPinned "$tmp/native.jfr" >"$tmp/pinned.txt" 2>&1) &
jfr_kid=$! # read below: it takes a few seconds
check "platform /metrics: the pool grew to --threads" \
    sh -c "curl -s http://127.0.0.1:$P/metrics | grep -q -E '^agg_pool_size $threads\$'"

# Who closes first (the namespaces started at the top): the client way, this server's port
# holds each TIME_WAIT, so after exactly the range's 100 calls to the backend connect() finds
# no port (java.net.BindException, counted as no_port and logged once), and the 100 TIME_WAIT
# sockets are ours; the server way, the backend's port holds them, each taken over by the next
# SYN from the same port, so the calls go on past 100 without a failure and none are ours.
wait $ns_kids
if [ -n "$namespace" ]; then
    nsm() { awk -v m="$2" '$1 == m { print $2 }' "$tmp/ns-$1.metrics"; }
    nsfailed() { grep '^agg_downstream_failures_total' "$tmp/ns-$1.metrics" | awk '{ n += $2 } END { print n + 0 }'; }
    for mode in client server; do
        echo "test_java: --close-first $mode (100 ports): $(nsm $mode agg_downstream_calls_total) calls," \
            "$(nsm $mode 'agg_downstream_failures_total{reason="no_port"}') no_port; TIME_WAIT ours" \
            "$(cat "$tmp/ns-$mode.tw-ours"), the backend's $(cat "$tmp/ns-$mode.tw-backend")"
        [ -s "$tmp/ns-$mode.metrics" ] || cat "$tmp/ns-$mode.out" "$tmp/ns-$mode.log" >&2
    done
    ok=$(( $(nsm client agg_downstream_calls_total) - $(nsfailed client) ))
    check "--close-first client: port exhaustion counted as no_port" \
        [ "$(nsm client 'agg_downstream_failures_total{reason="no_port"}')" -gt 0 ]
    check "--close-first client: no_port is every failure (got $(nsfailed client))" \
        [ "$(nsm client 'agg_downstream_failures_total{reason="no_port"}')" = "$(nsfailed client)" ]
    check "--close-first client: exactly the range's 100 calls before the wall (got $ok)" [ "$ok" = 100 ]
    # K = 3 one after the other: ok / 3 requests had all their calls; the rest of the 40 failed,
    # each counted once however many of its calls found no port
    check "--close-first client: requests failed no_port $(nsm client agg_requests_failed_no_port_total), want $((40 - ok / 3))" \
        [ "$(nsm client agg_requests_failed_no_port_total)" = $((40 - ok / 3)) ]
    check "--close-first client: the 100 TIME_WAIT sockets are ours (got $(cat "$tmp/ns-client.tw-ours"))" \
        [ "$(cat "$tmp/ns-client.tw-ours")" = 100 ]
    check "--close-first client: none on the backend's port (got $(cat "$tmp/ns-client.tw-backend"))" \
        [ "$(cat "$tmp/ns-client.tw-backend")" = 0 ]
    check "--close-first client: the log names java.net.BindException: Cannot assign requested address, once" \
        [ "$(grep -c 'java.net.BindException: Cannot assign requested address' "$tmp/ns-client.log")" = 1 ]
    check "--close-first server: no failure (got $(nsfailed server))" [ "$(nsfailed server)" = 0 ]
    check "--close-first server: more calls than ports (got $(nsm server agg_downstream_calls_total) > 100)" \
        [ "$(nsm server agg_downstream_calls_total)" -gt 100 ]
    check "--close-first server: TIME_WAIT on the backend's port (got $(cat "$tmp/ns-server.tw-backend"))" \
        [ "$(cat "$tmp/ns-server.tw-backend")" -gt 0 ]
    check "--close-first server: none of ours (got $(cat "$tmp/ns-server.tw-ours"))" [ "$(cat "$tmp/ns-server.tw-ours")" = 0 ]
else
    skipped=$((skipped + 11)) # the eleven close-first checks above, said at the top
fi

wait $jfr_kid
echo "test_java: JFR recorded $(grep -c 'jdk.VirtualThreadPinned' "$tmp/pinned.txt") jdk.VirtualThreadPinned events under --pin native"
check "--pin native: JFR recorded jdk.VirtualThreadPinned, 'Native or VM frame on stack'" \
    grep -q 'pinnedReason = "Native or VM frame on stack"' "$tmp/pinned.txt"

# The new flags' bad uses: one line, exit 2 (compiled classes: quicker than the source launcher).
bad_flags() {
    case $1 in
        close-first) echo "--close-first client" ;; # without --no-pool
        nopool-both) echo "--no-pool --close-first both" ;;
        pin) echo "--pin sometimes" ;;
        wait) echo "--permit-wait-ms 10" ;; # without --permits
        cancel) echo "--on-failure cancel" ;; # without --enable-preview: no StructuredTaskScope
        policy) echo "--on-failure sometimes" ;;
    esac
}
kids=""
for b in close-first nopool-both pin wait cancel policy; do # all at once: each is a JVM start
    flags=$(bad_flags $b)
    # shellcheck disable=SC2086 # the flags split on purpose
    (echo "$flags" >"$tmp/bad-$b.flags"
     "$JAVA" -cp "$tmp/classes:$CP" Aggregator --backends 127.0.0.1:$B $flags >/dev/null 2>"$tmp/bad-$b.err"
     echo $? >"$tmp/bad-$b.rc") &
    kids="$kids $!"
done
wait $kids
for b in close-first nopool-both pin wait cancel policy; do
    check "bad use '$(cat "$tmp/bad-$b.flags")': exit 2 and one line (got $(cat "$tmp/bad-$b.rc"): $(head -n 1 "$tmp/bad-$b.err"))" \
        sh -c "[ \$(cat '$tmp/bad-$b.rc') -eq 2 ] && [ \$(wc -l < '$tmp/bad-$b.err') -eq 1 ]"
done

# A bad flag: one clear line and exit 2, through the single-file source launcher as documented
# (with the preview flags where the JDK has them).
# shellcheck disable=SC2046 # the flags split on purpose
"$JAVA" $("$root/java/find-jdk" --preview-source) -cp "$CP" "$root/java/Aggregator.java" --frobnicate >"$tmp/out" 2>"$tmp/err"; rc=$?
check "bad flag: exit 2 (got $rc)" [ $rc -eq 2 ]
check "bad flag: one line naming it" sh -c "[ \$(wc -l < '$tmp/err') -eq 1 ] && grep -q \"unknown flag '--frobnicate'\" '$tmp/err'"

# bench --server java: a short grid (2 points, 1 s windows after 1 s of JIT warm-up) writes
# the bench's CSV with the server and warm-up columns, and the simulator predicts it.
"$agg" bench --server java --users 50 --modes platform,virtual --duration 1 --jit-warmup 1 \
    --port $BENCH --out "$tmp/bench.csv" >"$tmp/bench.out" 2>&1; rc=$?
[ $rc -eq 0 ] || cat "$tmp/bench.out" >&2
check "bench --server java: exit 0 (got $rc)" [ $rc -eq 0 ]
check "bench --server java: the header ends with jit_warmup_s,server, the fan-out's columns, auth and the server's quantiles" \
    sh -c "head -n 1 '$tmp/bench.csv' | grep -q ',warmup_s,window_s,steal_pct,foreign_pct,jit_warmup_s,server,on_failure,fail_share,fail_after_ms,failed_p50_ms,failed_p99_ms,calls_per_req,call_ms_per_req,auth,server_p50_ms,server_p99_ms\$'"
# by name: req/s, OS threads, RSS, the JIT's warm-up, and the calls and the connections'
# time per request (/metrics' agg_downstream_calls_total and agg_downstream_held_us_total), and
# the server's p50 from its agg_request_seconds, inside the client's (a bucket's 28% above it)
check "bench --server java: 2 rows served by java, with req/s, OS threads, RSS, a 1 s warm-up, calls, connection time and the server's p50 inside the client's" \
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
        NR > 1 && $c["server"] == "java" && $c["jit_warmup_s"] == 1 && $6 > 0 && $10 > 0 && $11 > 0 &&
        $c["calls_per_req"] > 2.5 && $c["calls_per_req"] < 3.5 && $c["call_ms_per_req"] > 0 &&
        $c["server_p50_ms"] > 0 && $c["server_p50_ms"] <= 1.28 * $c["p50_ms"] { n++ }
        END { exit n != 2 }' "$tmp/bench.csv"
check "bench --server java: platform holds more OS threads than virtual" \
    awk -F, 'NR > 1 { t[$2] = $10 } END { exit !(t["platform"] > t["virtual"]) }' "$tmp/bench.csv"
if [ -x "$dir/sim" ]; then
    "$dir/sim" --validate "$tmp/bench.csv" >"$tmp/validate.out" 2>&1; rc=$?
    [ $rc -eq 0 ] || cat "$tmp/validate.out" >&2
    check "sim --validate on the JVM's CSV: exit 0 (got $rc)" [ $rc -eq 0 ]
fi
# No JDK (none under JVM_DIR, no JAVA_HOME, no java on PATH): find-jdk's one line, exit 2.
mkdir -p "$tmp/bin"
for t in sh sed dirname sort readlink; do ln -s "$(command -v $t)" "$tmp/bin/$t"; done
env -u JAVA_HOME JVM_DIR=/nonexistent PATH="$tmp/bin" "$agg" bench --server java --users 10 \
    --port $BENCH --out "$tmp/nojdk.csv" >"$tmp/nojdk.out" 2>"$tmp/nojdk.err"; rc=$?
check "bench --server java without a JDK: exit 2 (got $rc)" [ $rc -eq 2 ]
check "bench --server java without a JDK: find-jdk's one line" \
    sh -c "[ \$(wc -l < '$tmp/nojdk.err') -eq 1 ] && grep -q 'no JDK 21+ found' '$tmp/nojdk.err'"

if [ "$skipped" -gt 0 ]; then echo "test_java: $pass passed, $fail failed, $skipped skipped"
else echo "test_java: $pass passed, $fail failed"; fi
[ "$fail" -eq 0 ]
