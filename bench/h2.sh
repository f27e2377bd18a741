#!/usr/bin/env bash
# HTTP/2 benchmark: metron against h2load, both speaking h2c to nginx.
#
# 1. Saturation: nginx (bench/nginx-h2c.conf) pinned to one CPU, the load
#    generator under test to the other; a closed loop of -t1 -c10 -m100,
#    metron and h2load alternating for ROUNDS rounds. Each round prints
#    requests/s and requests per CPU-second of the generator (user +
#    system, from /usr/bin/time); then the ratio of the medians, metron /
#    h2load.
# 2. Latency under load: metron in rate mode at 20,000 requests/s on 4
#    connections (-t1 -c4 -m100 -R20000 -d10s), against a closed loop of
#    one stream at a time (-c1 -m1), the server's latency with nothing
#    else in flight: both corrected p50s, their ratio, and the rate run's
#    send lag p99.
#
#   bench/h2.sh [DURATION] [ROUNDS]   (defaults: 5s, 3)
#
# Needs nginx with http_v2 and h2load (Debian: nginx, nghttp2-client),
# installed here when missing; taskset and /usr/bin/time. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
ROUNDS=${2:-3}
. bench/lib.sh
URL=$H2C_URL

need nginx=nginx h2load=nghttp2-client
cargo build --release --quiet
start_nginx

# One round of each: "requests seconds cpu-seconds errors".
metron_round() {
    timed "$METRON" --http2 -t1 -c10 -m100 -d"$DURATION" "$URL" | awk '
        / requests in / { n = $1; s = $4; sub(/s,$/, "", s) }
        /Socket errors:/ { e = $4 + $6 + $8 + $10 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d\n", n, s, c, e }'
}
h2load_round() {
    timed h2load -t1 -c10 -m100 -D"${DURATION%s}" "$URL" | awk '
        /^finished in/ { s = $3; sub(/s,$/, "", s) }
        /^requests:/ { n = $8; f = $10 + $12 + $14 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d\n", n, s, c, f }'
}

header
echo "# h2c closed loop -t1 -c10 -m100 -d$DURATION; $ROUNDS alternating rounds"
printf '%-8s %5s %12s %12s %8s %14s\n' tool round requests req/s errors "req/CPU-s"
m=() h=()
for r in $(seq "$ROUNDS"); do
    for tool in metron h2load; do
        read -r n s c e < <("${tool}_round")
        printf '%-8s %5d %12d %12.0f %8d %14.0f\n' "$tool" "$r" "$n" "$(awk -v n="$n" -v s="$s" 'BEGIN { print (s > 0) ? n / s : 0 }')" "$e" \
            "$(awk -v n="$n" -v c="$c" 'BEGIN { print (c > 0) ? n / c : 0 }')"
        if [ "$tool" = metron ]; then m+=("$n $s $c"); else h+=("$n $s $c"); fi
    done
done
mr=$(printf '%s\n' "${m[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
mp=$(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
hr=$(printf '%s\n' "${h[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
hp=$(printf '%s\n' "${h[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
awk -v mr="$mr" -v mp="$mp" -v hr="$hr" -v hp="$hp" 'BEGIN {
    printf "%-28s %12s %12s %8s\n", "median", "h2load", "metron", "ratio";
    printf "%-28s %12.0f %12.0f %8.2f\n", "  requests/s", hr, mr, (hr > 0) ? mr / hr : 0;
    printf "%-28s %12.0f %12.0f %8.2f\n", "  requests per CPU-second", hp, mp, (hp > 0) ? mp / hp : 0;
}'

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
