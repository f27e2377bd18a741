#!/usr/bin/env bash
# Saturation benchmark: metron against wrk, same target, same run.
#
# The target (metron's built-in server) is pinned to one CPU and the load
# generator under test to the other, so the two never share a core. For
# each generator it prints requests/s and requests per CPU-second of the
# generator (user + system), then the ratios metron / wrk.
#
#   bench/run.sh [DURATION] [CONNECTIONS] [ROUNDS]   (defaults: 10s, 50, 3)
#
# A virtual machine's speed drifts by tens of percent from minute to
# minute, so the two tools alternate for ROUNDS rounds and the medians are
# compared.
#
# Needs: wrk (apt-get install wrk), taskset, /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-10s}
CONNS=${2:-50}
ROUNDS=${3:-3}
PORT=${PORT:-18080}
TARGET_CPU=${TARGET_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
SCRIPTS=bench/scripts

command -v wrk >/dev/null || { echo "wrk is not installed: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet
METRON=target/release/metron

taskset -c "$TARGET_CPU" "$METRON" serve --listen "127.0.0.1:$PORT" --body-size 64 >/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
URL="http://127.0.0.1:$PORT/"

# run NAME CMD...: prints "NAME req/s total-requests cpu-seconds"
run() {
    local name=$1; shift
    local out tfile
    tfile=$(mktemp)
    out=$(/usr/bin/time -f "%U %S" -o "$tfile" taskset -c "$LOAD_CPU" "$@")
    local rps total cpu
    rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    total=$(awk '/ requests in / {print $1; exit}' <<<"$out")
    cpu=$(awk '{print $1 + $2}' "$tfile")
    rm -f "$tfile"
    echo "$name $rps $total $cpu"
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# measure LABEL [ARGS...]: ROUNDS alternating runs of wrk and metron with
# the same arguments; prints medians and ratios.
measure() {
    local label=$1; shift
    local w=() m=()
    for _ in $(seq "$ROUNDS"); do
        w+=("$(run wrk wrk -t1 -c"$CONNS" -d"$DURATION" "$@" "$URL")")
        m+=("$(run metron "$METRON" -t1 -c"$CONNS" -d"$DURATION" "$@" "$URL")")
    done
    local wr wp mr mp
    wr=$(printf '%s\n' "${w[@]}" | awk '{print $2}' | median)
    wp=$(printf '%s\n' "${w[@]}" | awk '$4 > 0 {print $3 / $4}' | median)
    mr=$(printf '%s\n' "${m[@]}" | awk '{print $2}' | median)
    mp=$(printf '%s\n' "${m[@]}" | awk '$4 > 0 {print $3 / $4}' | median)
    awk -v label="$label" -v wr="$wr" -v wp="$wp" -v mr="$mr" -v mp="$mp" 'BEGIN {
        printf "%-28s %12s %12s %8s\n", label, "wrk", "metron", "ratio";
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests/s", wr, mr, (wr > 0) ? mr / wr : 0;
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests per CPU-second", wp, mp, (wp > 0) ? mp / wp : 0;
    }'
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs; target on CPU $TARGET_CPU, generator on CPU $LOAD_CPU; -t1 -c$CONNS -d$DURATION; median of $ROUNDS alternating rounds"
measure "static GET, closed loop"
for script in "$SCRIPTS"/*.lua; do
    measure "script $(basename "$script")" -s "$script"
done
