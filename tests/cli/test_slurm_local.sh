#!/usr/bin/env bash
# wavel-dse under a real single-node Slurm (scripts/slurm-local.sh) gives the same tables as mpirun:
#   1. srun -n 2 --mpi=pmix on configs/tiny.yaml;
#   2. a 2-task job array through slurm/sweep.sbatch, merged with scripts/merge_results;
#   3. slurm/run.sbatch's checkpoint/requeue logic, with a stand-in executable that follows the
#      contract (SIGUSR1 -> checkpoint.wckp, exit 75; --resume continues);
#   4. the same with the real executable on configs/quickstart.yaml, when it has --resume.
# Usage: test_slurm_local.sh EXE SRC_DIR TMP_DIR MPIEXEC. Needs root; exit 77 = skipped.
# Stops the cluster at exit unless it was already up when the test started.
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (starts munged, slurmctld and slurmd)"; exit 77; }
exe=$(realpath "$exe"); src=$(realpath "$src")
rm -rf "$tmp"; mkdir -p "$tmp"; tmp=$(realpath "$tmp")
cd "$tmp" || exit 1   # sbatch jobs start in the submit directory
slurm=$src/scripts/slurm-local.sh

was_up=0
"$slurm" status >/dev/null 2>&1 && was_up=1
[ $was_up = 1 ] || trap '"$slurm" down >/dev/null' EXIT
up=$("$slurm" up 2>&1); rc=$?
echo "$up"
[ $rc = 77 ] && { echo "SKIP: local Slurm cannot run here"; exit 77; }
[ $rc = 0 ] || { echo "FAIL: scripts/slurm-local.sh up (exit $rc)"; exit 1; }
eval "$(grep '^export SLURM_CONF=' <<<"$up")"
export OMP_NUM_THREADS=1 OMP_PROC_BIND=false

fail=0
t0=$SECONDS
say() { echo "[$((SECONDS - t0))s] $*"; }

# wait_job JOBID SECONDS: poll until every task of the job has left the queue (scontrol is faster
# than sbatch --wait); on timeout cancel it. Prints the final states, one per task.
wait_job() {
  local states end=$((SECONDS + $2))
  while :; do
    states=$(scontrol show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 | sort -u | tr '\n' ' ')
    case "$states" in *PENDING*|*RUNNING*|*CONFIGURING*|*COMPLETING*|*REQUEUE*|*SUSPENDED*|"") ;; *) echo "$states"; return 0 ;; esac
    [ $SECONDS -ge $end ] && { scancel "$1"; echo "TIMEOUT($states)"; return 1; }
    sleep 0.2
  done
}

# tables FILE: the deterministic tables as h5dump prints them (not the root group's provenance
# attributes, which hold the rank count, job id and time, nor /search_stats and /rank_stats, which hold timing and work counters).
tables() {
  for g in settings front schedules sim_pairs sim_op_pairs; do h5dump -g /$g "$1"; done | grep -v '^HDF5 "'
}
# same_tables NAME A B: A's and B's tables are identical.
same_tables() {
  if cmp -s "$2" "$3"; then return 0; fi
  echo "FAIL: $1: tables differ from mpirun's"; diff "$2" "$3" | head -20; fail=1
}
attr() { h5dump -a "/$2" "$1" 2>/dev/null | sed -n 's/^ *(0): //p' | tr -d '"'; }

# Reference: mpirun, 2 ranks.
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 "$mpiexec" -n 2 --oversubscribe --bind-to none \
  "$exe" "$src/configs/tiny.yaml" --output "$tmp/mpirun" >"$tmp/mpirun.log" 2>&1 \
  || { echo "FAIL: mpirun reference run"; cat "$tmp/mpirun.log"; exit 1; }
tables "$tmp/mpirun/results.h5" >"$tmp/mpirun.dump"
say "mpirun reference done"

# 1. srun -n 2 --mpi=pmix: one MPI world of 2 ranks (two singletons would record mpi_ranks 1).
if timeout 120 srun -n 2 --mpi=pmix "$exe" "$src/configs/tiny.yaml" --output "$tmp/srun" >"$tmp/srun.log" 2>&1; then
  tables "$tmp/srun/results.h5" >"$tmp/srun.dump"
  same_tables "srun -n 2" "$tmp/mpirun.dump" "$tmp/srun.dump"
  cmp -s "$tmp/mpirun/summary.csv" "$tmp/srun/summary.csv" || { echo "FAIL: srun: summary.csv differs"; fail=1; }
  [ "$(attr "$tmp/srun/results.h5" mpi_ranks)" = 2 ] || { echo "FAIL: srun: mpi_ranks is not 2"; fail=1; }
  [ -n "$(attr "$tmp/srun/results.h5" slurm_job_id)" ] || { echo "FAIL: srun: slurm_job_id not recorded"; fail=1; }
  say "srun -n 2 --mpi=pmix done"
else
  echo "FAIL: srun -n 2 --mpi=pmix (exit $?)"; cat "$tmp/srun.log"; fail=1
fi

# 2. Job array: 2 tasks of 1 CPU each (both run at once on 2 CPUs), one sweep slice each, merged.
jid=$(WAVEL_DSE=$exe sbatch --parsable --array=0-1 --cpus-per-task=1 --time=5 -o "$tmp/sweep-%a.out" \
        "$src/slurm/sweep.sbatch" "$src/configs/tiny.yaml" --output "$tmp/array") \
  || { echo "FAIL: sbatch slurm/sweep.sbatch"; exit 1; }
states=$(wait_job "$jid" 120)
if [ "$states" = "COMPLETED " ] && /usr/bin/python3 "$src/scripts/merge_results" "$tmp/merged.h5" "$tmp"/array/sweep-*/results.h5 >"$tmp/merge.log" 2>&1; then
  # Values, shapes, units, string types and column order must match exactly.
  tables "$tmp/merged.h5" >"$tmp/merged.dump"
  same_tables "job array + merge_results" "$tmp/mpirun.dump" "$tmp/merged.dump"
  # merge_results merges only the HDF5 file; the slices' CSVs, in index order under one header, are the whole CSV.
  { head -1 "$tmp/array/sweep-0/summary.csv"; for i in 0 1; do tail -n +2 "$tmp/array/sweep-$i/summary.csv"; done; } >"$tmp/array.csv"
  cmp -s "$tmp/mpirun/summary.csv" "$tmp/array.csv" || { echo "FAIL: job array: summary.csv rows differ"; fail=1; }
  say "job array (sweep.sbatch) + merge_results done"
else
  echo "FAIL: job array $jid ended ${states:-?}, or merge_results failed"; tail -n +1 "$tmp"/sweep-*.out "$tmp/merge.log" 2>/dev/null; fail=1
fi

# 3. run.sbatch's requeue logic, with a stand-in that keeps the checkpoint contract.
cat >"$tmp/mock-wavel-dse" <<'EOF'
#!/usr/bin/env bash
out=; dry=0; resume=0
while [ $# -gt 0 ]; do case $1 in --output) out=$2; shift ;; --dry-run) dry=1 ;; --resume) resume=1 ;; esac; shift; done
[ $dry = 1 ] && { printf 'output:\n  dir: %s\n  hdf5: true\n' "$out"; exit 0; }
mkdir -p "$out"; r=${SLURM_PROCID:-0}
echo "resume=$resume" >>"$out/calls.$r"
[ $resume = 1 ] && { [ -f "$out/checkpoint.wckp" ] || exit 66; echo done >"$out/done.$r"; exit 0; }
trap 'echo ckpt >"$out/ckpt.$r"; mv "$out/ckpt.$r" "$out/checkpoint.wckp"; exit 75' USR1 TERM
touch "$out/started.$r"
for _ in $(seq 600); do sleep 0.1; done
exit 0
EOF
chmod +x "$tmp/mock-wavel-dse"
jid=$(WAVEL_DSE=$tmp/mock-wavel-dse sbatch --parsable --time=5 -o "$tmp/requeue-mock.out" \
        "$src/slurm/run.sbatch" "$src/configs/tiny.yaml" --output "$tmp/requeue-mock") \
  || { echo "FAIL: sbatch slurm/run.sbatch"; exit 1; }
for _ in $(seq 300); do [ -e "$tmp/requeue-mock/started.0" ] && [ -e "$tmp/requeue-mock/started.1" ] && break; sleep 0.2; done
scancel --signal=USR1 "$jid"   # what --signal=USR1@120 does near the time limit: every rank, not the batch shell
states=$(wait_job "$jid" 120)
restarts=$(scontrol show job "$jid" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
if [ "$states" = "COMPLETED " ] && [ "$restarts" = 1 ] && grep -q -- '--resume' "$tmp/requeue-mock.out" \
   && [ -e "$tmp/requeue-mock/done.0" ] && [ -e "$tmp/requeue-mock/done.1" ]; then
  say "run.sbatch checkpoint -> requeue -> --resume (stand-in executable) done"
else
  echo "FAIL: run.sbatch requeue: job $jid ended ${states:-?} after ${restarts:-?} restarts"; cat "$tmp/requeue-mock.out"; fail=1
fi

# 4. The real executable through the same path, once it implements --resume: quickstart (about 25 s
# on 2 cores at 2 ranks) is signalled 3 s into its run; the resumed results must equal a whole run.
if "$exe" --help 2>&1 | grep -q -- '--resume'; then
  jid=$(WAVEL_DSE=$exe sbatch --parsable --time=10 -o "$tmp/requeue.out" \
          "$src/slurm/run.sbatch" "$src/configs/quickstart.yaml" --output "$tmp/requeue") \
    || { echo "FAIL: sbatch slurm/run.sbatch"; exit 1; }
  for _ in $(seq 300); do squeue -h -s -j "$jid" -o %i 2>/dev/null | grep -q "^$jid\.0$" && break; sleep 0.2; done
  sleep 3
  scancel --signal=USR1 "$jid"
  states=$(wait_job "$jid" 300)
  restarts=$(scontrol show job "$jid" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
  if [ "$states" = "COMPLETED " ]; then
    [ "$restarts" = 1 ] || echo "NOTE: the run was not requeued (restarts ${restarts:-?}); the signal came too late or too early"
    [ -e "$tmp/requeue/checkpoint.wckp" ] && echo "NOTE: checkpoint.wckp left behind after a finished run"
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 300 "$mpiexec" -n 2 --oversubscribe --bind-to none \
      "$exe" "$src/configs/quickstart.yaml" --output "$tmp/whole" >"$tmp/whole.log" 2>&1 \
      || { echo "FAIL: mpirun quickstart"; cat "$tmp/whole.log"; exit 1; }
    tables "$tmp/whole/results.h5" >"$tmp/whole.dump"; tables "$tmp/requeue/results.h5" >"$tmp/requeue.dump"
    same_tables "run.sbatch checkpoint + requeue + --resume" "$tmp/whole.dump" "$tmp/requeue.dump"
    cmp -s "$tmp/whole/summary.csv" "$tmp/requeue/summary.csv" || { echo "FAIL: resumed summary.csv differs"; fail=1; }
    say "run.sbatch checkpoint -> requeue -> --resume (wavel-dse, $restarts restart) done"
  else
    echo "FAIL: run.sbatch requeue with wavel-dse: job $jid ended ${states:-?}"; cat "$tmp/requeue.out"; fail=1
  fi
else
  echo "NOTE: $exe has no --resume yet: the real checkpoint/requeue path was not run"
fi

[ $fail = 0 ] && echo "ok: srun, job array + merge and run.sbatch requeue agree with mpirun"
exit $fail
