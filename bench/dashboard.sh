#!/usr/bin/env bash
# What --dashboard costs: metron's CPU per request with the dashboard open
# in a browser, against the same run without it.
#
# nginx (bench/nginx-h2c.conf, HTTP/1.1 on 18083) is pinned to one CPU,
# metron (all its threads, the dashboard's included) to the other, and
# headless Chromium, following the page by Server-Sent Events, shares
# nginx's CPU so that it takes nothing from metron's. The two kinds of run
# alternate for ROUNDS rounds; the medians of requests per CPU-second of
# metron's process (user + system time) are compared, with / without
# (goal: at least 0.98).
#
#   bench/dashboard.sh [DURATION] [CONNECTIONS] [ROUNDS]
#   (defaults: 5s, 50, 3; intervals of the default 1s)
#
# Needs nginx and chromium (Debian: nginx, chromium), installed here when
# missing; taskset and /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
CONNS=${2:-50}
ROUNDS=${3:-3}
PORT=18390
. bench/lib.sh

need nginx=nginx chromium=chromium
cargo build --release --quiet
start_nginx
profile=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true; rm -rf "$profile"' EXIT

# per_cpu ARGS...: requests per CPU-second of one metron run.
per_cpu() {
    timed "$METRON" -t1 -c"$CONNS" -d"$DURATION" "$@" "$H1_URL" 2>/dev/null |
        awk '/ requests in / && !n { n = $1 } /^cpu / { c = $2 } END { print n / c }'
}

# browser: headless Chromium on nginx's CPU, following the dashboard until
# the run's report arrives.
browser() {
    sleep 0.3
    taskset -c "$TARGET_CPU" chromium --headless --no-sandbox --disable-gpu --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile/p$1" --virtual-time-budget=60000 --dump-dom \
        "http://127.0.0.1:$PORT/" 2>/dev/null | grep -o 'data-live="[0-9]*"' || echo 'no live updates'
}

header
without=() with=()
for round in $(seq "$ROUNDS"); do
    without+=("$(per_cpu)")
    browser "$round" > "$profile/live$round" &
    watcher=$!
    with+=("$(per_cpu --dashboard=127.0.0.1:$PORT --dashboard-linger 1s)")
    wait "$watcher" || true
    echo "round $round: without ${without[-1]}, with ${with[-1]} requests per CPU-second; the page saw $(cat "$profile/live$round")"
done
a=$(printf '%s\n' "${without[@]}" | median)
b=$(printf '%s\n' "${with[@]}" | median)
printf '%-36s %12s %12s %8s\n' "-t1 -c$CONNS -d$DURATION" without with ratio
printf '%-36s %12.0f %12.0f %8.3f\n' "requests per CPU-second" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print b / a }')"
