#!/usr/bin/env bash
# A real single-node Slurm on this machine (munged, slurmctld, slurmd), for trying slurm/*.sbatch and
# for tests/cli/test_slurm_local.sh. Not for production: no accounting, no cgroups, daemons run as root.
#
# Usage: scripts/slurm-local.sh up|down|status
#   then:  export SLURM_CONF=/var/tmp/wavel-slurm/slurm.conf   (printed by `up`)
#
# Environment:
#   WAVEL_SKIP_APT=1        do not call apt-get (as scripts/setup.sh); slurm-wlm and munge must be installed
#   WAVEL_SLURM_DIR=DIR     private state: slurm.conf, state, spool, pid files, logs (default /var/tmp/wavel-slurm)
#   WAVEL_SLURM_TIMEOUT=S   seconds `up` waits for the node to be idle (default 30)
#   WAVEL_SLURM_PORT=P      slurmctld listens on P and slurmd on P+1 (default 16817, away from a site
#                           Slurm's 6817/6818 on the same node)
#
# Exit codes: 0 ok; 77 cannot run here (not root, or Slurm not installed and apt-get skipped or failing),
# so a test can skip; 1 the daemons did not come up (their logs are printed).
set -euo pipefail

dir=${WAVEL_SLURM_DIR:-/var/tmp/wavel-slurm}
conf=$dir/slurm.conf
timeout_s=${WAVEL_SLURM_TIMEOUT:-30}
port=${WAVEL_SLURM_PORT:-16817}
export SLURM_CONF=$conf   # the daemons and the client commands below all read this file

say()  { printf '[slurm-local] %s\n' "$*"; }
skip() { printf '[slurm-local] cannot run: %s\n' "$*" >&2; exit 77; }
die()  { printf '[slurm-local] error: %s\n' "$*" >&2; exit 1; }

# alive PIDFILE: the pid file names a running process.
alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

install_packages() {
  command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null && return 0
  [ "${WAVEL_SKIP_APT:-0}" = 1 ] && skip "slurm-wlm/munge are not installed and WAVEL_SKIP_APT=1"
  say "installing slurm-wlm munge (apt-get)"
  # Lock timeout: another apt-get (e.g. scripts/setup.sh) may be running at the same time.
  apt-get -o DPkg::Lock::Timeout=300 update -q >/dev/null || skip "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends \
    slurm-wlm munge >/dev/null || skip "apt-get install slurm-wlm munge failed"
}

start_munge() {
  if munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi   # a munged already answers
  # Debian's postinst normally creates the key; make one if it did not (munged refuses to start without).
  if [ ! -s /etc/munge/munge.key ]; then
    say "creating /etc/munge/munge.key"
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
    chown munge:munge /etc/munge /etc/munge/munge.key; chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key
  fi
  # No systemd here, so nobody made munged's runtime and log directories; it checks their owners.
  install -d -o munge -g munge -m 755 /run/munge
  install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge
  runuser -u munge -- munged || die "munged did not start (see /var/log/munge/munged.log)"
  touch "$dir/munged.ours"   # so `down` stops only a munged that we started
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && return 0; sleep 0.1; done
  die "munged does not answer (see /var/log/munge/munged.log)"
}

write_conf() {
  local cpus mem
  cpus=$(getconf _NPROCESSORS_ONLN)   # not nproc: it follows OMP_NUM_THREADS
  # RealMemory above what slurmd measures would drain the node; stay 10% under MemTotal.
  mem=$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
  cat >"$conf.tmp" <<EOF
# Written by scripts/slurm-local.sh: a single-node test cluster.
ClusterName=wavel-local
SlurmctldHost=localhost(127.0.0.1)   # an address: a minimal chroot may not resolve "localhost"
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# A requeued job may start again only after the credential lifetime (default 120 s); 10 s keeps
# checkpoint/requeue tests short.
AuthInfo=cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# No cgroups in a container: track processes by /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# No accounting daemon.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Cores are the consumable; memory is not, so jobs without --mem do not each claim the whole node.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Debian's Open MPI starts under srun only through PMIx (pmi2 and none fail).
MpiDefault=pmix
ReturnToService=2
MailProg=/bin/true
# Look at pending jobs every second (defaults 60 s and 30 s), so a requeued job starts soon after it may.
SchedulerParameters=sched_interval=1,bf_interval=1
# Keep finished jobs visible to scontrol for 5 minutes (the test polls them).
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  mv "$conf.tmp" "$conf"
  # slurmd 22.05 always loads a cgroup plugin, and its autodetection fails where /sys/fs/cgroup is
  # not mounted (a chroot). Name cgroup v1 at a private, empty mount point: with proctrack/linuxproc
  # and task/none nothing is ever created there.
  mkdir -p "$dir/cgroup"
  cat >"$dir/cgroup.conf" <<EOF
CgroupPlugin=cgroup/v1
CgroupMountpoint=$dir/cgroup
CgroupAutomount=no
EOF
}

node_state() { sinfo -h -N -o '%T' 2>/dev/null | head -1; }

up() {
  [ "$(id -u)" -eq 0 ] || skip "must run as root (slurmd and munged need it)"
  install_packages
  mkdir -p "$dir/state" "$dir/spool"
  if alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid"; then
    case $(node_state) in idle|mixed|allocated) say "already up"; echo "export SLURM_CONF=$conf"; return 0 ;; esac
  fi
  start_munge
  # Rewrite the config only while no daemon uses it.
  alive "$dir/slurmctld.pid" || alive "$dir/slurmd.pid" || write_conf
  # -i: start even if the state files are stale or unreadable (this cluster keeps nothing of value).
  alive "$dir/slurmctld.pid" || slurmctld -i || die "slurmctld did not start; $(tail -5 "$dir/slurmctld.log" 2>/dev/null)"
  alive "$dir/slurmd.pid" || slurmd -N localhost || die "slurmd did not start; $(tail -5 "$dir/slurmd.log" 2>/dev/null)"
  local t0=$SECONDS state=
  while [ $((SECONDS - t0)) -lt "$timeout_s" ]; do
    state=$(node_state)
    [ "$state" = idle ] && { say "up: node localhost idle, $(getconf _NPROCESSORS_ONLN) CPUs, partition local"; echo "export SLURM_CONF=$conf"; return 0; }
    sleep 0.2
  done
  echo "--- slurmctld.log" >&2; tail -20 "$dir/slurmctld.log" >&2 || true
  echo "--- slurmd.log" >&2; tail -20 "$dir/slurmd.log" >&2 || true
  die "node not idle after ${timeout_s}s (state: '${state:-no answer}'); logs above, stop with: $0 down"
}

# stop NAME PIDFILE: TERM, wait up to 10 s, then KILL.
stop() {
  alive "$2" || { rm -f "$2"; return 0; }
  local pid; pid=$(cat "$2")
  kill "$pid"
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || { say "stopped $1 ($pid)"; rm -f "$2"; return 0; }; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true; say "killed $1 ($pid)"; rm -f "$2"
}

down() {
  [ "$(id -u)" -eq 0 ] || skip "must run as root"
  stop slurmd "$dir/slurmd.pid"
  stop slurmctld "$dir/slurmctld.pid"
  if [ -e "$dir/munged.ours" ]; then stop munged /run/munge/munged.pid; rm -f "$dir/munged.ours"; fi
  say "down"
}

status() {
  local rc=0
  for d in slurmctld slurmd; do
    if alive "$dir/$d.pid"; then say "$d running (pid $(cat "$dir/$d.pid"))"; else say "$d not running"; rc=3; fi
  done
  [ $rc = 0 ] && sinfo -N -l
  [ $rc = 0 ] && echo "export SLURM_CONF=$conf"
  return $rc
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) status ;;
  *) echo "usage: $0 up|down|status   (exit 77: cannot run here; status exits 3 when down)" >&2; exit 64 ;;
esac
