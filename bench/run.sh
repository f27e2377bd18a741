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
#    measured (--warmup 1s), PACE_ROUNDS rounds alternating with the floor:
#    bench/iomodel's pace mode, a sender that does nothing but wake on the
#    same schedule (epoll_pwait2) and write a request on each of 100
#    keep-alive connections in turn, on the same core, against the same
#    nginx. The send lag p99 of each round and the medians; metron's goal
#    is at most 1.5 times the floor's, and at most 100 µs whenever the
#    floor's is at most 50 µs (a floor above that says the machine is too
#    noisy to judge pacing today).
#
#   bench/run.sh [DURATION] [CONNECTIONS] [ROUNDS] [PACE_ROUNDS]
#   (defaults: 5s, 50, 3, 5)
#
# Needs nginx and wrk (Debian: nginx, wrk), installed here when missing;
# taskset and /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
CONNS=${2:-50}
ROUNDS=${3:-3}
PACE_ROUNDS=${4:-5}
IOMODEL=bench/iomodel/target/release/iomodel
SCRIPTS=bench/scripts
. bench/lib.sh
URL=$H1_URL

need nginx=nginx wrk=wrk
cargo build --release --quiet
cargo build --release --quiet --manifest-path bench/iomodel/Cargo.toml
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
echo "# pacing: -t1 -c100 -R90000 --warmup 1s, $DURATION measured; $PACE_ROUNDS alternating rounds with the floor"
secs=$(awk -v d="$DURATION" 'BEGIN { print d + 1 }')
addr=${URL#http://}
addr=${addr%/}
floor=() lag=() rates=()
for _ in $(seq "$PACE_ROUNDS"); do
    out=$(taskset -c "$LOAD_CPU" "$IOMODEL" pace "$addr" 100 "${DURATION%s}" 90000)
    floor+=("$(awk '{ print $7 }' <<<"$out")")
    out=$(taskset -c "$LOAD_CPU" "$METRON" -t1 -c100 -R90000 --warmup 1s -d"${secs}s" "$URL")
    lag+=("$(us "$(awk '/Send lag:/ { print $6; exit }' <<<"$out" | tr -d ,)")")
    rates+=("$(awk '/^Requests\/sec:/ { print $2 }' <<<"$out")")
    grep -E 'Socket errors|Warning' <<<"$out" || true
done
fm=$(printf '%s\n' "${floor[@]}" | median)
mm=$(printf '%s\n' "${lag[@]}" | median)
printf '  %-26s %s (median %s)\n' "floor p99 (us)" "${floor[*]}" "$fm" \
    "metron p99 (us)" "${lag[*]}" "$mm" \
    "metron requests/s" "${rates[*]}" "$(printf '%s\n' "${rates[@]}" | median)"
awk -v f="$fm" -v m="$mm" 'BEGIN {
    printf "  metron / floor: %.2f (goal: at most 1.5)\n", (f > 0) ? m / f : 0;
    if (f <= 50) printf "  metron p99 at most 100us with the floor at most 50us: %s\n", (m <= 100) ? "yes" : "no";
    else printf "  the floor is above 50us: the machine is too noisy to judge pacing against 100us\n" }'
