#!/usr/bin/env bash
# HTTP/1.1 benchmark: metron against wrk, the same nginx, the same run.
#
# nginx (bench/nginx-h2c.conf, HTTP/1.1 on 18083) is pinned to one CPU and
# the load generator under test to the other, so the two never share a
# core.
#
# 1. Saturation, closed loop -t1 -cCONNECTIONS: a static GET, then each Lua
#    script of bench/scripts/ (static.lua only sets request fields;
#    dynamic_path.lua builds a new path in request() for every request).
#    wrk and metron alternate for ROUNDS rounds, because a virtual
#    machine's speed drifts by tens of percent from one minute to the
#    next; the medians of requests/s and of requests per CPU-second of the
#    generator (user + system time) are compared, metron / wrk.
# 2. Pacing, rate mode -t1 -c100 -R90000 for 1 s of warm-up and DURATION
#    measured (--warmup 1s): the send lag's p50 and p99 (goal: p99 at most
#    100 µs) and the achieved rate.
#
#   bench/run.sh [DURATION] [CONNECTIONS] [ROUNDS]   (defaults: 5s, 50, 3)
#
# Needs nginx and wrk (Debian: nginx, wrk), installed here when missing;
# taskset and /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
CONNS=${2:-50}
ROUNDS=${3:-3}
SCRIPTS=bench/scripts
. bench/lib.sh
URL=$H1_URL

need nginx=nginx wrk=wrk
cargo build --release --quiet
start_nginx

# run CMD...: prints "req/s total-requests cpu-seconds" of a wrk-style
# report (metron's has the same lines).
run() {
    timed "$@" | awk '
        /^Requests\/sec:/ { r = $2 }
        / requests in / && !n { n = $1 }
        /^cpu / { c = $2 }
        END { print r, n, c }'
}

# measure LABEL [ARGS...]: ROUNDS alternating runs of wrk and metron with
# the same arguments; prints medians and ratios.
measure() {
    local label=$1; shift
    local w=() m=()
    for _ in $(seq "$ROUNDS"); do
        w+=("$(run wrk -t1 -c"$CONNS" -d"$DURATION" "$@" "$URL")")
        m+=("$(run "$METRON" -t1 -c"$CONNS" -d"$DURATION" "$@" "$URL")")
    done
    local wr wp mr mp
    wr=$(printf '%s\n' "${w[@]}" | awk '{print $1}' | median)
    wp=$(printf '%s\n' "${w[@]}" | awk '$3 > 0 {print $2 / $3}' | median)
    mr=$(printf '%s\n' "${m[@]}" | awk '{print $1}' | median)
    mp=$(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $2 / $3}' | median)
    ratio_table "$label" wrk requests "$wr" "$mr" "$wp" "$mp"
}

header
echo "# closed loop -t1 -c$CONNS -d$DURATION against nginx; median of $ROUNDS alternating rounds"
measure "static GET"
for script in "$SCRIPTS"/*.lua; do
    measure "script $(basename "$script")" -s "$script"
done

echo
echo "# rate mode -t1 -c100 -R90000 --warmup 1s, $DURATION measured"
secs=$(awk -v d="$DURATION" 'BEGIN { print d + 1 }')
out=$(taskset -c "$LOAD_CPU" "$METRON" -t1 -c100 -R90000 --warmup 1s -d"${secs}s" "$URL")
lag=$(awk '/Send lag:/ { print $4, $6; exit }' <<<"$out" | tr -d ,)
read -r p50 p99 <<<"$lag"
printf '%-28s %12s\n' "  send lag p50" "$p50" "  send lag p99" "$p99" \
    "  requests/s" "$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")"
awk -v p="$(us "$p99")" 'BEGIN { printf "  send lag p99 at most 100us: %s\n", (p <= 100) ? "yes" : "no" }'
grep -E 'Socket errors|Warning' <<<"$out" || true
