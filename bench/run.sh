#!/usr/bin/env bash
# Saturation benchmark: metron against wrk, same target, same run.
#
# The target (metron's built-in server) is pinned to one CPU and the load
# generator under test to the other, so the two never share a core. For
# each generator it prints requests/s and requests per CPU-second of the
# generator (user + system), then the ratios metron / wrk.
#
#   bench/run.sh [DURATION] [CONNECTIONS]      (defaults: 10s, 50)
#
# Needs: wrk (apt-get install wrk), taskset, /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-10s}
CONNS=${2:-50}
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

compare() {
    local label=$1 wrk_line=$2 metron_line=$3
    awk -v label="$label" -v w="$wrk_line" -v m="$metron_line" 'BEGIN {
        split(w, a, " "); split(m, b, " ");
        wr = a[2]; wc = a[4]; mr = b[2]; mc = b[4];
        wpc = (wc > 0) ? a[3] / wc : 0; mpc = (mc > 0) ? b[3] / mc : 0;
        printf "%-28s %12s %12s %8s\n", label, "wrk", "metron", "ratio";
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests/s", wr, mr, (wr > 0) ? mr / wr : 0;
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests per CPU-second", wpc, mpc, (wpc > 0) ? mpc / wpc : 0;
    }'
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs; target on CPU $TARGET_CPU, generator on CPU $LOAD_CPU; -t1 -c$CONNS -d$DURATION"
W=$(run wrk wrk -t1 -c"$CONNS" -d"$DURATION" "$URL")
M=$(run metron "$METRON" -t1 -c"$CONNS" -d"$DURATION" "$URL")
compare "static GET, closed loop" "$W" "$M"

if [ -d "$SCRIPTS" ] && "$METRON" --help | grep -q -- '--script'; then
    for script in "$SCRIPTS"/*.lua; do
        W=$(run wrk wrk -t1 -c"$CONNS" -d"$DURATION" -s "$script" "$URL")
        M=$(run metron "$METRON" -t1 -c"$CONNS" -d"$DURATION" -s "$script" "$URL")
        compare "script $(basename "$script")" "$W" "$M"
    done
fi
