#!/usr/bin/env bash
# Memory: metron's resident size with many connections, and whether it
# stays flat over a long run.
#
# metron runs in rate mode (-t1 -cCONNECTIONS -R10000) against nginx
# (bench/nginx-h2c.conf, HTTP/1.1 on 18083) for DURATION; its resident
# size (VmRSS) is sampled every 10 s. Printed: the size once every
# connection is open (the first sample), the last and the largest sample,
# and the peak the kernel recorded (VmHWM). Flat means last ≈ first.
#
#   bench/memory.sh [DURATION] [CONNECTIONS]   (defaults: 10m, 10000)
#
# Needs nginx (Debian: nginx), installed here when missing. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-10m}
CONNS=${2:-10000}
. bench/lib.sh

need nginx=nginx
cargo build --release --quiet
start_nginx

out=$(mktemp)
taskset -c "$LOAD_CPU" "$METRON" -t1 -c"$CONNS" -R10000 -d"$DURATION" "$H1_URL" >"$out" &
GEN=$!
trap 'kill $GEN $SERVER 2>/dev/null; wait 2>/dev/null || true; rm -f "$out"' EXIT

header
echo "# rate mode -t1 -c$CONNS -R10000 -d$DURATION against nginx; VmRSS every 10 s"
samples=() hwm=0
sleep 5
while kill -0 "$GEN" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$GEN/status" 2>/dev/null || true)
    h=$(awk '/^VmHWM:/ { print $2 }' "/proc/$GEN/status" 2>/dev/null || true)
    [ -n "$rss" ] && samples+=("$rss") && printf '  %5ds %8d kB\n' "$(( (${#samples[@]} - 1) * 10 + 5 ))" "$rss"
    [ -n "$h" ] && hwm=$h
    sleep 10
done
wait "$GEN" || true
printf '%s\n' "${samples[@]}" | awk -v hwm="$hwm" '
    NR == 1 { first = $1 } { last = $1; if ($1 > max) max = $1 }
    END {
        printf "%-28s %10.1f MB\n", "  resident, connections open", first / 1024;
        printf "%-28s %10.1f MB\n", "  resident at the end", last / 1024;
        printf "%-28s %10.1f MB\n", "  largest sample", max / 1024;
        printf "%-28s %10.1f MB\n", "  peak (VmHWM)", hwm / 1024;
        printf "%-28s %+10.1f MB\n", "  end - start", (last - first) / 1024;
    }'
grep -E 'requests in|Socket errors|Warning' "$out" || true
