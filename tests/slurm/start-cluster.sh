#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for tests/test_slurm.py and .ci/run: Debian's Slurm (slurmctld,
# slurmd, slurm-client), munge, and slurmdbd on a local MariaDB (the snakemake executor plugin asks `sacct` for
# job states; with `accounting_storage/none` every sacct call fails and the plugin waits forever). Every daemon
# is started without systemd and writes its pidfile under the cluster's folder; tests/slurm/stop-cluster.sh
# stops them by PID.
#
#   sudo tests/slurm/start-cluster.sh [DIR]     # DIR: the cluster's folder (default /var/lib/maskbench-slurm,
#                                               # or $MASKBENCH_SLURM_DIR); config, state, logs, database
#   . DIR/env.sh                                # SLURM_CONF and the MASKBENCH_SLURM_* variables of this cluster
#   tests/slurm/stop-cluster.sh [DIR]
#
# Rerunnable: a cluster of the same folder that is up is left as it is; one partly up is stopped and started
# again. Exits non-zero with the reason on stderr when it cannot start (not root, no apt-get, a daemon that
# does not come up: the tail of its log is printed).
set -euo pipefail

DIR=${1:-${MASKBENCH_SLURM_DIR:-/var/lib/maskbench-slurm}}
CLUSTER=maskbench
ACCOUNT=maskbench
PARTITION=debug
DB_PORT=${MASKBENCH_SLURM_DB_PORT:-3317}   # MariaDB on 127.0.0.1 only, a port apart from a system MariaDB's
HERE=$(cd "$(dirname "$0")" && pwd)

die() {
    echo "start-cluster.sh: $*" >&2
    exit 1
}
say() { echo "start-cluster.sh: $*"; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts the Slurm, munge and MariaDB daemons)"
case "$DIR" in /*) ;; *) DIR="$(pwd)/$DIR" ;; esac

# --- packages -------------------------------------------------------------------------------------------------
PACKAGES="slurmctld slurmd slurm-client slurmdbd munge mariadb-server"
missing() {
    local p
    for p in $PACKAGES; do
        dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
    done
}
if [ -n "$(missing)" ]; then
    command -v apt-get >/dev/null || die "apt-get not found: cannot install $(missing | tr '\n' ' ')"
    say "installing $(missing | tr '\n' ' ')"
    # no service may start at install time (a systemd machine would start them with the stock configs)
    POLICY=/usr/sbin/policy-rc.d
    OWN_POLICY=0
    if [ ! -e "$POLICY" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$POLICY" && chmod 755 "$POLICY" && OWN_POLICY=1
    fi
    APT_LOG=$(mktemp)
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        $PACKAGES; } >"$APT_LOG" 2>&1; then
        [ "$OWN_POLICY" = 1 ] && rm -f "$POLICY"
        tail -n 20 "$APT_LOG" >&2
        die "apt-get could not install $PACKAGES (log above)"
    fi
    [ "$OWN_POLICY" = 1 ] && rm -f "$POLICY"
    rm -f "$APT_LOG"
fi
for cmd in slurmctld slurmd slurmdbd sinfo sbatch sacct sacctmgr munged mariadbd mariadb-install-db; do
    command -v "$cmd" >/dev/null || die "$cmd not found after installing $PACKAGES"
done

# --- already up? ----------------------------------------------------------------------------------------------
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
export SLURM_CONF="$DIR/etc/slurm.conf"
if [ -f "$DIR/env.sh" ] && alive "$DIR/run/slurmctld.pid" && alive "$DIR/run/slurmd.pid" \
    && alive "$DIR/run/slurmdbd.pid" && alive "$DIR/run/mariadb.pid" \
    && timeout -s KILL 10 munge -n </dev/null 2>/dev/null | timeout -s KILL 10 unmunge >/dev/null 2>&1 \
    && timeout -s KILL 10 sinfo -h -N -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
    say "the cluster of $DIR is already up: . $DIR/env.sh"
    exit 0
fi
"$HERE/stop-cluster.sh" "$DIR" >/dev/null 2>&1 || true

mkdir -p "$DIR"/{etc,run,log,state,spool/slurmd,mysql,mysql-run}
chmod 755 "$DIR"
chown mysql:mysql "$DIR/mysql" "$DIR/mysql-run"
STEP=""
LOG=""
on_error() {
    echo "start-cluster.sh: failed while $STEP" >&2
    if [ -n "$LOG" ] && [ -f "$LOG" ]; then
        echo "--- last lines of $LOG:" >&2
        tail -n 15 "$LOG" >&2
    fi
}
trap on_error ERR
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND once a second (while $WATCH runs, if set)
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq "$seconds"); do
        "$@" >/dev/null 2>&1 && return 0
        if [ -n "${WATCH:-}" ] && ! kill -0 "$WATCH" 2>/dev/null; then
            echo "start-cluster.sh: $what did not happen: the daemon exited" >&2
            return 1
        fi
        sleep 1
    done
    echo "start-cluster.sh: $what did not happen within $seconds s" >&2
    return 1
}

# --- configuration --------------------------------------------------------------------------------------------
NODE=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
REAL_MEM=$((MEM_MB * 9 / 10))   # a bit under the machine's: slurmd refuses a node that reports less
TOPOLOGY=$(slurmd -C | head -n 1 | grep -oE '(Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=[0-9]+' \
    | tr '\n' ' ')
# A node shaped like a cluster's GPU node (for the paper config's own requests: --gpus=1, 8 CPUs per GPU, 32 GB):
# MASKBENCH_SLURM_NODE_CPUS / _MEM_MB / _GPUS make slurmd advertise that many CPUs, MB and GPUs
# (SlurmdParameters=config_overrides; the GPUs are a count without device files). Jobs then share the real cores.
NODE_GRES=""
OVERRIDES=""
if [ -n "${MASKBENCH_SLURM_NODE_CPUS:-}${MASKBENCH_SLURM_NODE_MEM_MB:-}${MASKBENCH_SLURM_NODE_GPUS:-}" ]; then
    CPUS=${MASKBENCH_SLURM_NODE_CPUS:-$CPUS}
    REAL_MEM=${MASKBENCH_SLURM_NODE_MEM_MB:-$REAL_MEM}
    TOPOLOGY=""
    OVERRIDES="SlurmdParameters=config_overrides"
    if [ "${MASKBENCH_SLURM_NODE_GPUS:-0}" -gt 0 ]; then
        NODE_GRES="Gres=gpu:$MASKBENCH_SLURM_NODE_GPUS"
    fi
fi
cat >"$DIR/etc/slurm.conf" <<EOF
# written by tests/slurm/start-cluster.sh: a one-node cluster on $NODE
ClusterName=$CLUSTER
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# a job without --mem gets 1 GB per CPU, not the whole node
DefMemPerCPU=1024
MailProg=/bin/true
ReturnToService=2
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoreFlags=job_comment
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
JobCompType=jobcomp/none
# jobs stay in squeue 5 minutes after they end (the executor plugin then trusts squeue as well as sacct)
MinJobAge=300
KillWait=10
InactiveLimit=0
SlurmctldTimeout=60
SlurmdTimeout=120
$OVERRIDES
${NODE_GRES:+GresTypes=gpu}
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS $TOPOLOGY RealMemory=$REAL_MEM $NODE_GRES State=UNKNOWN
PartitionName=$PARTITION Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
if [ -n "$NODE_GRES" ]; then
    # GPUs slurmd can count: one character device each as its "device file" (nothing on this node opens them)
    DEVICES=$(echo /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/ptmx /dev/console \
        | cut -d' ' -f1-"$MASKBENCH_SLURM_NODE_GPUS" | tr ' ' ',')
    [ "$MASKBENCH_SLURM_NODE_GPUS" -le 8 ] || die "MASKBENCH_SLURM_NODE_GPUS: at most 8 (one device file each)"
    echo "NodeName=$NODE Name=gpu File=$DEVICES" >"$DIR/etc/gres.conf"
else
    rm -f "$DIR/etc/gres.conf"
fi
DB_PASS=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
(
    umask 077
    cat >"$DIR/etc/slurmdbd.conf" <<EOF
# written by tests/slurm/start-cluster.sh
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
)
chmod 600 "$DIR/etc/slurmdbd.conf"
# plain `sinfo` works too when the machine has no Slurm config of its own
if [ ! -e /etc/slurm/slurm.conf ] || [ "$(readlink /etc/slurm/slurm.conf)" = "$SLURM_CONF" ]; then
    mkdir -p /etc/slurm
    ln -sfn "$SLURM_CONF" /etc/slurm/slurm.conf
fi

# --- munge ----------------------------------------------------------------------------------------------------
STEP="starting munged"
if timeout -s KILL 10 munge -n </dev/null 2>/dev/null | timeout -s KILL 10 unmunge >/dev/null 2>&1; then
    say "munged already running (not ours: left alone)"
else
    [ -s /etc/munge/munge.key ] || { mungekey --create --keyfile /etc/munge/munge.key && chown munge:munge \
        /etc/munge/munge.key && chmod 400 /etc/munge/munge.key; }
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    chmod 755 /run/munge
    LOG=/var/log/munge/munged.log
    runuser -u munge -- munged --pid-file=/run/munge/munged.pid --force
    wait_for 15 "munged answering" sh -c 'munge -n </dev/null | unmunge'
    cp /run/munge/munged.pid "$DIR/run/munged.pid"
fi

# --- MariaDB --------------------------------------------------------------------------------------------------
STEP="starting MariaDB on 127.0.0.1:$DB_PORT"
LOG="$DIR/log/mariadb.log"
SOCK="$DIR/mysql-run/mysqld.sock"
if [ ! -d "$DIR/mysql/mysql" ]; then
    mariadb-install-db --no-defaults --user=mysql --datadir="$DIR/mysql" --auth-root-authentication-method=socket \
        --skip-test-db >"$LOG" 2>&1
fi
touch "$LOG" && chown mysql:mysql "$LOG"
setsid mariadbd --no-defaults --user=mysql --datadir="$DIR/mysql" --socket="$SOCK" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --pid-file="$DIR/mysql-run/mariadb.pid" --log-error="$LOG" \
    --innodb-buffer-pool-size=64M </dev/null >/dev/null 2>&1 &
WATCH=$! wait_for 60 "MariaDB answering on $SOCK" mariadb --no-defaults --socket="$SOCK" -u root -e "SELECT 1"
cp "$DIR/mysql-run/mariadb.pid" "$DIR/run/mariadb.pid"
mariadb --no-defaults --socket="$SOCK" -u root <<EOF
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
CREATE USER IF NOT EXISTS 'slurm'@'localhost';
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
FLUSH PRIVILEGES;
EOF

# --- slurmdbd and the accounts --------------------------------------------------------------------------------
STEP="starting slurmdbd"
LOG="$DIR/log/slurmdbd.log"
slurmdbd
wait_for 60 "slurmdbd answering sacctmgr" timeout -s KILL 10 sacctmgr -n list cluster
STEP="creating the cluster, account and user in sacctmgr"
if ! timeout -s KILL 10 sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    timeout -s KILL 20 sacctmgr -i add cluster "$CLUSTER" >/dev/null
fi
if ! timeout -s KILL 10 sacctmgr -n -P list account format=account | grep -qx "$ACCOUNT"; then
    timeout -s KILL 20 sacctmgr -i add account "$ACCOUNT" cluster="$CLUSTER" \
        description="maskbench tests" organization=maskbench >/dev/null
fi
if ! timeout -s KILL 10 sacctmgr -n -P list association user=root account="$ACCOUNT" format=user | grep -qx root; then
    timeout -s KILL 20 sacctmgr -i add user root account="$ACCOUNT" cluster="$CLUSTER" >/dev/null
fi

# --- slurmctld and slurmd -------------------------------------------------------------------------------------
STEP="starting slurmctld"
LOG="$DIR/log/slurmctld.log"
slurmctld
wait_for 60 "slurmctld answering" timeout -s KILL 10 scontrol ping
STEP="starting slurmd"
LOG="$DIR/log/slurmd.log"
slurmd -N "$NODE"
STEP="waiting for node $NODE to be idle"
node_idle() { timeout -s KILL 10 sinfo -h -N -n "$NODE" -o %t | grep -qE '^(idle|mix|alloc)$'; }
if ! wait_for 60 "node $NODE idle in sinfo" node_idle; then
    timeout -s KILL 10 scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true
    wait_for 30 "node $NODE idle in sinfo after a resume" node_idle
fi
trap - ERR

cat >"$DIR/env.sh" <<EOF
# the one-node cluster of tests/slurm/start-cluster.sh ($DIR)
export SLURM_CONF=$SLURM_CONF
export MASKBENCH_SLURM_CLUSTER=1 MASKBENCH_SLURM_DIR=$DIR
export MASKBENCH_SLURM_ACCOUNT=$ACCOUNT MASKBENCH_SLURM_PARTITION=$PARTITION MASKBENCH_SLURM_GPU_PARTITION=$PARTITION
EOF
say "cluster $CLUSTER up: node $NODE ($CPUS CPUs, ${REAL_MEM} MB), partition $PARTITION, account $ACCOUNT"
say "use it with: . $DIR/env.sh ; stop it with: $HERE/stop-cluster.sh $DIR"
