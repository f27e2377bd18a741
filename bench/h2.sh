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
#    the ratio of the medians, metron / h2load.
# 2. One stream per connection: metron over HTTP/2 with -c100 -m1 against
#    metron over HTTP/1.1 with -c100, both against nginx: CPU per request,
#    HTTP/2 / HTTP/1.1.
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
start_nginx
start_h2o

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

# compare NAME URL: ROUNDS alternating rounds of each tool, then medians.
compare() {
    echo "# $1: h2c closed loop -t1 -c10 -m100 -d$DURATION; $ROUNDS alternating rounds"
    printf '%-8s %5s %12s %12s %8s %14s\n' tool round requests req/s errors "req/CPU-s"
    local m=() h=() r tool n s c e
    for r in $(seq "$ROUNDS"); do
        for tool in metron h2load; do
            read -r n s c e < <("${tool}_round" "$2")
            printf '%-8s %5d %12d %12.0f %8d %14.0f\n' "$tool" "$r" "$n" \
                "$(awk -v n="$n" -v s="$s" 'BEGIN { print (s > 0) ? n / s : 0 }')" "$e" \
                "$(awk -v n="$n" -v c="$c" 'BEGIN { print (c > 0) ? n / c : 0 }')"
            if [ "$tool" = metron ]; then m+=("$n $s $c"); else h+=("$n $s $c"); fi
        done
    done
    local mr mp hr hp
    mr=$(printf '%s\n' "${m[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    mp=$(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    hr=$(printf '%s\n' "${h[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    hp=$(printf '%s\n' "${h[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    awk -v mr="$mr" -v mp="$mp" -v hr="$hr" -v hp="$hp" -v name="$1" 'BEGIN {
        printf "%-28s %12s %12s %8s\n", "median, " name, "h2load", "metron", "ratio";
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests/s", hr, mr, (hr > 0) ? mr / hr : 0;
        printf "%-28s %12.0f %12.0f %8.2f\n", "  requests per CPU-second", hp, mp, (hp > 0) ? mp / hp : 0;
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

# CPU per request of metron alone: "requests cpu-seconds".
metron_cost() {
    timed "$METRON" "$@" | awk '
        / requests in / { n = $1 }
        /^cpu / { c = $2 }
        END { printf "%d %.3f\n", n, c }'
}
echo "# one stream per connection: --http2 -t1 -c100 -m1 against HTTP/1.1 -t1 -c100, nginx, -d$DURATION"
printf '%-10s %5s %12s %14s\n' protocol round requests "us/request"
h2=() h1=()
for r in $(seq "$ROUNDS"); do
    read -r n c < <(metron_cost --http2 -t1 -c100 -m1 -d"$DURATION" "$URL")
    printf '%-10s %5d %12d %14.2f\n' HTTP/2 "$r" "$n" "$(awk -v n="$n" -v c="$c" 'BEGIN { print (n > 0) ? c * 1e6 / n : 0 }')"
    h2+=("$n $c")
    read -r n c < <(metron_cost -t1 -c100 -d"$DURATION" "$H1_URL")
    printf '%-10s %5d %12d %14.2f\n' HTTP/1.1 "$r" "$n" "$(awk -v n="$n" -v c="$c" 'BEGIN { print (n > 0) ? c * 1e6 / n : 0 }')"
    h1+=("$n $c")
done
a=$(printf '%s\n' "${h2[@]}" | awk '$1 > 0 {print $2 * 1e6 / $1}' | median)
b=$(printf '%s\n' "${h1[@]}" | awk '$1 > 0 {print $2 * 1e6 / $1}' | median)
awk -v a="$a" -v b="$b" 'BEGIN {
    printf "%-28s %10.2f us\n%-28s %10.2f us\n%-28s %10.2f   (goal: at most 1.3)\n",
        "median HTTP/2 -m1", a, "median HTTP/1.1", b, "ratio", (b > 0) ? a / b : 0 }'
echo

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
