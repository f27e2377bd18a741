#!/usr/bin/env bash
# How low can it go: the CPU cost per request of wrk and metron against
# the least any HTTP/1.1 client can spend on this kernel, over epoll and
# over io_uring (bench/iomodel: no parsing, no clocks, no statistics; see
# its src/main.rs).
#
# All four run closed loops on -cCONNECTIONS connections against the same
# nginx (bench/nginx-h2c.conf, HTTP/1.1 on 18083) pinned to one CPU, each
# pinned in turn to the other CPU, alternating for ROUNDS rounds; the table
# gives the medians of requests/s and of requests per CPU-second (user +
# system time), each as a ratio to wrk's.
#
#   bench/iomodel.sh [SECONDS] [CONNECTIONS] [ROUNDS]   (defaults: 5, 50, 5)
#
# Needs nginx and wrk (Debian: nginx, wrk), installed here when missing,
# and a kernel that allows io_uring (/proc/sys/kernel/io_uring_disabled 0).
# Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-5}
CONNS=${2:-50}
ROUNDS=${3:-5}
. bench/lib.sh
URL=$H1_URL
ADDR=127.0.0.1:18083
IOMODEL=bench/iomodel/target/release/iomodel

need nginx=nginx wrk=wrk
cargo build --release --quiet
cargo build --release --quiet --manifest-path bench/iomodel/Cargo.toml
start_nginx

# report NAME CMD...: "requests/s requests-per-CPU-second" of one run.
report() {
    local name=$1; shift
    case $name in
        wrk | metron)
            timed "$@" | awk '
                /^Requests\/sec:/ { r = $2 }
                / requests in / && !n { n = $1 }
                /^cpu / { c = $2 }
                END { print r, (c > 0) ? n / c : 0 }' ;;
        *)
            taskset -c "$LOAD_CPU" "$@" | awk '{ print $3 / $5, ($7 > 0) ? $3 / $7 : 0 }' ;;
    esac
}

declare -A rate percpu
NAMES=(wrk metron epoll uring)
for _ in $(seq "$ROUNDS"); do
    for name in "${NAMES[@]}"; do
        case $name in
            wrk) out=$(report wrk wrk -t1 -c"$CONNS" -d"${SECONDS_EACH}s" "$URL") ;;
            metron) out=$(report metron "$METRON" -t1 -c"$CONNS" -d"${SECONDS_EACH}s" "$URL") ;;
            *) out=$(report "$name" "$IOMODEL" "$name" "$ADDR" "$CONNS" "$SECONDS_EACH") ;;
        esac
        rate[$name]+="$(cut -d' ' -f1 <<<"$out") "
        percpu[$name]+="$(cut -d' ' -f2 <<<"$out") "
    done
done

header
echo "# closed loop -c$CONNS, ${SECONDS_EACH}s each, median of $ROUNDS alternating rounds"
printf '%-34s %12s %8s %12s %8s\n' "" "requests/s" "ratio" "per CPU-s" "ratio"
w_rate=$(tr ' ' '\n' <<<"${rate[wrk]}" | grep . | median)
w_cpu=$(tr ' ' '\n' <<<"${percpu[wrk]}" | grep . | median)
for name in "${NAMES[@]}"; do
    r=$(tr ' ' '\n' <<<"${rate[$name]}" | grep . | median)
    c=$(tr ' ' '\n' <<<"${percpu[$name]}" | grep . | median)
    case $name in
        wrk) label="wrk -t1" ;;
        metron) label="metron -t1" ;;
        epoll) label="floor: epoll, recv + send" ;;
        uring) label="floor: io_uring, multishot + batch" ;;
    esac
    awk -v l="$label" -v r="$r" -v c="$c" -v wr="$w_rate" -v wc="$w_cpu" 'BEGIN {
        printf "%-34s %12.0f %8.2f %12.0f %8.2f\n", l, r, (wr > 0) ? r / wr : 0, c, (wc > 0) ? c / wc : 0 }'
done
