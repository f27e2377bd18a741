#!/usr/bin/env bash
# WebSocket: metron against Artillery's ws engine, the same echo server,
# the same connections, the same message rate, the same message.
#
# The server is `metron serve --ws` (GET /ws/echo sends every message
# back), pinned to CPU 1; each generator runs pinned to CPU 0 under
# /usr/bin/time (user + system CPU of the whole process, start-up
# included). Every message is a round trip: sent, then its echo awaited.
#
# 1. Rates: LOW and HIGH messages/s over CONNECTIONS connections for
#    DURATION seconds, the two generators one after the other, for ROUNDS
#    rounds:
#      metron -c CONNECTIONS -t 1 -R RATE -d DURATION --data hello ws://.../ws/echo
#      artillery run bench/ws/artillery.yml (CONNECTIONS arrivals within
#        the first second, each a connection that sends RATE*DURATION/
#        CONNECTIONS messages, each matched against its echo, resting
#        CONNECTIONS/RATE seconds after each answer)
#    metron sends on a schedule (a message due every 1/RATE over the
#    connections); Artillery has no schedule for messages, only rests
#    between them, so each connection's pace is its rest plus the round
#    trip, and it takes as long as it needs for its messages. Each round
#    prints the messages asked, sent and answered, the rate achieved and
#    the generator's CPU seconds (user + system, and user alone); then
#    the medians, messages per CPU-second (answered / CPU-s) and per user
#    CPU-second, and metron's ratios to Artillery's.
#    One more Artillery run, one message per connection, measures its
#    start-up (loading, the arrivals, the connections), and the ratio is
#    also given with that left out.
#    The floor (bench/iomodel's sleep mode) sends the same
#    messages at the same rate over the same connections doing nothing
#    but one sleep until each is due, one send and a blocking receive of
#    its echo: what the kernel's part of this work costs, which no
#    generator that keeps the schedule and times each echo as it comes
#    gets under. Its messages per CPU-second, and its ratio to
#    Artillery's, say how far any generator could go on this machine.
# 2. Stall: STALL_RATE messages/s for DURATION seconds against a server
#    restarted for each generator with --stall-at STALL_AT --stall-for 1s
#    (one second without a byte written), timed to fall STALL_AT
#    seconds into the tool's traffic (for Artillery, STALL_AT plus the
#    time it took from launch to its first arrival in the start-up runs;
#    the table says where the stall fell); what each reports:
#    metron the p99 and max of a message from when it was due and from
#    when it was sent (uncorrected); Artillery's ws engine times no
#    message, only each connection's whole session.
#
#   bench/ws.sh [DURATION] [ROUNDS] [LOW] [HIGH]   (defaults: 15 2 500 5000)
#
# WS_CONNECTIONS (default 50), STALL_RATE (default 500) and STALL_AT
# (default 8) change the rest; RATE*DURATION must be a multiple of the
# connections, so that every Artillery connection has the same count.
# METRON=path picks the binary (default target/release/metron, built with
# cargo build --release when missing). Artillery (npm) is installed under
# FLOWS_TOOLS (default /tmp/flowbench, the folder bench/flows.sh uses)
# when missing. The runs happen in a network namespace of their own
# (unshare --net, loopback only); Artillery's analytics client is
# replaced by bench/flows/artillery-quiet.cjs (see bench/flows.sh). Port
# WS_PORT (default 47600). WS_KEEP=1 keeps each run's own report and
# output (the folder is named at the end). Needs python3, npm, node,
# taskset, /usr/bin/time, unshare and ip. About 6 minutes with the
# defaults.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."

DURATION=${1:-15}
ROUNDS=${2:-2}
LOW=${3:-500}
HIGH=${4:-5000}
CONNS=${WS_CONNECTIONS:-50}
STALL_RATE=${STALL_RATE:-500}
STALL_AT=${STALL_AT:-8}
MESSAGE=hello
TOOLS_DIR=${FLOWS_TOOLS:-/tmp/flowbench}
PORT=${WS_PORT:-47600}
URL=ws://127.0.0.1:$PORT/ws/echo
METRON_OVERRIDE=${METRON:-}
. bench/lib.sh
METRON=${METRON_OVERRIDE:-$METRON}
ARTILLERY=$TOOLS_DIR/node_modules/.bin/artillery
FIGURES=bench/ws/figures.py
FLOOR=bench/iomodel/target/release/iomodel
TOOLS="metron artillery floor"

case "$DURATION$ROUNDS$LOW$HIGH$CONNS$STALL_RATE$STALL_AT" in
    *[!0-9]*) echo "DURATION, ROUNDS, rates, connections and STALL_AT are whole numbers" >&2; exit 1 ;;
esac
[ "$CONNS" -gt 0 ] && [ "$LOW" -gt 0 ] && [ "$HIGH" -gt 0 ] && [ "$STALL_RATE" -gt 0 ] || {
    echo "connections and rates must be above 0" >&2
    exit 1
}
for rate in "$LOW" "$HIGH" "$STALL_RATE"; do
    if [ $((rate * DURATION % CONNS)) -ne 0 ]; then
        echo "$rate/s for $DURATION s is not a whole number of messages per connection ($CONNS)" >&2
        exit 1
    fi
done

if [ -z "${WS_IN_NETNS:-}" ]; then
    # Installs need the registries: before the namespace.
    need ip=iproute2
    mkdir -p "$TOOLS_DIR"
    install_artillery "$TOOLS_DIR"
    build_floor
    [ -x "$METRON" ] || cargo build --release --quiet
fi
enter_netns WS_IN_NETNS "$@"

WORK=$(mktemp -d "$TOOLS_DIR/ws.XXXXXX")
RESULTS=$WORK/results.tsv
if [ -n "${WS_KEEP:-}" ]; then
    trap 'server_stop; echo "# the runs'"'"' own reports: $WORK"' EXIT
else
    trap 'server_stop; rm -rf "$WORK"' EXIT
fi

# serve [ARGS...]: metron serve --ws on TARGET_CPU, listening when it
# returns.
serve() {
    server_start "metron serve" "$PORT" "$WORK/serve.log" \
        "$METRON" serve --ws --listen "127.0.0.1:$PORT" "$@"
}

# artillery_cmd COUNT GAP_MS OUT: Artillery's command for CONNS
# connections of COUNT messages each, GAP_MS ms of rest after each answer.
artillery_cmd() {
    cmd=(env ARTILLERY_DISABLE_TELEMETRY=true
         NODE_OPTIONS="--require $PWD/bench/flows/artillery-quiet.cjs"
         "$ARTILLERY" run --target "$URL"
         --overrides "{\"config\":{\"phases\":[{\"duration\":1,\"arrivalCount\":$CONNS}]}}"
         --variables "{\"count\":$1,\"gap\":\"${2}ms\",\"message\":\"$MESSAGE\"}"
         --output "$3" bench/ws/artillery.yml)
}

# gen TOOL RATE TAG: one run of TOOL at RATE messages/s for DURATION on
# LOAD_CPU; prints the CPU-s (user + system, and user alone) and
# figures.py's row, tab-separated.
gen() {
    local tool=$1 rate=$2 tag=$WORK/$3 limit=$((4 * DURATION + 60))
    local asked=$((rate * DURATION)) cmd
    case $tool in
        metron)
            cmd=("$METRON" -c "$CONNS" -t 1 -R "$rate" -d "${DURATION}s" --data "$MESSAGE"
                 --json "$tag.json" "$URL") ;;
        artillery)
            artillery_cmd $((asked / CONNS)) "$(awk -v c="$CONNS" -v r="$rate" 'BEGIN { print 1000 * c / r }')" \
                "$tag.json" ;;
        floor)
            cmd=(sh -c '"$@" >"$0"' "$tag.json" "$FLOOR" sleep "127.0.0.1:$PORT" "$CONNS" "$DURATION" "$rate" ws /ws/echo "$MESSAGE") ;;
    esac
    /usr/bin/time -f "%U %S" -o "$tag.cpu" taskset -c "$LOAD_CPU" timeout "$limit" "${cmd[@]}" \
        >"$tag.out" 2>&1 || echo "$tool at $rate/s exited with status $? (see $tag.out)" >&2
    printf '%s\t%s\n' "$(tail -1 "$tag.cpu" | awk '{print $1 + $2 "\t" $1}')" \
        "$(python3 "$FIGURES" row "$tool" "$tag.json" "$asked")"
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC') $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); metron serve --ws on CPU $TARGET_CPU, generator on CPU $LOAD_CPU"
echo "# $("$METRON" --version 2>/dev/null | head -1); artillery $(node -p "require('$TOOLS_DIR/node_modules/artillery/package.json').version"); node $(node --version)"

# startup_run N: Artillery's start-up, one message per connection; prints
# its CPU-s and the ms from its launch to its first arrival.
startup_run() {
    local tag=$WORK/startup-$1 launched cmd
    artillery_cmd 1 1 "$tag.json"
    launched=$(date +%s%3N)
    /usr/bin/time -f "%U %S" -o "$tag.cpu" taskset -c "$LOAD_CPU" timeout 60 "${cmd[@]}" \
        >"$tag.out" 2>&1 || echo "artillery's start-up run exited with status $? (see $tag.out)" >&2
    printf '%s %s\n' "$(tail -1 "$tag.cpu" | awk '{print $1 + $2}')" \
        "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["aggregate"]["firstCounterAt"] - int(sys.argv[2]))' "$tag.json" "$launched" 2>/dev/null || echo 0)"
}

serve
: >"$WORK/startup.txt"
for round in $(seq "$ROUNDS"); do
    startup_run "$round" >>"$WORK/startup.txt"
    for rate in "$LOW" "$HIGH"; do
        for tool in $TOOLS; do
            printf 'rate\t%s\t%s\t%s\t%s\t%s\t0\t%s\n' "$rate" "$DURATION" "$CONNS" "$round" "$tool" \
                "$(gen "$tool" "$rate" "r$round-$rate-$tool")" >>"$RESULTS"
        done
    done
done
server_stop
STARTUP_CPU=$(cut -d' ' -f1 "$WORK/startup.txt" | median)
STARTUP_MS=$(cut -d' ' -f2 "$WORK/startup.txt" | median)
echo "# Artillery's start-up (one message on each of $CONNS connections), median of $ROUNDS: $STARTUP_CPU CPU-s, first arrival $STARTUP_MS ms after launch"

# The stall falls STALL_AT into each tool's traffic: Artillery's server
# stalls later by the time Artillery took to start (measured above). The
# floor times nothing: it has no part in it.
for tool in metron artillery; do
    at=$((STALL_AT * 1000))
    [ "$tool" = metron ] || at=$((at + ${STARTUP_MS%.*}))
    started=$(date +%s%3N)
    serve --stall-at "${at}ms" --stall-for 1s
    printf 'stall\t%s\t%s\t%s\t1\t%s\t%s\t%s\n' "$STALL_RATE" "$DURATION" "$CONNS" "$tool" \
        $((started + at)) "$(gen "$tool" "$STALL_RATE" "stall-$tool")" >>"$RESULTS"
    server_stop
done

python3 "$FIGURES" table "$RESULTS" "$STARTUP_CPU"
