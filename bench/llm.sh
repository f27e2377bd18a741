#!/usr/bin/env bash
# LLM serving: metron --llm against the LLM-serving benchmark clients of
# PyPI (AIPerf, guidellm, inference-perf), the same server, the same
# Poisson request rate, the same prompts, the same output length.
#
# The server is `metron serve --llm --llm-ttft 100ms --llm-tpot 10ms`, a
# stand-in model server: each answer's first token 100 ms after its
# request arrives, then one token every 10 ms, MAX_TOKENS (64) in all. It
# is pinned to CPU 1 and started anew for every run, so the count it
# prints when stopped (Ctrl-C) is that run's alone; tcpdump, on the same
# CPU, stamps every request as it arrives, which gives the span over which
# the run's requests reached the server. Each generator runs pinned to
# CPU 0 under /usr/bin/time (user + system CPU of its whole process tree,
# start-up included), for DURATION seconds at RATE requests/s, arrivals
# ARRIVAL (poisson; "constant" for an exact count), alternating for ROUNDS
# rounds:
#   metron -t1 --llm=completions -R RATE --arrival poisson -d DURATION
#       --max-tokens 64 --ignore-eos --prompts prompts.jsonl
#   aiperf profile --endpoint-type completions --streaming --request-rate
#       RATE --arrival-pattern poisson --benchmark-duration DURATION
#       --input-file aiperf.jsonl --custom-dataset-type single-turn
#       --extra-inputs max_tokens:64 --extra-inputs ignore_eos:true
#   guidellm run --backend kind=openai_http,request_format=/v1/completions
#       --profile kind=poisson,rate=RATE --constraint
#       kind=max_duration,seconds=DURATION --data kind=json_file,...
#   inference-perf --config_file (load poisson, one stage RATE for
#       DURATION; api completion, streaming; data shareGPT)
# Every request is a streamed text completion (/v1/completions): the one
# API all four send with a fixed output length (inference-perf's chat
# requests from a ShareGPT file carry the whole conversation and
# max_tokens 30, whatever the file says). The prompts are the same
# PROMPTS (1000) made-up prompts of PROMPT_WORDS (32) common English words,
# written here into each tool's file format (guidellm's holds them over
# again, in the same order, since its run ends when its data does; the
# others cycle through theirs); each request asks for
# MAX_TOKENS tokens with ignore_eos. The tokenizer the peers need is a
# word-level one written here (tokenizer.json: one token a word), which is
# how the server counts too, so no tool downloads one.
#
# Each round prints, per tool: the requests the server received, the span
# from the first to the last one's arrival, the achieved rate (received -
# 1) / span and its share of RATE; the requests the tool completed; the
# TTFT p50 and p99 it reports (the server's own TTFT is 100 ms, so the
# excess is the client's); the tool's own send lag behind its schedule
# (p50/p99, as each tool reports it); and the generator's CPU per
# completed request; beneath, the tool's own counts and the server's CPU
# seconds (it must not be the bottleneck). Then the medians of the rounds
# and each tool's CPU per request as a multiple of metron's.
#
#   bench/llm.sh [DURATION] [ROUNDS] [RATE]   (defaults: 20 3 200)
#
# TOOLS="metron aiperf" picks the generators (default: metron aiperf
# guidellm inference-perf). ARRIVAL=constant sends at a constant rate
# instead. METRON=path picks the binary (default target/release/metron,
# built with cargo build --release when missing). The peers are installed
# with pip, each into a venv of its own under LLMBENCH_TOOLS (default
# /tmp/metron-llmbench), at the versions measured here unless
# AIPERF_PKG, GUIDELLM_PKG or INFERENCE_PERF_PKG name another (e.g.
# AIPERF_PKG=aiperf for the newest); a peer whose install fails is
# skipped with the reason. inference-perf needs Python 3.12 or newer
# (python3.12, python3.13 or a pyenv one); guidellm pulls in torch (about
# 6 GB). The runs happen in a network namespace of their own (unshare
# --net, loopback only) when one can be made. Port LLMBENCH_PORT (default
# 19510). LLMBENCH_KEEP=1 keeps each run's own reports (the folder is
# named at the end). Needs python3, taskset, /usr/bin/time, tcpdump
# (installed when missing; without it the span is DURATION) and unshare.
set -euo pipefail
SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."

DURATION=${1:-20}
ROUNDS=${2:-3}
RATE=${3:-200}
ARRIVAL=${ARRIVAL:-poisson}
MAX_TOKENS=${MAX_TOKENS:-64}
PROMPT_WORDS=${PROMPT_WORDS:-32}
PROMPTS=1000
TTFT_MS=100
TPOT_MS=10
MODEL=metron-llm
TOOLS=${TOOLS:-metron aiperf guidellm inference-perf}
TOOLS_DIR=${LLMBENCH_TOOLS:-/tmp/metron-llmbench}
PORT=${LLMBENCH_PORT:-19510}
AIPERF_PKG=${AIPERF_PKG:-aiperf==0.13.0}
GUIDELLM_PKG=${GUIDELLM_PKG:-guidellm==0.8.1}
INFERENCE_PERF_PKG=${INFERENCE_PERF_PKG:-inference-perf==0.7.0}
METRON_OVERRIDE=${METRON:-}
. bench/lib.sh
METRON=${METRON_OVERRIDE:-$METRON}
# The runs happen in another folder: a path relative to here is made whole.
case $METRON in
    /*) ;;
    */*) METRON=$PWD/$METRON ;;
    *) METRON=$(command -v "$METRON" || echo "$METRON") ;;
esac
URL=http://127.0.0.1:$PORT

case "$DURATION$ROUNDS$MAX_TOKENS$PROMPT_WORDS" in
    *[!0-9]*) echo "DURATION, ROUNDS, MAX_TOKENS and PROMPT_WORDS are whole numbers" >&2; exit 1 ;;
esac
case $RATE in
    ''|*[!0-9.]*|*.*.*) echo "RATE is requests per second, a plain number (200, 12.5)" >&2; exit 1 ;;
esac
case $ARRIVAL in
    poisson|constant) ;;
    *) echo "ARRIVAL is poisson or constant" >&2; exit 1 ;;
esac
for tool in $TOOLS; do
    case $tool in
        metron|aiperf|guidellm|inference-perf) ;;
        *) echo "unknown tool '$tool' in TOOLS: metron, aiperf, guidellm or inference-perf" >&2; exit 1 ;;
    esac
done

venv_bin() { echo "$TOOLS_DIR/$1/bin/$1"; }

# python312: a Python of 3.12 or newer, for inference-perf.
python312() {
    local p
    for p in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python3; do
        p=$(command -v "$p" 2>/dev/null) || continue
        "$p" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$p"; return; }
    done
    return 1
}

# install_peer TOOL PACKAGE [PYTHON]: pip-installs PACKAGE into TOOLS_DIR/TOOL
# when the tool is missing there; fails with the log's last lines.
install_peer() {
    local tool=$1 pkg=$2 py=${3:-python3} dir=$TOOLS_DIR/$1
    [ -x "$(venv_bin "$tool")" ] && return
    echo "installing $pkg (pip, venv in $dir)" >&2
    rm -rf "$dir"
    if ! { "$py" -m venv "$dir" && "$dir/bin/pip" install -q --upgrade pip &&
        "$dir/bin/pip" install -q "$pkg"; } >"$TOOLS_DIR/$tool.install.log" 2>&1; then
        echo "skipping $tool: pip install $pkg failed:" >&2
        tail -3 "$TOOLS_DIR/$tool.install.log" | sed 's/^/  /' >&2
        return 1
    fi
}

if [ -z "${LLMBENCH_IN_NETNS:-}" ]; then
    # Installs need the registries: before the namespace.
    need tcpdump=tcpdump ip=iproute2 ||
        echo "warning: tcpdump or ip could not be installed; the span is then DURATION" >&2
    mkdir -p "$TOOLS_DIR"
    kept=""
    for tool in $TOOLS; do
        case $tool in
            metron) [ -x "$METRON" ] || cargo build --release --quiet ;;
            aiperf) install_peer aiperf "$AIPERF_PKG" || continue ;;
            guidellm) install_peer guidellm "$GUIDELLM_PKG" || continue ;;
            inference-perf)
                if ! py=$(python312); then
                    echo "skipping inference-perf: it needs Python 3.12 or newer (python3.12, python3.13 or pyenv's)" >&2
                    continue
                fi
                install_peer inference-perf "$INFERENCE_PERF_PKG" "$py" || continue ;;
        esac
        kept+="$tool "
    done
    export TOOLS="$kept" METRON
    if unshare --net true 2>/dev/null; then
        exec env LLMBENCH_IN_NETNS=1 unshare --net bash "$SELF" "$@"
    elif unshare -rn true 2>/dev/null; then
        exec env LLMBENCH_IN_NETNS=1 unshare -rn bash "$SELF" "$@"
    fi
    echo "warning: no network namespace could be made; running on the host's loopback" >&2
else
    ip link set lo up 2>/dev/null || true
fi
[ -n "${TOOLS// /}" ] || { echo "no generator left to run" >&2; exit 1; }

mkdir -p "$TOOLS_DIR"
WORK=$(mktemp -d "$TOOLS_DIR/run.XXXXXX")
SERVER=
CAPTURE=
stop_pid() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -INT "$pid" 2>/dev/null || true
    for _ in $(seq 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    stop_pid "$CAPTURE"
    stop_pid "$SERVER"
    if [ -n "${LLMBENCH_KEEP:-}" ]; then
        echo "# the runs' own reports: $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
# The peers load only the local files given them; the hub is not asked.
export HF_HUB_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1 TOKENIZERS_PARALLELISM=false

# The prompts, in each tool's format, and the word-level tokenizer.
python3 - "$WORK/data" "$PROMPTS" "$PROMPT_WORDS" "$MAX_TOKENS" "$RATE" "$DURATION" <<'EOF'
import json, math, os, random, sys
out, n, words, max_tokens = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# guidellm ends its run when its data ends: it gets the prompts over
# again, in the same order, for half as many requests again as asked.
requests = math.ceil(1.5 * float(sys.argv[5]) * float(sys.argv[6]))
os.makedirs(f"{out}/tokenizer", exist_ok=True)
vocabulary = """time year people way day man thing woman life child world school state
family student group country problem hand part place case week company system
program question work government number night point home water room mother area
money story fact month lot right study book eye job word business issue side kind
head house service friend father power hour game line end member law car city
community name president team minute idea kid body information back parent face
others level office door health person art war history party result change morning
reason research girl guy moment air teacher force education foot boy age policy
process music market sense nation plan college interest death experience effect use
class control care field development role effort rate heart drug show leader light
voice wife police mind price report decision son view relationship town road arm
difference value building action model season society tax director position player
record paper space ground form event official matter center couple site project
activity star table need court oil situation cost industry figure street image phone
data picture practice piece land product doctor wall patient worker news test movie
north love support technology step baby computer type attention film tree source
organization hair window evidence population truth song""".split()
rng = random.Random(20261129)
prompts = [" ".join(rng.choice(vocabulary) for _ in range(words)) for _ in range(n)]
answer = " ".join(f"w{i}" for i in range(1, max_tokens + 1))
def lines(name, rows):
    with open(f"{out}/{name}", "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
lines("prompts.jsonl", ({"prompt": p} for p in prompts))                    # metron
lines("aiperf.jsonl", ({"text": p} for p in prompts))                       # single_turn
lines("guidellm.jsonl", ({"prompt": prompts[i % n], "output_tokens_count": max_tokens}
                         for i in range(max(n, requests))))
# inference-perf's shareGPT reader: the first turn is the prompt, the
# second's length in tokens the request's max_tokens.
with open(f"{out}/sharegpt.json", "w") as f:
    json.dump([{"id": str(i), "conversations": [{"from": "human", "value": p},
                                                {"from": "gpt", "value": answer}]}
               for i, p in enumerate(prompts)], f)
# One token a whitespace-separated word, as the server counts them.
vocab = {"[UNK]": 0}
for w in vocabulary + [f"w{i}" for i in range(1, max(max_tokens, 4096) + 1)]:
    vocab.setdefault(w, len(vocab))
json.dump({"version": "1.0", "truncation": None, "padding": None,
           "added_tokens": [{"id": 0, "content": "[UNK]", "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}],
           "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
           "post_processor": None, "decoder": None,
           "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}},
          open(f"{out}/tokenizer/tokenizer.json", "w"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]",
           "model_max_length": 1000000}, open(f"{out}/tokenizer/tokenizer_config.json", "w"))
EOF
DATA=$WORK/data

# start_server: metron serve --llm on TARGET_CPU, listening when it
# returns, and tcpdump stamping each request (a segment that starts with
# "POST") that reaches it.
start_server() {
    if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
        echo "127.0.0.1:$PORT is taken; stop what listens there" >&2
        exit 1
    fi
    taskset -c "$TARGET_CPU" "$METRON" serve --llm --listen "127.0.0.1:$PORT" \
        --llm-ttft "${TTFT_MS}ms" --llm-tpot "${TPOT_MS}ms" >"$1.serve" 2>&1 &
    SERVER=$!
    for _ in $(seq 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
        sleep 0.1
    done
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null || {
        echo "metron serve did not start listening: $(cat "$1.serve")" >&2
        exit 1
    }
    if command -v tcpdump >/dev/null; then
        taskset -c "$TARGET_CPU" tcpdump -i lo -nn -tt -l -q \
            "tcp dst port $PORT and tcp[((tcp[12] & 0xf0) >> 2):4] = 0x504f5354" \
            >"$1.arrivals" 2>"$1.tcpdump" &
        CAPTURE=$!
        for _ in $(seq 50); do
            grep -q "listening on" "$1.tcpdump" 2>/dev/null && break
            sleep 0.1
        done
    fi
}
stop_server() {
    sleep 0.2
    stop_pid "$CAPTURE"
    CAPTURE=
    # The server's own CPU seconds, to show it was not the bottleneck.
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f\n", ($14 + $15) / hz }' \
        "/proc/$SERVER/stat" >"$1.servercpu" 2>/dev/null || true
    stop_pid "$SERVER"
    SERVER=
}

# run TOOL ROUND TAG: one run on LOAD_CPU, its output beside TAG.
run() {
    local tool=$1 round=$2 tag=$3 limit=$((DURATION * 3 + 300))
    local cmd
    case $tool in
        metron)
            cmd=("$METRON" --llm=completions -t1 -c16 --max-connections 2048 -R "$RATE"
                 --arrival "$ARRIVAL" --seed "$round" -d "${DURATION}s"
                 --max-tokens "$MAX_TOKENS" --ignore-eos --prompts "$DATA/prompts.jsonl"
                 --model "$MODEL" --json "$tag.json" "$URL/") ;;
        aiperf)
            cmd=("$(venv_bin aiperf)" profile --model "$MODEL" --url "$URL"
                 --endpoint-type completions --streaming --request-rate "$RATE"
                 --arrival-pattern "$ARRIVAL" --random-seed "$round"
                 --benchmark-duration "$DURATION" --benchmark-grace-period 30
                 --input-file "$DATA/aiperf.jsonl" --custom-dataset-type single-turn
                 --tokenizer "$DATA/tokenizer" --osl "$MAX_TOKENS"
                 --extra-inputs "max_tokens:$MAX_TOKENS" --extra-inputs ignore_eos:true
                 --no-server-metrics --no-gpu-telemetry --ui none --artifact-dir "$tag.d") ;;
        guidellm)
            mkdir -p "$tag.d"
            cmd=(env HF_HUB_OFFLINE=1 "$(venv_bin guidellm)" run
                 --backend "kind=openai_http,target=$URL,model=$MODEL,request_format=/v1/completions"
                 --profile "kind=$ARRIVAL,rate=$RATE"
                 --constraint "kind=max_duration,seconds=$DURATION"
                 --data "kind=json_file,path=$DATA/guidellm.jsonl"
                 --tokenizer "kind=huggingface_auto,model=$DATA/tokenizer"
                 --seed "kind=static,value=$round"
                 --output "kind=json,path=$tag.d/benchmarks.json" --disable-progress) ;;
        inference-perf)
            cat >"$tag.yaml" <<EOF
load:
  type: $ARRIVAL
  stages:
  - rate: $RATE
    duration: $DURATION
api:
  type: completion
  streaming: true
server:
  type: vllm
  model_name: $MODEL
  base_url: $URL
  ignore_eos: true
tokenizer:
  pretrained_model_name_or_path: $DATA/tokenizer
data:
  type: shareGPT
  path: $DATA/sharegpt.json
storage:
  local_storage:
    path: $tag.d
EOF
            cmd=(env HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 "$(venv_bin inference-perf)"
                 --config_file "$tag.yaml") ;;
    esac
    (cd "$WORK" && /usr/bin/time -f "%U %S" -o "$tag.cpu" taskset -c "$LOAD_CPU" \
        timeout -k 10 "$limit" "${cmd[@]}" >"$tag.out" 2>&1) ||
        echo "$tool round $round exited with status $? (see $tag.out; LLMBENCH_KEEP=1 keeps it)" >&2
}

# figures TOOL TAG: "received span completed ttft_p50 ttft_p99 lag_p50
# lag_p99 cpu" (ms, s), from the server's count, the arrivals and the
# tool's own report; "-" where a figure is missing.
figures() {
    python3 - "$1" "$2" "$DURATION" <<'EOF'
import glob, json, re, sys
tool, tag, duration = sys.argv[1], sys.argv[2], float(sys.argv[3])
def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""
m = re.search(r"(\d+) completions answered", read(tag + ".serve"))
received = m.group(1) if m else "-"
stamps = [float(l.split()[0]) for l in read(tag + ".arrivals").splitlines() if l[:1].isdigit()]
span = stamps[-1] - stamps[0] if len(stamps) > 1 else duration
cpu = read(tag + ".cpu").strip().splitlines()
cpu = (f"{sum(map(float, cpu[-1].split())):.2f}"
       if cpu and re.match(r"^[\d.]+ [\d.]+$", cpu[-1]) else "-")
done = p50 = p99 = lag50 = lag99 = "-"
extra = ""
def ms(x, scale=1.0, digits=1):
    return "-" if x is None else f"{x * scale:.{digits}f}"
try:
    if tool == "metron":
        d = json.load(open(tag + ".json"))
        pct = lambda s, q: dict(s["percentiles"]).get(q, None)
        llm = d["llm"]
        done = llm["responses"]
        p50, p99 = ms(pct(llm["ttft"], 50.0), 1e-3), ms(pct(llm["ttft"], 99.0), 1e-3)
        lag = d["latency"]["send_lag"]
        lag50, lag99 = ms(pct(lag, 50.0), 1e-3, 2), ms(pct(lag, 99.0), 1e-3, 2)
        extra = (f"due {d['counters']['due']}, uncorrected TTFT p50 "
                 f"{ms(pct(llm['ttft_uncorrected'], 50.0), 1e-3)} p99 "
                 f"{ms(pct(llm['ttft_uncorrected'], 99.0), 1e-3)}")
    elif tool == "aiperf":
        d = json.load(open(glob.glob(tag + ".d/profile_export_aiperf.json")[0]))
        done = int(d["request_count"]["avg"])
        p50, p99 = ms(d["time_to_first_token"]["p50"]), ms(d["time_to_first_token"]["p99"])
        lag = d.get("credit_to_start_latency", {})
        lag50, lag99 = ms(lag.get("p50")), ms(lag.get("p99"))
    elif tool == "guidellm":
        b = json.load(open(tag + ".d/benchmarks.json"))["benchmarks"][0]
        m = b["metrics"]
        t = m["request_totals"]
        done = t["successful"]
        ttft = m["time_to_first_token_ms"]["successful"]["percentiles"]
        p50, p99 = ms(ttft["p50"]), ms(ttft["p99"])
        lag = m["request_dispatch_delay"]["successful"]["percentiles"]
        lag50, lag99 = ms(lag["p50"], 1e3), ms(lag["p99"], 1e3)
        extra = f"scheduled {t['total']}: {t['incomplete']} incomplete, {t['errored']} errored"
    elif tool == "inference-perf":
        s = json.load(open(glob.glob(tag + ".d/summary_lifecycle_metrics.json")[0]))
        done = s["successes"]["count"]
        ttft = s["successes"]["latency"]["time_to_first_token"]
        p50, p99 = ms(ttft["median"], 1e3), ms(ttft["p99"], 1e3)
        lag = s["load_summary"]["schedule_delay"]
        lag50, lag99 = ms(lag["median"], 1e3), ms(lag["p99"], 1e3)
        extra = f"sent {s['load_summary']['count']}"
except (OSError, IndexError, KeyError, TypeError, ValueError) as e:
    print(f"{tool}: its report could not be read ({type(e).__name__}: {e})", file=sys.stderr)
server_cpu = read(tag + ".servercpu").strip()
if server_cpu:
    extra += f"{', ' if extra else ''}server CPU {server_cpu} s"
if received != "-" and stamps and len(stamps) != int(received):
    extra += f"{', ' if extra else ''}{len(stamps)} request heads arrived, {received} requests whole"
print(received, f"{span:.3f}", done, p50, p99, lag50, lag99, cpu, "|", extra, sep="\t")
EOF
}

version() {
    case $1 in
        metron) "$METRON" --version 2>/dev/null | head -1 ;;
        *) echo "$1 $("$TOOLS_DIR/$1/bin/python" -c "import importlib.metadata as m; print(m.version('$1'))" 2>/dev/null)" ;;
    esac
}

echo "# $(date -u +%Y-%m-%d) $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); metron serve --llm (TTFT ${TTFT_MS} ms, TPOT ${TPOT_MS} ms) on CPU $TARGET_CPU, generator on CPU $LOAD_CPU"
echo "# $(for t in $TOOLS; do printf '%s; ' "$(version "$t")"; done)$(python3 --version)"
echo "# $RATE requests/s, $ARRIVAL arrivals, ${DURATION}s, $ROUNDS alternating rounds; /v1/completions, streamed, $PROMPTS prompts of $PROMPT_WORDS words, max_tokens $MAX_TOKENS, ignore_eos"
printf '%-15s %2s %8s %7s %8s %7s %8s %8s %8s %8s %8s %7s %9s\n' tool rnd received span achieved "%asked" completed \
    "TTFT50" "TTFT99" "lag50" "lag99" "CPU-s" "CPUms/req"
RESULTS=$WORK/results.tsv
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
    for tool in $TOOLS; do
        tag=$WORK/$tool-$round
        start_server "$tag"
        run "$tool" "$round" "$tag"
        stop_server "$tag"
        IFS=$'\t' read -r received span done p50 p99 lag50 lag99 cpu _ extra < <(figures "$tool" "$tag")
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$tool" "$round" "$received" "$span" "$done" \
            "$p50" "$p99" "$lag50" "$lag99" "$cpu" >>"$RESULTS"
        awk -v t="$tool" -v r="$round" -v n="$received" -v s="$span" -v d="$done" -v p50="$p50" \
            -v p99="$p99" -v l50="$lag50" -v l99="$lag99" -v c="$cpu" -v rate="$RATE" 'BEGIN {
            a = (n > 1 && s > 0) ? (n - 1) / s : 0;
            printf "%-15s %2d %8s %7.2f %8.1f %6.1f%% %8s %8s %8s %8s %8s %7s %9s\n", t, r, n, s, a,
                100 * a / rate, d, p50, p99, l50, l99, c, (d > 0 && c != "-") ? sprintf("%.3f", 1000 * c / d) : "-" }'
        [ -z "$extra" ] || echo "                   ($extra)"
    done
done

# The medians, and metron's ratios.
echo
python3 - "$RESULTS" "$RATE" "$TTFT_MS" "$ARRIVAL" "$DURATION" <<'EOF'
import statistics, sys
path, rate, ttft, arrival, duration = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], float(sys.argv[5])
rows = {}
for line in open(path):
    f = line.rstrip("\n").split("\t")
    rows.setdefault(f[0], []).append(f[2:])
def med(xs):
    xs = [float(x) for x in xs if x not in ("-", "")]
    return statistics.median(xs) if xs else None
def fmt(x, spec):
    return "-" if x is None else format(x, spec)
print(f"{'median of rounds':<15} {'achieved/s':>10} {'%asked':>7} {'TTFT p50':>9} "
      f"{'over 100':>8} {'TTFT p99':>9} {'CPU ms/req':>10} {'vs metron':>9}")
cost = {}
for tool, rs in rows.items():
    ach = med([(float(r[0]) - 1) / float(r[1]) for r in rs if r[0] != "-" and float(r[1]) > 0])
    p50, p99 = med(r[3] for r in rs), med(r[4] for r in rs)
    cost[tool] = med([1000 * float(r[7]) / float(r[2]) for r in rs if r[7] != "-" and r[2] not in ("-", "0")])
    rel = (f"{cost[tool] / cost['metron']:.1f}x" if cost.get("metron") and cost[tool] else "-")
    print(f"{tool:<15} {fmt(ach, '10.1f')} {fmt(ach and 100 * ach / rate, '6.1f')}% "
          f"{fmt(p50, '9.1f')} {fmt(p50 and p50 - ttft, '8.1f')} {fmt(p99, '9.1f')} {fmt(cost[tool], '10.3f')} {rel:>9}")
if arrival == "poisson":
    sd = 100 / (rate * duration) ** 0.5
    print(f"# Poisson arrivals: a round's count itself varies by {sd:.1f}% (one standard deviation) around "
          f"{rate * duration:.0f}; ARRIVAL=constant gives an exact count")
EOF
