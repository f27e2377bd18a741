#!/usr/bin/env bash
# HTTP/2 benchmark: metron against h2load, both speaking h2c.
#
# 1. Saturation, in three cases: nginx (bench/nginx-h2c.conf), nginx with
#    a busy loop sharing the generator's CPU, and h2o (bench/h2o-h2c.conf),
#    which answers in large batches so that each client's own work shows.
#    The server is pinned to one CPU, the generator to the other; a closed
#    loop of -t1 -c10 -m100, metron and h2load alternating for ROUNDS
#    rounds. Each round prints requests/s and requests per CPU-second of
#    the generator (user + system, from /usr/bin/time); then, per case,
#    the ratio of the medians, metron / h2load. Each round also prints the
#    TCP segments per request on loopback (both ends, from
#    /proc/net/snmp, so the machine must be otherwise quiet). A third
#    client alternates with them: the floor, bench/iomodel's h2c mode,
#    which does nothing per request but its reads and writes (see
#    bench/iomodel/src/main.rs); its ratio to h2load is the most a client
#    reaches with one read and one write per ready connection.
# 2. One stream per connection: metron over HTTP/2 with -c100 -m1 against
#    metron over HTTP/1.1 with -c100, against nginx and against h2o: CPU
#    per request, HTTP/2 / HTTP/1.1, with h2load -c100 -m1 beside them,
#    and the TCP segments per request.
# 3. Latency under load: metron in rate mode at 20,000 requests/s on 4
#    connections (-t1 -c4 -m100 -R20000 -d10s), against a closed loop of
#    one stream at a time (-c1 -m1), the server's latency with nothing
#    else in flight: both corrected p50s, their ratio, and the rate run's
#    send lag p99.
#
#   bench/h2.sh [DURATION] [ROUNDS]   (defaults: 5s, 3)
#
# Needs nginx with http_v2, h2o and h2load (Debian: nginx, h2o,
# nghttp2-client), installed here when missing; taskset and
# /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
ROUNDS=${2:-3}
. bench/lib.sh
URL=$H2C_URL

need nginx=nginx h2o=h2o h2load=nghttp2-client
cargo build --release --quiet
cargo build --release --quiet --manifest-path bench/iomodel/Cargo.toml
IOMODEL=bench/iomodel/target/release/iomodel
start_nginx
start_h2o

# TCP segments sent on the machine so far (Tcp OutSegs): on loopback,
# every segment either end sends, counted once.
segments() { awk '/^Tcp:/ { if (++n == 2) print $12 }' /proc/net/snmp; }

# One round of each against $1: "requests seconds cpu-seconds errors".
metron_round() {
    timed "$METRON" --http2 -t1 -c10 -m100 -d"$DURATION" "$1" | awk '
        / requests in / { n = $1; s = $4; sub(/s,$/, "", s) }
        /Socket errors:/ { e = $4 + $6 + $8 + $10 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d\n", n, s, c, e }'
}
h2load_round() {
    timed h2load -t1 -c10 -m100 -D"${DURATION%s}" "$1" | awk '
        /^finished in/ { s = $3; sub(/s,$/, "", s) }
        /^requests:/ { n = $8; f = $10 + $12 + $14 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d\n", n, s, c, f }'
}
# The floor: bench/iomodel's h2c mode, a client that does nothing per
# request but its reads and writes, on the same 10 connections with 100
# streams each.
floor_round() {
    local hostport=${1#http://}
    timed "$IOMODEL" h2c "${hostport%/}" 10 "${DURATION%s}" 100 | awk '
        /^h2c requests/ { n = $3; s = $5 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f 0\n", n, s, c }'
}

# compare NAME URL: ROUNDS alternating rounds of each tool, then medians.
compare() {
    echo "# $1: h2c closed loop -t1 -c10 -m100 -d$DURATION; $ROUNDS alternating rounds"
    printf '%-8s %5s %12s %12s %8s %14s %13s\n' tool round requests req/s errors "req/CPU-s" "segments/req"
    local m=() h=() f=() r tool n s c e before
    for r in $(seq "$ROUNDS"); do
        for tool in metron h2load floor; do
            before=$(segments)
            read -r n s c e < <("${tool}_round" "$2")
            printf '%-8s %5d %12d %12.0f %8d %14.0f %13.2f\n' "$tool" "$r" "$n" \
                "$(awk -v n="$n" -v s="$s" 'BEGIN { print (s > 0) ? n / s : 0 }')" "$e" \
                "$(awk -v n="$n" -v c="$c" 'BEGIN { print (c > 0) ? n / c : 0 }')" \
                "$(awk -v n="$n" -v g="$(($(segments) - before))" 'BEGIN { print (n > 0) ? g / n : 0 }')"
            case $tool in
                metron) m+=("$n $s $c") ;;
                h2load) h+=("$n $s $c") ;;
                *) f+=("$n $s $c") ;;
            esac
        done
    done
    local mr mp hr hp fp
    mr=$(printf '%s\n' "${m[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    mp=$(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    hr=$(printf '%s\n' "${h[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    hp=$(printf '%s\n' "${h[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    fp=$(printf '%s\n' "${f[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    ratio_table "median, $1" h2load requests "$hr" "$mr" "$hp" "$mp"
    awk -v fp="$fp" -v hp="$hp" 'BEGIN {
        printf "%-28s %12.0f %12s %8.2f   (a client doing only its reads and writes)\n", "  floor, per CPU-second", fp, "", (hp > 0) ? fp / hp : 0;
    }'
    echo
}

header
echo "# h2o $(h2o --version 2>/dev/null | head -1 | sed 's/^h2o version //') on CPU $TARGET_CPU too (its own port)"
compare "nginx" "$URL"
busy_start
compare "nginx, busy loop on the generator's CPU" "$URL"
busy_stop
compare "h2o" "$H2O_URL"

# CPU per request of one tool alone: "requests cpu-seconds segments".
# The awk scripts read metron's report or h2load's.
cost() {
    local before out
    before=$(segments)
    out=$(timed "$@")
    awk -v s="$(($(segments) - before))" '
        / requests in / { n = $1 }
        /^requests:/ { n = $8 }
        /^cpu / { c = $2 }
        END { printf "%d %.3f %d\n", n, c, s }' <<<"$out"
}

# one_stream NAME H2URL H1URL: metron over HTTP/2 with one stream on each
# of 100 connections against metron over HTTP/1.1 on 100 connections,
# with h2load's HTTP/2 -m1 beside them; CPU and TCP segments per request.
one_stream() {
    echo "# one stream per connection, $1: --http2 -t1 -c100 -m1 against HTTP/1.1 -t1 -c100 (h2load -c100 -m1 beside), -d$DURATION"
    printf '%-14s %5s %12s %14s %14s\n' run round requests "us/request" "segments/req"
    local h2=() h1=() hl=() r n c s
    for r in $(seq "$ROUNDS"); do
        for run in "metron HTTP/2" "metron HTTP/1" "h2load -m1"; do
            case $run in
                "metron HTTP/2") read -r n c s < <(cost "$METRON" --http2 -t1 -c100 -m1 -d"$DURATION" "$2") ;;
                "metron HTTP/1") read -r n c s < <(cost "$METRON" -t1 -c100 -d"$DURATION" "$3") ;;
                *) read -r n c s < <(cost h2load -t1 -c100 -m1 -D"${DURATION%s}" "$2") ;;
            esac
            printf '%-14s %5d %12d %14.2f %14.2f\n' "$run" "$r" "$n" \
                "$(awk -v n="$n" -v c="$c" 'BEGIN { print (n > 0) ? c * 1e6 / n : 0 }')" \
                "$(awk -v n="$n" -v s="$s" 'BEGIN { print (n > 0) ? s / n : 0 }')"
            case $run in
                "metron HTTP/2") h2+=("$n $c") ;;
                "metron HTTP/1") h1+=("$n $c") ;;
                *) hl+=("$n $c") ;;
            esac
        done
    done
    local a b l
    a=$(printf '%s\n' "${h2[@]}" | awk '$1 > 0 {print $2 * 1e6 / $1}' | median)
    b=$(printf '%s\n' "${h1[@]}" | awk '$1 > 0 {print $2 * 1e6 / $1}' | median)
    l=$(printf '%s\n' "${hl[@]}" | awk '$1 > 0 {print $2 * 1e6 / $1}' | median)
    awk -v a="$a" -v b="$b" -v l="$l" 'BEGIN {
        printf "%-28s %10.2f us\n%-28s %10.2f us\n%-28s %10.2f us\n", "median metron HTTP/2 -m1", a,
            "median metron HTTP/1.1", b, "median h2load -m1", l;
        printf "%-28s %10.2f   (goal: at most 1.3)\n", "ratio HTTP/2 / HTTP/1.1", (b > 0) ? a / b : 0 }'
    echo
}
one_stream nginx "$URL" "$H1_URL"
# h2o answers HTTP/1.1 and HTTP/2 with prior knowledge on one port.
one_stream h2o "$H2O_URL" "$H2O_URL"

# p50 of the (first, corrected in rate mode) latency distribution of -L.
p50() { awk '/^ 50.000%/ { print $2; exit }'; }

echo
echo "# latency: rate mode -t1 -c4 -m100 -R20000 -d10s against a closed loop -t1 -c1 -m1 -d10s"
rate=$(taskset -c "$LOAD_CPU" "$METRON" --http2 -t1 -c4 -m100 -R20000 -d10s -L "$URL")
idle=$(taskset -c "$LOAD_CPU" "$METRON" --http2 -t1 -c1 -m1 -d10s -L "$URL")
rate_p50=$(p50 <<<"$rate")
idle_p50=$(p50 <<<"$idle")
lag=$(awk '/Send lag:/ { print $6; exit }' <<<"$rate" | tr -d ,)
printf '%-40s %12s\n' "rate mode 20k/s, corrected p50" "$rate_p50" \
    "closed loop -c1 -m1, p50" "$idle_p50"
awk -v a="$(us "$rate_p50")" -v b="$(us "$idle_p50")" 'BEGIN {
    printf "%-40s %12.2f   (goal: at most 2)\n", "ratio", (b > 0) ? a / b : 0 }'
printf '%-40s %12s\n' "rate mode send lag p99" "$lag" \
    "rate mode requests" "$(awk '/ requests in / { print $1; exit }' <<<"$rate")"
grep -E 'Socket errors|Accounting|Warning' <<<"$rate" || true
