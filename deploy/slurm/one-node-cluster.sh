#!/usr/bin/env bash
# A one-node Slurm cluster on this host, for trying and testing metron's
# job-array runs (deploy/slurm/metron-array.sbatch, tests/slurm.rs).
#
#   one-node-cluster.sh          start it (or check that it is up); exit 0
#                                once `sinfo` shows the node idle
#   one-node-cluster.sh stop     stop the daemons it started
#   one-node-cluster.sh status   exit 0 if the node answers idle/mixed
#
# Uses Debian's slurm-wlm and munge packages, runs as root, and starts the
# daemons directly (no systemd): munged, slurmctld and slurmd, with this
# host as the only node (its real CPU count and memory, from `slurmd -C`)
# in one partition whose CPUs jobs share (OverSubscribe=FORCE), so every
# task of a small job array runs at once. Processes are tracked through
# /proc (proctrack/linuxproc) and not bound to CPUs (task/none): no cgroups
# are needed, so it works in a container.
#
# Running it again is harmless: daemons already running are left alone,
# and the configuration is rewritten only when it would change (which
# restarts the Slurm daemons). A slurm.conf it did not write is never
# overwritten. Every wait is bounded (SLURM_UP_TIMEOUT seconds, default 30).
#
# Everything goes in the usual Debian places: /etc/slurm/slurm.conf (the
# path the client commands read by default), state in /var/lib/slurm,
# logs in /var/log/slurm, pid files in /run/slurm.
set -euo pipefail

CONF=/etc/slurm/slurm.conf
STATE=/var/lib/slurm
LOGS=/var/log/slurm
RUN=/run/slurm
MARK="# Written by deploy/slurm/one-node-cluster.sh"
TIMEOUT=${SLURM_UP_TIMEOUT:-30}

die() {
    echo "one-node-cluster: error: $*" >&2
    exit 1
}

note() {
    echo "one-node-cluster: $*" >&2
}

# The pid in a pid file, if that process is alive and is `name`.
live_pid() {
    local file=$1 name=$2 pid
    [ -r "$file" ] || return 1
    pid=$(cat "$file" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    alive "$pid" "$name" || return 1
    echo "$pid"
}

# Whether a daemon runs, started by this script (its pid file) or not.
running() {
    local name=$1
    local pid
    live_pid "$RUN/$name.pid" "$name" >/dev/null && return 0
    for pid in $(pgrep -x "$name" 2>/dev/null); do
        alive "$pid" "$name" && return 0
    done
    return 1
}

# The state of the node as sinfo shows it (idle, mix, alloc, down, ...),
# empty when the controller does not answer.
node_state() {
    timeout 5 sinfo -h -N -n "$NODE" -o '%t' 2>/dev/null | head -n1 || true
}

node_up() {
    case "$(node_state)" in
        idle | mix | alloc) return 0 ;;
        *) return 1 ;;
    esac
}

# Waits until `pid_file` is written by a live `name` or it dies; a daemon
# that exits at start leaves its reason at the end of its log.
started() {
    local name=$1 log=$2 i
    for ((i = 0; i < 50; i++)); do
        live_pid "$RUN/$name.pid" "$name" >/dev/null && return 0
        sleep 0.1
    done
    die "$name did not start: $(tail -n1 "$log" 2>/dev/null || echo 'no log')"
}

# Seconds since `t0` (date +%s%N), to a tenth.
elapsed() {
    local ds=$((($(date +%s%N) - $1) / 100000000))
    echo "$((ds / 10)).$((ds % 10))"
}

need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found; install Debian's $2 package (apt-get install $2)"
}

check_packages() {
    need munged munge
    need munge munge
    for cmd in slurmctld slurmd sinfo sbatch squeue scontrol; do
        need "$cmd" slurm-wlm
    done
    [ "$(id -u)" = 0 ] || die "must run as root (it starts the Slurm daemons and writes $CONF)"
}

NODE=$(hostname -s)

# --- munge: the authentication every Slurm message carries ---------------
start_munge() {
    if [ ! -s /etc/munge/munge.key ]; then
        if command -v mungekey >/dev/null 2>&1; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
        fi
        note "created /etc/munge/munge.key"
    fi
    chown munge:munge /etc/munge /etc/munge/munge.key
    chmod 700 /etc/munge
    chmod 400 /etc/munge/munge.key
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0
    fi
    mkdir -p /run/munge /var/lib/munge /var/log/munge
    chown munge:munge /run/munge /var/lib/munge /var/log/munge
    chmod 755 /run/munge
    # munged refuses to run as root: run it as its own user.
    runuser -u munge -- munged --force
    mkdir -p "$STATE"
    touch "$STATE/.munged-started-here"
    local i
    for ((i = 0; i < 50; i++)); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    die "munged does not answer: $(tail -n1 /var/log/munge/munged.log 2>/dev/null || echo 'no log')"
}

# --- slurm.conf -----------------------------------------------------------
write_conf() {
    local hw
    # slurmd -C measures this host: CPUs, sockets, cores, threads, memory.
    hw=$(slurmd -C 2>/dev/null | head -n1) || true
    [[ $hw == NodeName=* ]] || die "slurmd -C could not describe this host"
    hw=${hw#NodeName=* }
    cat <<CONF
$MARK; rewritten when it runs.
# One node, this host, in one partition whose CPUs jobs share.
ClusterName=metron
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
# No cgroups: processes are found through /proc, and tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# A node that went down comes back as soon as slurmd registers.
ReturnToService=2
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
MinJobAge=60
NodeName=$NODE NodeAddr=127.0.0.1 $hw State=UNKNOWN
PartitionName=main Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
}

# --- start / stop ---------------------------------------------------------
# Whether `pid` is still a live `name` (a zombie counts as gone).
alive() {
    local pid=$1 name=$2
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$name" ] || return 1
    ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null
}

# Waits at most 10 s for `pid` to exit, then kills it.
reap() {
    local pid=$1 name=$2 i
    for ((i = 0; i < 100; i++)); do
        alive "$pid" "$name" || return 0
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
}

stop_slurm() {
    local ctld="" d=""
    # The pids first: the daemons remove their pid files as they stop.
    ctld=$(live_pid "$RUN/slurmctld.pid" slurmctld) || true
    d=$(live_pid "$RUN/slurmd.pid" slurmd) || true
    # The orderly way (it stops slurmd too), then a signal to what is left.
    if [ -n "$ctld" ]; then
        timeout 5 scontrol shutdown >/dev/null 2>&1 || kill "$ctld" 2>/dev/null || true
        reap "$ctld" slurmctld
    fi
    if [ -n "$d" ]; then
        alive "$d" slurmd && kill "$d" 2>/dev/null
        reap "$d" slurmd
    fi
}

stop() {
    stop_slurm
    local pid
    if [ -e "$STATE/.munged-started-here" ]; then
        if pid=$(live_pid /run/munge/munged.pid munged); then
            kill "$pid" 2>/dev/null || true
            reap "$pid" munged
        fi
        rm -f "$STATE/.munged-started-here"
    fi
    if running slurmctld || running slurmd; then
        die "a Slurm daemon this script did not start is still running"
    fi
    note "stopped"
}

start() {
    check_packages
    local t0
    t0=$(date +%s%N)
    if [ -e "$CONF" ] && ! head -n1 "$CONF" | grep -qF "$MARK"; then
        # Someone else's cluster: use it if it answers, never rewrite it.
        if node_up; then
            note "$CONF is not ours, but node $NODE is up: nothing to do"
            return 0
        fi
        die "$CONF exists and was not written by this script; not overwriting it"
    fi

    start_munge

    mkdir -p "$STATE/slurmctld" "$STATE/slurmd" "$LOGS" "$RUN" /etc/slurm
    local new
    new=$(mktemp)
    write_conf >"$new"
    if [ -e "$CONF" ] && cmp -s "$new" "$CONF"; then
        rm -f "$new"
    else
        if running slurmctld || running slurmd; then
            note "the configuration changed: restarting the Slurm daemons"
            stop_slurm
        fi
        install -m 644 "$new" "$CONF"
        rm -f "$new"
    fi

    if ! running slurmctld; then
        slurmctld
        started slurmctld "$LOGS/slurmctld.log"
    fi
    if ! running slurmd; then
        slurmd
        started slurmd "$LOGS/slurmd.log"
    fi

    local state="" resumed=0
    while (($(date +%s%N) - t0 < TIMEOUT * 1000000000)); do
        state=$(node_state)
        case "$state" in
            idle | mix | alloc)
                echo "one-node-cluster: node $NODE is $state (partition main, $(nproc) CPUs), up in $(elapsed "$t0") s"
                return 0
                ;;
            down* | drain* | drng* | fail*)
                # Left down by an earlier run (the state is kept): resume.
                if ((resumed == 0)); then
                    scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
                    resumed=1
                fi
                ;;
        esac
        sleep 0.5
    done
    local why
    why=$(timeout 5 sinfo -h -N -n "$NODE" -o '%E' 2>/dev/null | head -n1 || true)
    die "node $NODE not idle after ${TIMEOUT} s (state '${state:-no answer}'${why:+, reason: $why}); see $LOGS/"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status)
        state=$(node_state)
        case "$state" in
            idle | mix | alloc) echo "one-node-cluster: node $NODE is $state" ;;
            *)
                echo "one-node-cluster: node $NODE is not up (state '${state:-no answer}')" >&2
                exit 1
                ;;
        esac
        ;;
    *) die "usage: $0 [start|stop|status]" ;;
esac
