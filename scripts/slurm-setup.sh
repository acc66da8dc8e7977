#!/usr/bin/env bash
# A one-host Slurm test cluster from Debian packages, without systemd.
#
#   scripts/slurm-setup.sh          set up and start (idempotent: a second call checks and says "ok")
#   scripts/slurm-setup.sh stop     stop the daemons this script started (by their pid files)
#   scripts/slurm-setup.sh status   say whether each daemon runs and what sinfo shows
#
#   1. apt-get install slurmctld slurmd slurm-client munge   (only when missing)
#   2. munge key (only when missing) and munged               (pid file in the state folder)
#   3. two fake GPUs: character devices made with mknod       (gres.conf refuses regular files)
#   4. slurm.conf + gres.conf                                  (rewritten only when they change)
#   5. slurmctld and slurmd in the foreground, detached        (pid files in the state folder)
#   6. wait until sinfo shows the node idle
#
# Run as root on a fresh Debian machine. The node is this host with the CPUs and memory
# `slurmd -C` finds and Gres=gpu:2. Time limits are enforced to the minute with no grace
# (OverTimeLimit=0, KillWait=2) so tests can see a task die of its time limit.
# Environment: REPROSPEC_SLURM_STATE (default /var/tmp/reprospec-slurm): pid files, logs,
# spool, fake devices. The config goes to /etc/slurm (where every Slurm client looks); a
# slurm.conf there that this script did not write is never touched.
set -euo pipefail

STATE=${REPROSPEC_SLURM_STATE:-/var/tmp/reprospec-slurm}
CONF_DIR=/etc/slurm
CONF=$CONF_DIR/slurm.conf
MARK="# written by reprospec scripts/slurm-setup.sh"
MUNGE_SOCKET=/run/munge/munge.socket.2

say() { printf 'slurm-setup: %-12s %s\n' "$1" "$2"; }
die() { echo "slurm-setup: $*" >&2; exit 1; }

# A pid file names a live process of that program (not a recycled pid).
running() {
    local pidfile=$STATE/run/$1.pid pid
    [ -f "$pidfile" ] || return 1
    pid=$(cat "$pidfile" 2>/dev/null) || return 1
    [ -n "$pid" ] && [ -r "/proc/$pid/comm" ] && [ "$(cat "/proc/$pid/comm")" = "$1" ]
}

stop_one() {
    local name=$1 pid
    if ! running "$name"; then
        rm -f "$STATE/run/$name.pid"
        say "$name" "not running"
        return
    fi
    pid=$(cat "$STATE/run/$name.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        [ -d "/proc/$pid" ] || break
        sleep 0.1
    done
    if [ -d "/proc/$pid" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        say "$name" "stopped (pid $pid, killed after 10 s)"
    else
        say "$name" "stopped (pid $pid)"
    fi
    rm -f "$STATE/run/$name.pid"
}

stop_all() {
    # Order matters: the node daemon first, the controller, then the authentication both use.
    stop_one slurmd
    stop_one slurmctld
    stop_one munged
}

node_state() { timeout 10 sinfo --noheader --Node --format='%T' 2>/dev/null | head -n1; }

case "${1:-start}" in
    stop) stop_all; exit 0 ;;
    status)
        for name in munged slurmctld slurmd; do
            if running "$name"; then say "$name" "running (pid $(cat "$STATE/run/$name.pid"))"
            else say "$name" "not running"; fi
        done
        say sinfo "$(node_state || true)"
        exit 0 ;;
    start) ;;
    *) die "unknown subcommand ${1}: use start (default), stop or status" ;;
esac

if [ "$(id -u)" != 0 ]; then
    # It installs packages, writes /etc/slurm and starts daemons as root.
    command -v sudo >/dev/null || die "run as root (or with sudo available)"
    exec sudo -E bash "$0" start
fi
T0=$(date +%s)
mkdir -p "$STATE"/{run,log,spool/ctld,spool/d,dev}

# 1. packages
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sbatch >/dev/null \
        && command -v munged >/dev/null; then
    say packages "ok (installed)"
else
    export DEBIAN_FRONTEND=noninteractive
    pkgs=(slurmctld slurmd slurm-client munge)
    # Without systemd, maintainer scripts may try init scripts that cannot work before
    # the config exists: deny service starts during the install (we start the daemons).
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    if ! apt-get install -y --no-install-recommends "${pkgs[@]}" >"$STATE/log/apt.log" 2>&1; then
        # Stale or missing package lists: refresh once, then retry.
        apt-get update >>"$STATE/log/apt.log" 2>&1
        apt-get install -y --no-install-recommends "${pkgs[@]}" >>"$STATE/log/apt.log" 2>&1 \
            || { tail -n 20 "$STATE/log/apt.log" >&2; die "apt-get install failed"; }
    fi
    say packages "installed ${pkgs[*]}"
fi

# 2. munge: the key, then the daemon (it refuses keys and folders others can read)
if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    say munge.key "created"
fi
chown munge:munge /etc/munge /etc/munge/munge.key
chmod 0700 /etc/munge
chmod 0400 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 0755 /run/munge
if running munged; then
    say munged "ok (pid $(cat "$STATE/run/munged.pid"))"
else
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    # --foreground, and setsid/setpriv exec without forking: the pid we record is munged's own.
    touch "$STATE/log/munged.log" && chown munge:munge "$STATE/log/munged.log"
    setsid setpriv --reuid=munge --regid=munge --init-groups munged --foreground \
        --socket="$MUNGE_SOCKET" --log-file="$STATE/log/munged.log" \
        </dev/null >>"$STATE/log/munged.out" 2>&1 &
    echo $! >"$STATE/run/munged.pid"
    for _ in $(seq 1 100); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
    running munged && [ -S "$MUNGE_SOCKET" ] \
        || { tail -n 20 "$STATE/log/munged.log" >&2; die "munged did not start"; }
    say munged "started (pid $!)"
fi
munge -n </dev/null | unmunge >/dev/null 2>&1 || die "munge cannot encode and decode a credential"

# 3. fake GPUs: character devices nobody opens (there is no cgroup device constraint);
# Slurm only needs them to exist and be devices to count them as GRES.
for i in 0 1; do
    dev=$STATE/dev/nvidia$i
    if [ ! -c "$dev" ]; then
        rm -f "$dev"
        mknod "$dev" c 195 "$i"
    fi
done
say gpus "ok ($STATE/dev/nvidia0, nvidia1)"

# 4. configuration
HOST=$(hostname -s)
read -r CPUS MEM < <(slurmd -C | awk '
    /^NodeName=/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
    END { print v["CPUs"], v["RealMemory"] }')
[ -n "$CPUS" ] && [ -n "$MEM" ] || die "slurmd -C did not report CPUs and RealMemory"
# Leave some memory to the machine itself (RealMemory above the real figure drains the node).
MEM=$(( MEM * 9 / 10 ))

new_conf=$(cat <<EOF
$MARK
ClusterName=reprospec-test
SlurmctldHost=$HOST
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$STATE/spool/d
SlurmctldPidFile=$STATE/run/slurmctld.pid.own
SlurmdPidFile=$STATE/run/slurmd.pid.own
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
# No systemd, no cgroup v1 hierarchy: track processes by their parent pids, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
# Start the next array task as soon as one ends (the defaults wait up to 3 s between rounds).
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
GresTypes=gpu
MpiDefault=none
ReturnToService=2
# Short timeouts: a test cluster answers fast or not at all.
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
InactiveLimit=0
MinJobAge=300
KillWait=2
OverTimeLimit=0
MaxArraySize=10001
NodeName=$HOST CPUs=$CPUS RealMemory=$MEM Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
)
new_gres=$(cat <<EOF
$MARK
NodeName=$HOST Name=gpu File=$STATE/dev/nvidia[0-1]
EOF
)
if [ -f "$CONF" ] && ! head -n1 "$CONF" | grep -qF "$MARK"; then
    die "$CONF exists and was not written by this script: not touching a real cluster's config"
fi
changed=0
mkdir -p "$CONF_DIR"
if [ "$(cat "$CONF" 2>/dev/null)" != "$new_conf" ]; then
    printf '%s\n' "$new_conf" >"$CONF"; changed=1
fi
if [ "$(cat "$CONF_DIR/gres.conf" 2>/dev/null)" != "$new_gres" ]; then
    printf '%s\n' "$new_gres" >"$CONF_DIR/gres.conf"; changed=1
fi
if [ "$changed" = 1 ]; then
    say config "written ($CONF, gres.conf: $HOST CPUs=$CPUS RealMemory=$MEM gpu:2)"
    # Daemons started with another configuration must not keep running with it.
    if running slurmctld || running slurmd; then
        stop_one slurmd
        stop_one slurmctld
    fi
else
    say config "ok (unchanged)"
fi

# 5. daemons: -D keeps them in the foreground so $! is the daemon and stop can find it.
start_daemon() {
    local name=$1
    shift
    if running "$name"; then
        say "$name" "ok (pid $(cat "$STATE/run/$name.pid"))"
        return
    fi
    setsid "$name" -D "$@" </dev/null >>"$STATE/log/$name.out" 2>&1 &
    echo $! >"$STATE/run/$name.pid"
    sleep 0.2
    running "$name" || { tail -n 20 "$STATE/log/$name.log" "$STATE/log/$name.out" >&2 || true
                         die "$name exited at start"; }
    say "$name" "started (pid $!)"
}
start_daemon slurmctld
start_daemon slurmd

# 6. wait for the node: idle (or mixed/allocated when jobs already run) within 60 s
state=""
for _ in $(seq 1 120); do
    state=$(node_state || true)
    case "$state" in
        idle|mixed|allocated|completing) break ;;
        down*|drain*) scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    sleep 0.5
done
case "$state" in
    idle|mixed|allocated|completing) ;;
    *) tail -n 20 "$STATE/log/slurmctld.log" "$STATE/log/slurmd.log" >&2 || true
       die "node $HOST is '${state:-not answering}' after 60 s" ;;
esac
say node "$HOST $state"
echo "slurm-setup: done in $(( $(date +%s) - T0 )) s (stop: $0 stop)"
