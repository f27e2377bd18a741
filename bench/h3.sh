#!/usr/bin/env bash
# HTTP/3 benchmark: metron against oha's HTTP/3 client, on the same work.
#
# 1. Saturation, like for like: the server pinned to one CPU, the
#    generator to the other; a closed loop of CONNECTIONS x STREAMS on
#    both sides (metron -cC -mM, oha -c C -p M: the same QUIC connections
#    carrying the same streams each), metron and oha alternating for
#    ROUNDS rounds. Each round prints requests/s and requests per
#    CPU-second of the generator (user + system, /usr/bin/time); then the
#    ratio of the medians, metron / oha, with the range of each. oha's
#    errors are the requests cut off by -z ("aborted due to deadline").
#    Each round also counts the generator's system calls (perf stat's
#    raw_syscalls:sys_enter tracepoint, when perf can read it; the count
#    costs both sides alike) and prints them per request, with metron's
#    QUIC packets sent per request from its own report (oha reports none).
#    The shapes: against Caddy (bench/Caddyfile-h3), 10 x 10 (goal: at
#    least 1.5) and 100 x 1 (goal: at least 1.2); against the built-in
#    target (metron serve --http3, on the server's CPU), 10 x 10 (goal: at
#    least 1.5), and 4 x 2 with 100 KB bodies, where batching datagrams
#    (GSO, recvmmsg, GRO) counts most (Caddy on one CPU sends about 120
#    MB/s, and both generators would mostly wait for it).
# 2. Pacing: metron in rate mode at -R RATE on one core against the
#    built-in target, which keeps up, ROUNDS rounds alternating HTTP/3
#    (metron serve --http3, -t1 -c20 -m100) with HTTP/1.1 (metron serve,
#    -t1 -c100): the median send lag p99 of each (goal: at most 100us
#    at 20k/s over HTTP/3). HTTP/1.1's figure, the generator's cheapest
#    path, is the floor this machine's timer wake-ups set.
#
#   bench/h3.sh [DURATION] [ROUNDS] [RATE]   (defaults: 5s, 3, 20000)
#
# Needs caddy (Debian), and oha built with HTTP/3 (cargo install oha
# --features http3, done here when missing); taskset and /usr/bin/time.
# Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
ROUNDS=${2:-3}
RATE=${3:-20000}
. bench/lib.sh
URL=https://127.0.0.1:18443/

need caddy=caddy
if ! command -v oha >/dev/null || ! oha --help | grep -q -- '--http-version'; then
    echo "installing oha with HTTP/3 (cargo install oha --features http3)" >&2
    cargo install --quiet --locked oha --features http3
fi
cargo build --release --quiet

if (exec 3<>/dev/tcp/127.0.0.1/18443) 2>/dev/null; then
    echo "127.0.0.1:18443 is taken; stop what listens there" >&2
    exit 1
fi
mkdir -p /tmp/caddy-bench
HOME=/tmp/caddy-bench XDG_DATA_HOME=/tmp/caddy-bench XDG_CONFIG_HOME=/tmp/caddy-bench \
    taskset -c "$TARGET_CPU" caddy run --adapter caddyfile --config bench/Caddyfile-h3 \
    >/tmp/caddy-bench/out.log 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
CERT=/tmp/caddy-bench/data/certificates/local/127.0.0.1/127.0.0.1.crt
for _ in $(seq 100); do
    [ -f "$CERT" ] && break
    sleep 0.1
done
[ -f "$CERT" ] || { echo "caddy issued no certificate; see /tmp/caddy-bench/out.log" >&2; exit 1; }
CA=/tmp/caddy-bench/data/pki/authorities/local/root.crt

# counted CMD...: CMD on the generator's CPU (timed), under perf stat
# counting its system calls; its output, "cpu SECONDS", and a last line
# "syscalls N" (0 where perf cannot count them).
CALLS=/tmp/metron-h3-calls
if perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null; then
    COUNT=(perf stat -x, -e raw_syscalls:sys_enter -o "$CALLS" --)
else
    echo "# perf cannot count system calls here: their column reads 0" >&2
    COUNT=()
fi
counted() {
    : >"$CALLS"
    timed "${COUNT[@]}" "$@"
    echo "syscalls $(awk -F, '/raw_syscalls/ { print $1 + 0 }' "$CALLS")"
}

# One round of each, of SAT_URL on CONNS connections of STREAMS streams:
# "requests seconds cpu-seconds errors syscalls packets".
metron_round() {
    counted "$METRON" --http3 -t1 -c"$CONNS" -m"$STREAMS" -d"$DURATION" \
        $TRUST "$SAT_URL" | awk '
        / requests in / { n = $1; s = $4; sub(/s,$/, "", s) }
        /Socket errors:/ { e = $4 + $6 + $8 + $10 }
        /QUIC: [0-9]+ packets sent/ { p = $2 }
        /^syscalls / { k = $2 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d %d %d\n", n, s, c, e, k, p }'
}
# oha's own "Total" runs on past -z while its QUIC connections idle out
# (about 30 s here, with no CPU spent): its rate is over the -z asked.
oha_round() {
    counted oha --no-tui --http-version 3 --insecure -c "$CONNS" -p "$STREAMS" -z "$DURATION" "$SAT_URL" | awk -v d="${DURATION%s}" '
        /\[200\] [0-9]+ responses/ { n += $2 }
        /Error distribution/ { err = 1 }
        err && /^ *\[[0-9]+\]/ { v = $1; gsub(/[][]/, "", v); e += v }
        /^syscalls / { k = $2 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d %d 0\n", n, d, c, e, k }'
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); $(caddy version | cut -d' ' -f1) on CPU $TARGET_CPU, generator on CPU $LOAD_CPU; $(oha --version)"
# saturate URL CONNS STREAMS LABEL [GOAL]: the alternating rounds and the
# medians, with GOAL after the ratio per CPU-second.
saturate() {
    SAT_URL=$1 CONNS=$2 STREAMS=$3
    echo "# HTTP/3 closed loop, $4, $CONNS connections x $STREAMS streams on both sides, -d$DURATION; $ROUNDS alternating rounds"
    printf '%-8s %5s %12s %12s %8s %14s %12s %12s\n' tool round requests req/s errors "req/CPU-s" \
        "calls/req" "packets/req"
    local m=() o=() r tool n s c e k p
    for r in $(seq "$ROUNDS"); do
        for tool in metron oha; do
            read -r n s c e k p < <("${tool}_round")
            printf '%-8s %5d %12d %12.0f %8d %14.0f %12.2f %12s\n' "$tool" "$r" "$n" \
                "$(awk -v n="$n" -v s="$s" 'BEGIN { print (s > 0) ? n / s : 0 }')" "$e" \
                "$(awk -v n="$n" -v c="$c" 'BEGIN { print (c > 0) ? n / c : 0 }')" \
                "$(awk -v n="$n" -v k="$k" 'BEGIN { print (n > 0) ? k / n : 0 }')" \
                "$(awk -v n="$n" -v p="$p" 'BEGIN { if (p > 0 && n > 0) printf "%.2f", p / n; else print "-" }')"
            if [ "$tool" = metron ]; then m+=("$n $s $c $k"); else o+=("$n $s $c $k"); fi
        done
    done
    local mr mp or op
    mr=$(printf '%s\n' "${m[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    mp=$(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    or=$(printf '%s\n' "${o[@]}" | awk '$2 > 0 {print $1 / $2}' | median)
    op=$(printf '%s\n' "${o[@]}" | awk '$3 > 0 {print $1 / $3}' | median)
    ratio_table median oha requests "$or" "$mr" "$op" "$mp" "${5:-}"
    printf '  %-26s %s\n' "range per CPU-second" \
        "oha $(printf '%s\n' "${o[@]}" | awk '$3 > 0 {print $1 / $3}' | range), metron $(printf '%s\n' "${m[@]}" | awk '$3 > 0 {print $1 / $3}' | range)"
    printf '  %-26s %s\n' "system calls per request" \
        "oha $(printf '%s\n' "${o[@]}" | awk '$1 > 0 {print $4 / $1}' | median | xargs printf '%.2f'), metron $(printf '%s\n' "${m[@]}" | awk '$1 > 0 {print $4 / $1}' | median | xargs printf '%.2f') (medians)"
    echo
}
TRUST="--cacert $CA"
saturate "$URL" 10 10 "Caddy, 5-byte body" "   (goal: at least 1.5)"
saturate "$URL" 100 1 "Caddy, 5-byte body" "   (goal: at least 1.2)"

taskset -c "$TARGET_CPU" "$METRON" serve --listen 127.0.0.1:18611 --tls untrusted --http3 \
    >/dev/null &
SMALL_TARGET=$!
trap 'kill $SERVER $SMALL_TARGET 2>/dev/null; wait 2>/dev/null || true' EXIT
sleep 1
TRUST=-k
saturate https://127.0.0.1:18611/ 10 10 "metron serve, 5-byte body" "   (goal: at least 1.5)"
kill $SMALL_TARGET
wait $SMALL_TARGET 2>/dev/null || true

taskset -c "$TARGET_CPU" "$METRON" serve --listen 127.0.0.1:18611 --tls untrusted --http3 \
    --body-size 100000 >/dev/null &
BIG_TARGET=$!
trap 'kill $SERVER $BIG_TARGET 2>/dev/null; wait 2>/dev/null || true' EXIT
sleep 1
saturate https://127.0.0.1:18611/ 4 2 "metron serve, 100 KB body"
kill $BIG_TARGET

# The pacing figure needs a server that keeps up at RATE (Caddy on one CPU
# answers 20k/s in tens of ms, so every stream is busy and requests wait
# for one): the built-in target, on the server's CPU.
taskset -c "$TARGET_CPU" "$METRON" serve --listen 127.0.0.1:18601 --tls untrusted --http3 >/dev/null &
H3_TARGET=$!
taskset -c "$TARGET_CPU" "$METRON" serve --listen 127.0.0.1:18602 >/dev/null &
H1_TARGET=$!
trap 'kill $SERVER $BIG_TARGET $H3_TARGET $H1_TARGET 2>/dev/null; wait 2>/dev/null || true' EXIT
sleep 1
echo "# pacing: -t1 -R$RATE -d$DURATION on CPU $LOAD_CPU against metron serve on CPU $TARGET_CPU; $ROUNDS alternating rounds"
printf '%-10s %5s %12s %12s %12s\n' protocol round "lag p50" "lag p99" "lag max"
# lag ARGS...: one paced run's "p50 p99 max" send lag, in microseconds.
lag() {
    taskset -c "$LOAD_CPU" "$METRON" -t1 -R"$RATE" -d"$DURATION" "$@" | awk '
        function us(v) {
            sub(/,$/, "", v)
            if (v ~ /us$/) { sub(/us$/, "", v); return v }
            if (v ~ /ms$/) { sub(/ms$/, "", v); return v * 1000 }
            sub(/s$/, "", v); return v * 1000000
        }
        /Send lag:/ { printf "%.0f %.0f %.0f\n", us($4), us($6), us($8) }'
}
h3=() h1=()
for r in $(seq "$ROUNDS"); do
    read -r p50 p99 max < <(lag --http3 -c20 -m100 -k https://127.0.0.1:18601/)
    printf '%-10s %5d %10sus %10sus %10sus\n' HTTP/3 "$r" "$p50" "$p99" "$max"
    h3+=("$p99")
    read -r p50 p99 max < <(lag -c100 http://127.0.0.1:18602/)
    printf '%-10s %5d %10sus %10sus %10sus\n' HTTP/1.1 "$r" "$p50" "$p99" "$max"
    h1+=("$p99")
done
m3=$(printf '%s\n' "${h3[@]}" | median)
m1=$(printf '%s\n' "${h1[@]}" | median)
printf 'median send lag p99: HTTP/3 %.0fus, HTTP/1.1 %.0fus   (goal: HTTP/3 at most 100us at 20k/s)\n' "$m3" "$m1"
