#!/usr/bin/env bash
# Runs the quickstart config at 1, 2 and 4 ranks (4 oversubscribed), with 2, 1 and 2 threads per rank:
# the tables and CSV must be identical byte for byte, and every rank must have done work.
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
for np in 1 2 4; do
  threads=$(( np == 2 ? 1 : 2 ))
  OMP_NUM_THREADS=$threads "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" "$src/configs/quickstart.yaml" --output "$tmp/np$np" \
    >"$tmp/np$np.log" 2>&1 || { echo "FAIL: run at $np ranks"; cat "$tmp/np$np.log"; exit 1; }
  # Everything but the root group's provenance attributes (rank count, time).
  for g in settings front schedules sim_pairs; do h5dump -g /$g "$tmp/np$np/results.h5"; done | grep -v '^HDF5 "' >"$tmp/np$np.dump"
  # Dynamic balancing: every rank ran tasks (a static split could leave one idle).
  h5dump -d /rank_stats/tasks "$tmp/np$np/results.h5" | grep -q "(0): $(seq -s ', ' 1 $np | sed 's/[0-9]\+/[1-9][0-9]*/g')" \
    || { echo "FAIL: a rank ran no task at $np ranks"; h5dump -d /rank_stats/tasks "$tmp/np$np/results.h5"; fail=1; }
done
for np in 2 4; do
  cmp -s "$tmp/np1/summary.csv" "$tmp/np$np/summary.csv" || { echo "FAIL: summary.csv differs at $np ranks"; fail=1; }
  cmp -s "$tmp/np1.dump" "$tmp/np$np.dump" || { echo "FAIL: /settings, /front, /schedules or /sim_pairs differ at $np ranks"; diff "$tmp/np1.dump" "$tmp/np$np.dump" | head; fail=1; }
done
# calibrate CONFIG.yaml spreads its simulations over the ranks: the same files at 1, 2 and 4 ranks.
for np in 1 2 4; do
  "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" calibrate "$src/configs/tiny.yaml" --output "$tmp/cal$np" \
    >"$tmp/cal$np.log" 2>"$tmp/cal$np.err" || { echo "FAIL: calibrate at $np ranks"; cat "$tmp/cal$np.log" "$tmp/cal$np.err"; exit 1; }
  h5dump "$tmp/cal$np/results.h5" | grep -v '^HDF5 "' >"$tmp/cal$np.dump"
  grep -v '^written:' "$tmp/cal$np.log" >"$tmp/cal$np.out"
done
for np in 2 4; do
  for f in params.yaml sim_pairs.csv sim_schedules.csv sim_agreement.csv calibration.csv; do
    cmp -s "$tmp/cal1/$f" "$tmp/cal$np/$f" || { echo "FAIL: calibrate's $f differs at $np ranks"; fail=1; }
  done
  cmp -s "$tmp/cal1.dump" "$tmp/cal$np.dump" || { echo "FAIL: calibrate's results.h5 differs at $np ranks"; diff "$tmp/cal1.dump" "$tmp/cal$np.dump" | head; fail=1; }
  cmp -s "$tmp/cal1.out" "$tmp/cal$np.out" || { echo "FAIL: calibrate's report differs at $np ranks"; diff "$tmp/cal1.out" "$tmp/cal$np.out" | head; fail=1; }
done
grep -q "mpi_ranks" <(h5dump -a /mpi_ranks "$tmp/np4/results.h5") || { echo "FAIL: no mpi_ranks attribute"; fail=1; }
[ $fail = 0 ] && echo "ok: identical results (run and calibrate) at 1, 2 and 4 ranks"
exit $fail
