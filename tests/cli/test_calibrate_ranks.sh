#!/usr/bin/env bash
# calibrate CONFIG.yaml spreads its simulations over the MPI ranks: the same files, HDF5 content and
# report at 1, 2 and 4 ranks (4 oversubscribed).
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
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
# calibrate KERNEL.yaml... likewise (every rank fits the same points; rank 0 writes). MeshGEMM is left
# out: its simulator fit takes most of the command's time, and test_cli.sh runs all three.
k="$src/tests/data/reference/wse3_kernels"
for np in 1 2; do
  "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" calibrate "$k/meshgemv.yaml" "$k/shift.yaml" \
    --output "$tmp/kal$np" >"$tmp/kal$np.out" 2>"$tmp/kal$np.err" || { echo "FAIL: kernel calibrate at $np ranks"; cat "$tmp/kal$np.err"; exit 1; }
done
for f in params.yaml kernel_validation.csv calibration.csv; do
  cmp -s "$tmp/kal1/$f" "$tmp/kal2/$f" || { echo "FAIL: kernel calibrate's $f differs at 2 ranks"; fail=1; }
done
cmp -s "$tmp/kal1.out" "$tmp/kal2.out" || { echo "FAIL: kernel calibrate's report differs at 2 ranks"; fail=1; }
[ $fail = 0 ] && echo "ok: calibrate gives identical results at 1, 2 and 4 ranks"
exit $fail
