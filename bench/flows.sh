#!/usr/bin/env bash
# Flows: metron against Locust and Artillery, the same visit, the same
# server, the same arrival rate.
#
# The visit is tests/scripts/flow_login.lua: log in (POST JSON, a token in
# the answer and a cookie), list /private/items with the token as a Bearer
# header, rest uniform 0.5-1.5 s, open /private/items/N with the cookie
# alone. bench/flows/locustfile.py and bench/flows/artillery.yml are the
# same visit for the other two. The server is `metron serve`, pinned to
# CPU 1; each generator runs pinned to CPU 0 under /usr/bin/time (user +
# system CPU of the whole process, start-up included).
#
# 1. Rates: LOW and HIGH visits started per second for DURATION seconds,
#    the three generators one after the other, for ROUNDS rounds:
#      metron -t1 -c50 -R RATE -d DURATION -s tests/scripts/flow_login.lua
#      artillery run (one phase: arrivalRate RATE for DURATION)
#      locust --headless -u 2*RATE -r RATE -t DURATION (constant_pacing(2))
#    metron and Artillery start visits on a schedule (an open model).
#    Locust has closed users only: its closest is 2*RATE users, each
#    starting a visit every 2 s, their first starts spread 1/RATE apart
#    (see the locustfile), so RATE visits/s for as long as every visit
#    ends within its 2 s. Each round prints visits started and completed
#    and the generator's CPU seconds; then the medians, visits per
#    CPU-second (completed visits / CPU-s) and metron's ratios to each.
#    The floor (bench/iomodel's sleep mode) sends 3*RATE
#    requests/s, a visit's three, over 50 keep-alive connections to the
#    same server, doing nothing but one sleep until each is due, one send
#    and a blocking receive of its answer: what the kernel's part of the
#    requests costs, under which no generator gets. Its visits per
#    CPU-second, and its ratio to each peer's, say how far any generator
#    could go on this machine.
# 2. Stall: STALL_RATE visits/s for DURATION seconds against a server
#    restarted for each generator with --stall-at STALL_AT --stall-for 1s
#    (one second without a response byte, STALL_AT after the server
#    starts, the generator started right after it); per step, the p99 and
#    max latency each tool reports (metron: from when the step was due,
#    and its uncorrected p99 of the items step beside).
#
#   bench/flows.sh [DURATION] [ROUNDS] [LOW] [HIGH]   (defaults: 15 2 50 300)
#
# FLOWS_LOCUST_FAST=1 adds a fourth generator, Locust with its
# FastHttpUser client (FLOW_CLIENT=fast in the locustfile), about 1.3
# minutes more.
#
# METRON=path picks the binary (default target/release/metron, built with
# cargo build --release when missing). Locust (pip, into a venv) and
# Artillery (npm) are installed under FLOWS_TOOLS (default /tmp/flowbench)
# when missing. The runs happen in a network namespace of their own
# (unshare --net, loopback only); Artillery's analytics client is
# replaced by bench/flows/artillery-quiet.cjs, since it posts an event at
# the end of every run even with ARTILLERY_DISABLE_TELEMETRY set. Port
# FLOWS_PORT (default 47210). FLOWS_KEEP=1 keeps each run's own report
# and output (the folder is named at the end). Needs python3, npm,
# taskset, /usr/bin/time, unshare and ip. About 6 minutes with the
# defaults.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."

DURATION=${1:-15}
ROUNDS=${2:-2}
LOW=${3:-50}
HIGH=${4:-300}
STALL_RATE=${STALL_RATE:-50}
STALL_AT=${STALL_AT:-8}
PACE=2
TOOLS_DIR=${FLOWS_TOOLS:-/tmp/flowbench}
PORT=${FLOWS_PORT:-47210}
URL=http://127.0.0.1:$PORT
METRON_OVERRIDE=${METRON:-}
. bench/lib.sh
METRON=${METRON_OVERRIDE:-$METRON}
LOCUST=$TOOLS_DIR/venv/bin/locust
ARTILLERY=$TOOLS_DIR/node_modules/.bin/artillery
FLOW=tests/scripts/flow_login.lua
FIGURES=bench/flows/figures.py
TOOLS="metron locust artillery"
[ -z "${FLOWS_LOCUST_FAST:-}" ] || TOOLS="metron locust locust-fast artillery"
FLOOR=bench/iomodel/target/release/iomodel
TOOLS="$TOOLS floor"

case "$DURATION$LOW$HIGH$STALL_RATE$STALL_AT" in
    *[!0-9]*) echo "DURATION, rates and STALL_AT are whole numbers (seconds, visits/s)" >&2; exit 1 ;;
esac

if [ -z "${FLOWS_IN_NETNS:-}" ]; then
    # Installs need the registries: before the namespace.
    need ip=iproute2
    mkdir -p "$TOOLS_DIR"
    if [ ! -x "$LOCUST" ]; then
        echo "installing locust (pip, venv in $TOOLS_DIR/venv)" >&2
        python3 -m venv "$TOOLS_DIR/venv"
        "$TOOLS_DIR/venv/bin/pip" install -q locust
    fi
    install_artillery "$TOOLS_DIR"
    build_floor
    [ -x "$METRON" ] || cargo build --release --quiet
fi
enter_netns FLOWS_IN_NETNS "$@"

WORK=$(mktemp -d "$TOOLS_DIR/run.XXXXXX")
RESULTS=$WORK/results.tsv
if [ -n "${FLOWS_KEEP:-}" ]; then
    trap 'server_stop; echo "# the runs'"'"' own reports: $WORK"' EXIT
else
    trap 'server_stop; rm -rf "$WORK"' EXIT
fi

# serve [ARGS...]: metron serve on TARGET_CPU, listening when it returns;
# serve.log holds the last server's output alone.
serve() {
    : >"$WORK/serve.log"
    server_start "metron serve" "$PORT" "$WORK/serve.log" \
        "$METRON" serve --listen "127.0.0.1:$PORT" "$@"
}

# gen TOOL RATE TAG: one run of TOOL at RATE visits/s for DURATION on
# LOAD_CPU; prints the CPU-s and figures.py's row, tab-separated.
gen() {
    local tool=$1 rate=$2 tag=$WORK/$3 limit=$((DURATION + 60))
    local cmd client=requests
    if [ "$tool" = locust-fast ]; then client=fast; fi
    case $tool in
        metron)
            cmd=("$METRON" -t1 -c50 -R"$rate" -d"${DURATION}s" -s "$FLOW" --json "$tag.json" "$URL/") ;;
        locust|locust-fast)
            cmd=(env FLOW_RATE="$rate" FLOW_PACE="$PACE" FLOW_CLIENT="$client"
                 "$LOCUST" -f bench/flows/locustfile.py
                 --headless -u $((rate * PACE)) -r "$rate" -t "${DURATION}s" --stop-timeout 5
                 --host "$URL" --only-summary --loglevel WARNING --json-file "$tag") ;;
        artillery)
            cmd=(env ARTILLERY_DISABLE_TELEMETRY=true
                 NODE_OPTIONS="--require $PWD/bench/flows/artillery-quiet.cjs"
                 "$ARTILLERY" run --target "$URL"
                 --overrides "{\"config\":{\"phases\":[{\"duration\":$DURATION,\"arrivalRate\":$rate}]}}"
                 --output "$tag.json" bench/flows/artillery.yml) ;;
        floor)
            cmd=(sh -c '"$@" >"$0"' "$tag.json" "$FLOOR" sleep "127.0.0.1:$PORT" 50 "$DURATION" $((rate * 3)) http /) ;;
    esac
    /usr/bin/time -f "%U %S" -o "$tag.cpu" taskset -c "$LOAD_CPU" timeout "$limit" "${cmd[@]}" \
        >"$tag.out" 2>&1 || echo "$tool at $rate/s exited with status $? (see $tag.out)" >&2
    printf '%s\t%s\n' "$(tail -1 "$tag.cpu" | awk '{print $1 + $2}')" \
        "$(python3 "$FIGURES" row "$tool" "$tag.json")"
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); metron serve on CPU $TARGET_CPU, generator on CPU $LOAD_CPU"
echo "# $("$METRON" --version 2>/dev/null | head -1); locust $("$TOOLS_DIR/venv/bin/python" -c 'import locust; print(locust.__version__)'); artillery $(node -p "require('$TOOLS_DIR/node_modules/artillery/package.json').version"); node $(node --version); $(python3 --version)"

serve
for round in $(seq "$ROUNDS"); do
    for rate in "$LOW" "$HIGH"; do
        for tool in $TOOLS; do
            printf 'rate\t%s\t%s\t%s\t%s\t%s\n' "$rate" "$DURATION" "$round" "$tool" \
                "$(gen "$tool" "$rate" "r$round-$rate-$tool")" >>"$RESULTS"
        done
    done
done
server_stop

for tool in ${TOOLS% floor}; do
    serve --stall-at "${STALL_AT}s" --stall-for 1s
    printf 'stall\t%s\t%s\t1\t%s\t%s\n' "$STALL_RATE" "$DURATION" "$tool" \
        "$(gen "$tool" "$STALL_RATE" "stall-$tool")" >>"$RESULTS"
    server_stop
done

python3 "$FIGURES" table "$RESULTS"
