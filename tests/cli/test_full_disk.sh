#!/usr/bin/env bash
# A full disk (issue 24, item 1), as root on a small tmpfs: every write path of run (1 and 2 ranks),
# validate and calibrate exits 0 or 73 within seconds, never crashes or spins; nothing half-written
# (no .partial, no .reserve), results.h5 and summary.csv both or neither, and no empty lock file.
# Then SIGUSR1 on a full disk: no checkpoint claimed that does not exist. Skips (77) unless root.
set -u
exe=$(realpath "$1"); src=$2; tmp=$3; mpiexec=${4:-mpirun}
[ "$(id -u)" = 0 ] || { echo "skip: full-disk checks need root and tmpfs"; exit 77; }
rm -rf "$tmp"; mkdir -p "$tmp"
mnt="$tmp/disk"; mkdir -p "$mnt"
fail=0
no() { echo "FAIL: $*"; fail=1; }
trap 'umount "$mnt" 2>/dev/null' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false

# fresh_disk FREE_BYTES: an 8 MiB tmpfs with FREE_BYTES left.
fresh_disk() {
  umount "$mnt" 2>/dev/null
  mount -t tmpfs -o size=8m tmpfs "$mnt" || { echo "skip: cannot mount tmpfs"; exit 77; }
  local avail; avail=$(df -B1 --output=avail "$mnt" | tail -1)
  [ "$avail" -gt "$1" ] && head -c $((avail - $1)) /dev/zero >"$mnt/filler" 2>/dev/null
  mkdir -p "$mnt/out"
}

# check LABEL RC FILES...: the exit code, nothing half-written, and the set complete or absent.
hdf5_failures=0
check() {
  local label=$1 rc=$2; shift 2
  case $rc in
    0|73) ;;
    124) no "$label: still running after 30 s (spinning?)"; return ;;
    *) no "$label exited $rc, expected 0 or 73"; cat "$tmp/err"; return ;;
  esac
  ls -A "$mnt/out" | grep -qE '\.partial|\.reserve' && no "$label left: $(ls -A "$mnt/out" | tr '\n' ' ')"
  local present=0 f
  for f in "$@"; do [ -e "$mnt/out/$f" ] && present=$((present + 1)); done
  [ $present = 0 ] || [ $present = $# ] || no "$label: only $present of $# result files: $(ls -A "$mnt/out" | tr '\n' ' ')"
  [ $rc = 0 ] && [ $present != $# ] && no "$label exited 0 without its results"
  [ $rc = 73 ] && [ $present = $# ] && no "$label exited 73 but published its results"
  [ -e "$mnt/out/.wavel-dse.lock" ] && [ ! -s "$mnt/out/.wavel-dse.lock" ] && no "$label left an empty lock file"
  grep -qE 'H5Dwrite failed|H5Fflush failed|H5.*close failed' "$tmp/err" && hdf5_failures=$((hdf5_failures + 1))
  grep -q "Segmentation\|Signal:" "$tmp/err" && no "$label crashed: $(head -3 "$tmp/err")"
  echo "ok: $label -> $rc"
}

# Free space from none to enough, in steps that cross the lock, the CSV, the headroom reservation,
# HDF5's data writes and its metadata flush (the tiny results need about 4.7 MiB with the headroom).
frees="0 4096 65536"
for f in $(seq 4194304 65536 4980736); do frees="$frees $f"; done
"$exe" "$src/configs/tiny.yaml" -o "$tmp/ref" >/dev/null 2>&1 || no "tiny reference run"
resumed=0
for np in 1 2; do
  for free in $frees; do
    fresh_disk "$free"
    if [ $np = 1 ]; then
      timeout 30 "$exe" "$src/configs/tiny.yaml" -o "$mnt/out" >"$tmp/out" 2>"$tmp/err"; rc=$?
    else
      timeout 30 "$mpiexec" -np 2 --bind-to none "$exe" "$src/configs/tiny.yaml" -o "$mnt/out" >"$tmp/out" 2>"$tmp/err"; rc=$?
    fi
    check "run, $np rank(s), $free bytes free" $rc results.h5 summary.csv
    # A run that failed with its settings spooled (the disk filled while results.h5 was written) is
    # not lost: with space again, --resume writes the same results without searching again.
    if [ $rc = 73 ] && [ -s "$mnt/out/settings.spool" ]; then
      rm -f "$mnt/filler"
      timeout 30 "$exe" "$src/configs/tiny.yaml" -o "$mnt/out" --resume >"$tmp/out" 2>"$tmp/err"; rc=$?
      if [ $rc != 0 ]; then no "resume after a full disk ($np rank(s), $free bytes) exited $rc"; cat "$tmp/err"
      elif ! cmp -s "$tmp/ref/summary.csv" "$mnt/out/summary.csv"; then no "resume after a full disk: summary.csv differs"
      else resumed=$((resumed + 1)); fi
    fi
  done
done
[ $resumed -ge 2 ] || no "only $resumed full-disk failures left a resumable spool"
echo "ok: $resumed runs that failed on a full disk resumed to identical results"
[ $hdf5_failures -ge 2 ] || no "no run failed inside HDF5 ($hdf5_failures): the free-space steps miss that path"

for free in 0 4096 65536 4259840 4325376; do
  fresh_disk "$free"
  timeout 30 "$exe" validate "$src/tests/data/reference/waferllm_measured.yaml" \
    --params "$src/configs/params/wse2-waferllm.yaml" --output "$mnt/out" >"$tmp/out" 2>"$tmp/err"
  check "validate, $free bytes free" $? results.h5 validation.csv
  fresh_disk "$free"
  timeout 30 "$exe" calibrate "$src/tests/data/reference/wse3_kernels/shift.yaml" --output "$mnt/out" >"$tmp/out" 2>"$tmp/err"
  check "calibrate kernels, $free bytes free" $? results.h5 params.yaml kernel_validation.csv calibration.csv
done

# SIGUSR1 when the disk is full: no "checkpoint written" and no requeue code when there is none
# (whether the checkpoint itself or a setting's spool append, which it names, is the write that fails).
umount "$mnt" 2>/dev/null
mount -t tmpfs -o size=150k tmpfs "$mnt"
"$exe" "$src/configs/quickstart.yaml" -o "$mnt/sig" >"$tmp/sig.log" 2>&1 &
pid=$!
# Fill the disk once the run holds its lock and has started its spool (its header is written at the
# start), so that the write that fails is the checkpoint's, not the run's set-up.
for _ in $(seq 1 200); do [ -s "$mnt/sig/.wavel-dse.lock" ] && [ -s "$mnt/sig/settings.spool" ] && break; sleep 0.05; done
dd if=/dev/zero of="$mnt/filler" bs=4k status=none 2>/dev/null
t0=$(date +%s); kill -USR1 "$pid"; wait "$pid"; rc=$?; echo "SIGUSR1 run stopped after $(( $(date +%s) - t0 )) s"
[ $rc = 73 ] || { no "SIGUSR1 on a full disk exited $rc, expected 73"; cat "$tmp/sig.log"; }
grep -q "no checkpoint was written" "$tmp/sig.log" || { no "SIGUSR1 on a full disk does not say the checkpoint failed"; cat "$tmp/sig.log"; }
grep -q "checkpoint written" "$tmp/sig.log" && no "SIGUSR1 on a full disk claims a checkpoint"
[ -e "$mnt/sig/checkpoint.wckp" ] && no "a checkpoint file appeared on a full disk"
exit $fail
