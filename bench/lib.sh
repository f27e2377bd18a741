# Shared by the bench/ scripts (sourced, not run): installing what is
# missing, running in a network namespace of one's own, starting nginx or
# another server pinned to its CPU, timing a pinned command, and small
# figures helpers.

TARGET_CPU=${TARGET_CPU:-1}
LOAD_CPU=${LOAD_CPU:-0}
# The prefix and ports bench/nginx-h2c.conf names.
NGX=/tmp/ngx
H2C_URL=http://127.0.0.1:18082/
H1_URL=http://127.0.0.1:18083/
METRON=target/release/metron
export PATH="$PATH:/usr/sbin"

# need COMMAND=PACKAGE...: installs Debian's package for each missing
# command.
need() {
    local missing=() pair
    for pair in "$@"; do
        command -v "${pair%%=*}" >/dev/null || missing+=("${pair#*=}")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing ${missing[*]}" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

# install_artillery DIR: Artillery from npm under DIR
# (DIR/node_modules/.bin/artillery) when it is missing there.
install_artillery() {
    if [ ! -x "$1/node_modules/.bin/artillery" ]; then
        echo "installing artillery (npm, in $1)" >&2
        # Its Playwright engine would fetch a browser at install time: not needed here.
        (cd "$1" && { [ -f package.json ] || npm init -y >/dev/null; } &&
            PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install -s --no-audit --no-fund artillery)
    fi
}

# build_floor: bench/iomodel (its own workspace) built; sets FLOOR to it.
# Its sleep mode is the floor bench/ws.sh and bench/flows.sh set beside
# their generators.
build_floor() {
    cargo build --release --quiet --manifest-path bench/iomodel/Cargo.toml
    FLOOR=bench/iomodel/target/release/iomodel
}

# enter_netns VAR ARGS...: unless VAR is set, runs the script ($SELF)
# again with ARGS and VAR=1 in a network namespace of its own (unshare
# --net, or unshare -rn where only a user namespace may be made) and does
# not return; inside it (VAR set), brings loopback up. Where no namespace
# can be made it warns and returns, and the run uses the host's loopback.
# Whatever needs the registries comes before it.
enter_netns() {
    local var=$1
    shift
    if [ -n "${!var:-}" ]; then
        ip link set lo up
        return
    fi
    if unshare --net true 2>/dev/null; then
        exec env "$var=1" unshare --net "$SELF" "$@"
    elif unshare -rn true 2>/dev/null; then
        exec env "$var=1" unshare -rn "$SELF" "$@"
    fi
    echo "warning: no network namespace could be made; running on the host's loopback" >&2
}

# server_start NAME PORT LOG CMD...: CMD on TARGET_CPU in the background,
# its output added to LOG, listening on 127.0.0.1:PORT when it returns
# (NAME says what did not start, if it does not). Its pid is in SERVER for
# server_stop, which the script's EXIT trap runs too.
server_start() {
    local name=$1 port=$2 log=$3
    shift 3
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        echo "127.0.0.1:$port is taken; stop what listens there" >&2
        exit 1
    fi
    taskset -c "$TARGET_CPU" "$@" >>"$log" 2>&1 &
    SERVER=$!
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
        sleep 0.1
    done
    echo "$name did not start listening; see $log" >&2
    exit 1
}

# server_stop: ends server_start's server, if one runs.
server_stop() {
    if [ -n "${SERVER:-}" ]; then
        kill "$SERVER" 2>/dev/null || true
        wait "$SERVER" 2>/dev/null || true
        SERVER=
    fi
}

# start_nginx: nginx (bench/nginx-h2c.conf) on TARGET_CPU, stopped when
# the script exits.
start_nginx() {
    nginx -V 2>&1 | grep -q -- --with-http_v2_module || {
        echo "$(command -v nginx) lacks http_v2; install Debian's nginx" >&2
        exit 1
    }
    if (exec 3<>/dev/tcp/127.0.0.1/18082) 2>/dev/null; then
        echo "127.0.0.1:18082 is taken; stop what listens there (nginx -s stop -p $NGX)" >&2
        exit 1
    fi
    mkdir -p "$NGX/logs"
    taskset -c "$TARGET_CPU" nginx -p "$NGX" -e "$NGX/logs/error.log" \
        -c "$PWD/bench/nginx-h2c.conf" -g 'daemon off; master_process off;' &
    SERVER=$!
    trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null || true' EXIT
    for _ in $(seq 50); do
        (exec 3<>/dev/tcp/127.0.0.1/18083) 2>/dev/null && return
        sleep 0.1
    done
    echo "nginx did not start listening; see $NGX/logs/error.log" >&2
    exit 1
}

# start_h2o: h2o (bench/h2o-h2c.conf, h2c on 18090) on TARGET_CPU,
# stopped when the script exits (with nginx, if that runs too).
H2O_URL=http://127.0.0.1:18090/
start_h2o() {
    if (exec 3<>/dev/tcp/127.0.0.1/18090) 2>/dev/null; then
        echo "127.0.0.1:18090 is taken; stop what listens there" >&2
        exit 1
    fi
    mkdir -p /tmp/h2o-bench/root
    printf 'hello\n' >/tmp/h2o-bench/root/index.html
    chmod -R a+rX /tmp/h2o-bench
    taskset -c "$TARGET_CPU" h2o -c "$PWD/bench/h2o-h2c.conf" >/tmp/h2o-bench/out.log 2>&1 &
    H2O=$!
    trap 'kill ${SERVER:-} $H2O 2>/dev/null; wait 2>/dev/null || true' EXIT
    for _ in $(seq 50); do
        (exec 3<>/dev/tcp/127.0.0.1/18090) 2>/dev/null && return
        sleep 0.1
    done
    echo "h2o did not start listening; see /tmp/h2o-bench/out.log" >&2
    exit 1
}

# busy_start / busy_stop: a busy loop sharing the generator's CPU, as on a
# machine that runs other work.
busy_start() {
    taskset -c "$LOAD_CPU" sh -c 'while :; do :; done' &
    BUSY=$!
}
busy_stop() {
    kill "$BUSY" 2>/dev/null
    wait "$BUSY" 2>/dev/null || true
}

# timed CMD...: runs CMD on the generator's CPU; prints its output, then a
# last line "cpu SECONDS" (user + system).
timed() {
    local tfile out
    tfile=$(mktemp)
    out=$(/usr/bin/time -f "%U %S" -o "$tfile" taskset -c "$LOAD_CPU" "$@")
    printf '%s\ncpu %s\n' "$out" "$(awk '{print $1 + $2}' "$tfile")"
    rm -f "$tfile"
}

# ratio_table LABEL PEER UNIT PEER_RATE METRON_RATE PEER_PER_CPU
# METRON_PER_CPU [SUFFIX]: the medians of a comparison and metron's ratios
# to the peer's, in three lines; SUFFIX follows the per-CPU ratio.
ratio_table() {
    awk -v label="$1" -v peer="$2" -v unit="$3" -v pr="$4" -v mr="$5" -v pp="$6" -v mp="$7" \
        -v suffix="${8:-}" 'BEGIN {
        printf "%-28s %12s %12s %8s\n", label, peer, "metron", "ratio";
        printf "%-28s %12.0f %12.0f %8.2f\n", "  " unit "/s", pr, mr, (pr > 0) ? mr / pr : 0;
        printf "%-28s %12.0f %12.0f %8.2f%s\n", "  " unit " per CPU-second", pp, mp,
            (pp > 0) ? mp / pp : 0, suffix;
    }'
}

# median of the numbers on stdin
# range: "LOW-HIGH" of the numbers on standard input, whole.
range() { sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.0f-%.0f", lo, hi }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# us VALUE: a report's duration ("52.00us", "1.30ms", "1.40s") in µs.
us() { awk -v v="$1" 'BEGIN {
    u = v; sub(/^[0-9.]+/, "", u); n = v + 0;
    print (u == "us") ? n : (u == "ms") ? n * 1e3 : (u == "s") ? n * 1e6 : (u == "m") ? n * 6e7 : n * 3.6e9 }'; }

# The header line every table starts with: other work on the machine moves
# every figure, and the load average says how much.
header() {
    echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); nginx $(nginx -v 2>&1 | sed 's|.*/||') on CPU $TARGET_CPU, generator on CPU $LOAD_CPU"
}
