#!/usr/bin/env bash
# gRPC benchmark: metron --grpc against ghz, unary calls over h2c.
#
# The server is bench/grpc-server (grpc-go, no generated code: one handler
# for every method and a codec that passes bytes through), built here with
# go build into a temporary directory and pinned to one CPU; the generator
# is pinned to the other. Both generators call greet.Greeter/SayHello of
# tests/grpc/greet.proto with {"name":"x"} in a closed loop with 100 calls
# in flight on 10 connections (metron -t1 -c10 -m10; ghz --connections 10
# -c 100 --cpus 1), alternating for ROUNDS rounds. Each round prints calls
# answered OK per second and per CPU-second of the generator (user +
# system, /usr/bin/time); then the ratio of the medians, metron / ghz
# (goal: at least 2 per CPU-second). ghz's errors are the calls -z cut
# off ("transport is closing"); metron's are its calls lost to read, write
# and timeout errors and its non-OK statuses.
#
#   bench/grpc.sh [DURATION] [ROUNDS]   (defaults: 5s, 3)
#
# TOOLS="ghz" (or "metron") runs one side alone, without the ratio.
# Needs go (for the server, and for ghz: go install
# github.com/bojand/ghz/cmd/ghz@latest, done here when missing), python3
# (reads metron's JSON document), taskset and /usr/bin/time. Loopback
# only.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-5s}
ROUNDS=${2:-3}
TOOLS=${TOOLS:-metron ghz}
. bench/lib.sh
PORT=18700
ADDR=127.0.0.1:$PORT
URL=http://$ADDR
PROTO=tests/grpc/greet.proto
CALL=greet.Greeter/SayHello
DATA='{"name":"x"}'

command -v go >/dev/null || { echo "go is needed to build bench/grpc-server" >&2; exit 1; }
GHZ=$(command -v ghz || echo "$(go env GOPATH)/bin/ghz")
if [[ " $TOOLS " == *" ghz "* ]] && [ ! -x "$GHZ" ]; then
    echo "installing ghz (go install github.com/bojand/ghz/cmd/ghz@latest)" >&2
    go install github.com/bojand/ghz/cmd/ghz@latest
fi
if [[ " $TOOLS " == *" metron "* ]]; then
    cargo build --release --quiet
fi

WORK=$(mktemp -d)
(cd bench/grpc-server && go build -o "$WORK/grpc-server" .)
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    echo "$ADDR is taken; stop what listens there" >&2
    exit 1
fi
taskset -c "$TARGET_CPU" "$WORK/grpc-server" -listen "$ADDR" >"$WORK/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
(exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || {
    echo "the gRPC server did not start listening: $(cat "$WORK/server.log")" >&2
    exit 1
}

# One round of each: "calls seconds cpu-seconds errors", calls being those
# answered OK. A generator that fails prints its error and a round of 0.
metron_round() {
    local json=$WORK/metron.json out
    rm -f "$json"
    out=$(timed "$METRON" --grpc "$CALL" --proto "$PROTO" --data "$DATA" \
        -t1 -c10 -m10 -d"$DURATION" --json "$json" "$URL" 2>"$WORK/metron.err") || true
    if [ ! -s "$json" ]; then
        echo "metron failed: $(cat "$WORK/metron.err")" >&2
        echo "0 0 0 0"
        return
    fi
    python3 - "$json" "$(awk '/^cpu / { print $2 }' <<<"$out")" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
c = doc["counters"]
grpc = c.get("grpc", {})
ok = grpc.get("OK", 0)
errors = sum(v for k, v in grpc.items() if k != "OK")
errors += sum(c["errors"][k] for k in ("read", "write", "timeout"))
print(ok, f"{doc['window_s']:.2f}", sys.argv[2], errors)
EOF
}
ghz_round() {
    timed "$GHZ" --insecure --cpus 1 --proto "$PROTO" --call "$CALL" -d "$DATA" \
        --connections 10 -c 100 -z "$DURATION" "$ADDR" | awk '
        /^  Total:/ { s = $2; if ($3 == "ms") s /= 1000 }
        /^Status code distribution:/ { codes = 1; next }
        codes && /^ *\[/ { if ($1 == "[OK]") n = $2; else e += $2; next }
        codes { codes = 0 }
        /^cpu / { c = $2 }
        END { printf "%d %.2f %.3f %d\n", n, s, c, e }'
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); bench/grpc-server ($(go version | cut -d' ' -f3), grpc-go $(awk '{ for (i = 1; i < NF; i++) if ($i == "google.golang.org/grpc") print $(i + 1) }' bench/grpc-server/go.mod)) on CPU $TARGET_CPU, generator on CPU $LOAD_CPU; ghz $("$GHZ" --version 2>&1 || echo '?')"
echo "# gRPC unary $CALL, closed loop, 100 in flight on 10 connections, -d$DURATION; $ROUNDS alternating rounds"
printf '%-8s %5s %12s %12s %8s %14s\n' tool round calls calls/s errors "calls/CPU-s"
declare -A runs=([metron]="" [ghz]="")
for r in $(seq "$ROUNDS"); do
    for tool in $TOOLS; do
        read -r n s c e < <("${tool}_round")
        printf '%-8s %5d %12d %12.0f %8d %14.0f\n' "$tool" "$r" "$n" \
            "$(awk -v n="$n" -v s="$s" 'BEGIN { print (s > 0) ? n / s : 0 }')" "$e" \
            "$(awk -v n="$n" -v c="$c" 'BEGIN { print (c > 0) ? n / c : 0 }')"
        runs[$tool]+="$n $s $c"$'\n'
    done
done
rate() { printf '%s' "${runs[$1]}" | awk '$2 > 0 { print $1 / $2 }' | median; }
per_cpu() { printf '%s' "${runs[$1]}" | awk '$3 > 0 { print $1 / $3 }' | median; }
if [ -n "${runs[metron]}" ] && [ -n "${runs[ghz]}" ]; then
    ratio_table median ghz calls "$(rate ghz)" "$(rate metron)" "$(per_cpu ghz)" \
        "$(per_cpu metron)" "   (goal: at least 2)"
else
    for tool in $TOOLS; do
        printf '%-28s %12.0f calls/s %12.0f calls per CPU-second\n' "median, $tool" "$(rate "$tool")" "$(per_cpu "$tool")"
    done
fi
