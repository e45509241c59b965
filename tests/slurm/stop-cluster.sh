#!/usr/bin/env bash
# Stops the one-node cluster of tests/slurm/start-cluster.sh by the PIDs in its folder: its jobs are cancelled
# first, then slurmd and slurmctld get SIGTERM, then slurmdbd, then MariaDB and (when the start script started it)
# munged, each SIGKILL after 20 s. The folder (config, accounting database, logs) is kept for the next start.
#
#   tests/slurm/stop-cluster.sh [DIR]     # DIR as given to start-cluster.sh (default /var/lib/maskbench-slurm)
set -uo pipefail

DIR=${1:-${MASKBENCH_SLURM_DIR:-/var/lib/maskbench-slurm}}
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac
[ -d "$DIR/run" ] || { echo "stop-cluster.sh: no cluster folder $DIR/run: nothing to stop"; exit 0; }
export SLURM_CONF="$DIR/etc/slurm.conf"

alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# the cluster's own jobs, so that no job step outlives its slurmd
if alive "$DIR/run/slurmctld.pid"; then
    jobs=$(timeout -s KILL 10 squeue -h -o %i 2>/dev/null || true)
    if [ -n "$jobs" ]; then
        # shellcheck disable=SC2086
        timeout -s KILL 10 scancel $jobs 2>/dev/null || true
        for _ in $(seq 30); do
            [ -z "$(timeout -s KILL 10 squeue -h -o %i 2>/dev/null)" ] && break
            sleep 1
        done
    fi
fi

stop() {  # stop NAME ...: SIGTERM to each daemon named (its PID from $DIR/run/NAME.pid), then wait for all of them
    local name pid waiting=() stopped=()
    for name in "$@"; do
        if alive "$DIR/run/$name.pid"; then
            pid=$(cat "$DIR/run/$name.pid")
            kill -TERM "$pid" 2>/dev/null
            waiting+=("$name:$pid")
            stopped+=("$name ($pid)")
        fi
        rm -f "$DIR/run/$name.pid"
    done
    [ ${#waiting[@]} = 0 ] && return 0
    for _ in $(seq 200); do  # 20 s, looked at every 0.1 s: a daemon is gone within about 3 s
        local left=()
        for name in "${waiting[@]}"; do
            kill -0 "${name#*:}" 2>/dev/null && left+=("$name")
        done
        waiting=("${left[@]}")
        [ ${#waiting[@]} = 0 ] && break
        sleep 0.1
    done
    for name in "${waiting[@]}"; do
        echo "stop-cluster.sh: ${name%%:*} (${name#*:}) still running after 20 s: SIGKILL"
        kill -KILL "${name#*:}" 2>/dev/null
    done
    echo "stop-cluster.sh: stopped ${stopped[*]}"
}

# the Slurm daemons first (slurmctld sends its last records to slurmdbd), then the accounting daemon, then what it
# and they rely on: MariaDB, and munged (its pidfile is there only when start-cluster.sh started it)
stop slurmd slurmctld
stop slurmdbd
stop mariadb munged
rm -f "$DIR/env.sh"
[ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$SLURM_CONF" ] && rm -f /etc/slurm/slurm.conf
exit 0
