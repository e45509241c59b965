#!/usr/bin/env bash
# Stops the one-node cluster of tests/slurm/start-cluster.sh by the PIDs in its folder: its jobs are cancelled
# first, then slurmd, slurmctld, slurmdbd, MariaDB and (when the start script started it) munged get SIGTERM,
# and SIGKILL after 20 s. The folder (config, accounting database, logs) is kept for the next start.
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

stop() {  # stop NAME PIDFILE
    local name=$1 pidfile=$2 pid
    if ! alive "$pidfile"; then
        rm -f "$pidfile"
        return 0
    fi
    pid=$(cat "$pidfile")
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "stop-cluster.sh: $name ($pid) still running after 20 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$pidfile"
    echo "stop-cluster.sh: stopped $name ($pid)"
}

stop slurmd "$DIR/run/slurmd.pid"
stop slurmctld "$DIR/run/slurmctld.pid"
stop slurmdbd "$DIR/run/slurmdbd.pid"
stop mariadb "$DIR/run/mariadb.pid"
stop munged "$DIR/run/munged.pid"   # only present when start-cluster.sh started it
rm -f "$DIR/env.sh"
[ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$SLURM_CONF" ] && rm -f /etc/slurm/slurm.conf
exit 0
