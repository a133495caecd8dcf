#!/usr/bin/env bash
# Checkpoint and restart: a run interrupted by SIGUSR1 (and one by SIGTERM) exits 75 with a
# checkpoint; resuming it on another rank count gives files identical to an uninterrupted run; a
# corrupt, foreign, garbage or missing checkpoint is refused with a clear error, never restarted.
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
rm -rf "$tmp"; mkdir -p "$tmp"
cfg="$src/configs/quickstart.yaml"
# The mechanics do not need the richest space: without the SRAM-derived root boundaries each run is
# about 40 % shorter (CI time); every run below uses the same setting, so the config hashes agree.
lean=(--set search.sram_boundaries=false)
mpi() { "$mpiexec" --oversubscribe --bind-to none "$@"; }
fail=0
dump() { for g in settings front schedules sim_pairs; do h5dump -g /$g "$1/results.h5" | grep -v '^HDF5 "'; done; }

mpi -n 2 "$exe" "$cfg" "${lean[@]}" --output "$tmp/whole" >"$tmp/whole.log" 2>&1 || { echo "FAIL: uninterrupted run"; cat "$tmp/whole.log"; exit 1; }

# spool_has_record FILE: the spool holds a finished setting (a record after its header and checksum).
spool_has_record() {
  python3 -c 'import os,struct,sys; d=open(sys.argv[1],"rb").read(32); n=struct.unpack("<Q",d[16:24])[0] if len(d)>=24 else 1<<62; sys.exit(0 if os.path.getsize(sys.argv[1])>24+n+8 else 1)' "$1" 2>/dev/null
}
# interrupt NAME SIGNAL TARGET: start a 2-rank run that checkpoints every second, signal it once a
# periodic checkpoint exists and a setting has finished (however slow the machine: CTest runs other
# tests beside this one), expect exit 75 and a checkpoint.
interrupt() {
  local name=$1 sig=$2 target=$3
  "$mpiexec" --oversubscribe --bind-to none -n 2 "$exe" "$cfg" "${lean[@]}" --output "$tmp/$name" --set search.checkpoint_interval_s=1 \
    --set output.progress=always >"$tmp/$name.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 1200); do
    [ -f "$tmp/$name/checkpoint.wckp" ] && spool_has_record "$tmp/$name/settings.spool" && break
    sleep 0.05
  done
  if [ "$target" = ranks ]; then pkill -"$sig" -P "$pid"; else kill -"$sig" "$pid"; fi
  wait "$pid"; local rc=$?
  [ $rc = 75 ] || { echo "FAIL: $name: exit $rc after SIG$sig, expected 75"; tail -20 "$tmp/$name.log"; fail=1; return; }
  grep -q "checkpoint written" "$tmp/$name.log" || { echo "FAIL: $name: no message naming the checkpoint"; fail=1; }
  grep -q "error: stopped by" "$tmp/$name.log" && { echo "FAIL: $name: a planned stop is labelled error"; fail=1; }
  [ -f "$tmp/$name/results.h5" ] && { echo "FAIL: $name: results.h5 written by an interrupted run"; fail=1; }
  cp "$tmp/$name/checkpoint.wckp" "$tmp/$name.wckp"
  cp "$tmp/$name/settings.spool" "$tmp/$name.spool" || { echo "FAIL: $name: no spool beside the checkpoint"; fail=1; }
}
interrupt usr1 USR1 mpirun     # mpirun forwards SIGUSR1 to every rank
interrupt term TERM ranks      # Slurm sends SIGTERM to every task at the time limit (mpirun would kill them)

# Resume on other rank counts: identical tables to the uninterrupted run.
for run in "usr1 1" "term 4"; do
  set -- $run
  mpi -n "$2" "$exe" "$cfg" "${lean[@]}" --output "$tmp/$1" --resume >"$tmp/$1.resume.log" 2>&1 \
    || { echo "FAIL: resume $1 on $2 ranks"; cat "$tmp/$1.resume.log"; fail=1; continue; }
  cmp -s <(dump "$tmp/whole") <(dump "$tmp/$1") || { echo "FAIL: $1 resumed on $2 ranks differs from the uninterrupted run"; fail=1; }
  cmp -s "$tmp/whole/summary.csv" "$tmp/$1/summary.csv" || { echo "FAIL: $1: summary.csv differs"; fail=1; }
  grep -q "wavel-dse: resumed from '.*': [0-9]* of [0-9]* settings finished, [0-9]* more tasks done" "$tmp/$1.resume.log" || { echo "FAIL: $1: --resume did not say what it restored"; fail=1; }
  [ -f "$tmp/$1/checkpoint.wckp" ] && { echo "FAIL: $1: checkpoint left behind after a complete run"; fail=1; }
  [ -f "$tmp/$1/settings.spool" ] && { echo "FAIL: $1: spool left behind after a complete run"; fail=1; }
done

# expect NAME CODE PATTERN ARGS...: a resume that must fail with CODE and a message matching PATTERN.
expect() {
  local name=$1 code=$2 pattern=$3; shift 3
  "$exe" "$cfg" "${lean[@]}" --output "$tmp/$name" --resume "$@" >"$tmp/$name.log" 2>&1; local rc=$?
  [ $rc = "$code" ] || { echo "FAIL: $name: exit $rc, expected $code"; cat "$tmp/$name.log"; fail=1; return; }
  grep -q "$pattern" "$tmp/$name.log" || { echo "FAIL: $name: message lacks '$pattern'"; cat "$tmp/$name.log"; fail=1; }
  [ -f "$tmp/$name/results.h5" ] && { echo "FAIL: $name: started over"; fail=1; }
}
mkdir -p "$tmp/corrupt" "$tmp/foreign" "$tmp/garbage" "$tmp/missing" "$tmp/truncated" "$tmp/nospool" "$tmp/badspool"
for d in corrupt foreign garbage truncated badspool; do cp "$tmp/usr1.spool" "$tmp/$d/settings.spool"; done
cp "$tmp/usr1.wckp" "$tmp/corrupt/checkpoint.wckp"
size=$(stat -c %s "$tmp/corrupt/checkpoint.wckp")
printf 'X' | dd of="$tmp/corrupt/checkpoint.wckp" bs=1 seek=$((size / 2)) conv=notrunc status=none
expect corrupt 65 "corrupt"
cp "$tmp/usr1.wckp" "$tmp/foreign/checkpoint.wckp"
expect foreign 65 "another config" --set search.max_cut_depth=2
echo "not a checkpoint" >"$tmp/garbage/checkpoint.wckp"
expect garbage 65 "not a wavel-dse checkpoint"
head -c 100 "$tmp/usr1.wckp" >"$tmp/truncated/checkpoint.wckp"
expect truncated 65 "checkpoint"
expect missing 66 "neither a checkpoint"
# The finished settings' results lie in the spool beside the checkpoint: missing, or altered, it is refused.
cp "$tmp/usr1.wckp" "$tmp/nospool/checkpoint.wckp"
expect nospool 66 "there is no spool file '.*nospool/settings.spool'"
cp "$tmp/usr1.wckp" "$tmp/badspool/checkpoint.wckp"
# A byte of the first record's result altered (magic, header length, header, its checksum, then
# the record's task, size and hash): refused by the spool alone.
first=$(python3 -c 'import struct,sys; d=open(sys.argv[1],"rb").read(); n=struct.unpack("<Q",d[16:24])[0]; print(24+n+8+24+5)' "$tmp/usr1.spool")
if [ "$(stat -c %s "$tmp/badspool/settings.spool")" -gt $((first + 100)) ]; then
  printf 'X' | dd of="$tmp/badspool/settings.spool" bs=1 seek="$first" conv=notrunc status=none
  # Its last record is a torn append to the spool, cut off; the checkpoint then names a result that is gone.
  expect badspool 65 "badspool/settings.spool'\\(: the result of task [0-9]* is corrupt\\| does not hold intact\\)"
else
  echo "FAIL: the SIGUSR1 checkpoint has no finished setting in its spool"; fail=1
fi
# The spool alone resumes (no checkpoint: the periodic one was not due, or it could not be written):
# its finished settings are kept, the others run again, and the results are those of the whole run.
mkdir -p "$tmp/spoolonly"
cp "$tmp/usr1.spool" "$tmp/spoolonly/settings.spool"
"$exe" "$cfg" "${lean[@]}" --output "$tmp/spoolonly" --resume >"$tmp/spoolonly.log" 2>&1 \
  || { echo "FAIL: resume from the spool alone"; cat "$tmp/spoolonly.log"; fail=1; }
grep -q "resumed from '.*settings.spool': [1-9][0-9]* of [0-9]* settings finished (no checkpoint" "$tmp/spoolonly.log" \
  || { echo "FAIL: spoolonly: --resume did not say it resumed from the spool"; cat "$tmp/spoolonly.log"; fail=1; }
cmp -s "$tmp/whole/summary.csv" "$tmp/spoolonly/summary.csv" || { echo "FAIL: spoolonly: summary.csv differs"; fail=1; }

# A stop request in the end phase (after the last setting, while the results are written): exit 75,
# no results, the spool kept; --resume writes the same results without searching again. Then an
# input changed in place (the model's config.json, the params file) or another build: refused, named.
tiny_src="$src/configs/tiny.yaml"
mkdir -p "$tmp/inputs/models/tiny-llama" "$tmp/inputs/params"
cp "$src/configs/models/tiny-llama/config.json" "$tmp/inputs/models/tiny-llama/"
cp "$src/configs/params/wse3.yaml" "$tmp/inputs/params/"
cp "$tiny_src" "$tmp/inputs/tiny.yaml"
"$exe" "$tmp/inputs/tiny.yaml" --output "$tmp/tinywhole" >/dev/null 2>&1 || { echo "FAIL: tiny run"; fail=1; }
WAVEL_TEST_SIGNAL_END_PHASE=1 "$exe" "$tmp/inputs/tiny.yaml" --output "$tmp/endphase" >"$tmp/endphase.log" 2>&1; rc=$?
[ $rc = 75 ] || { echo "FAIL: endphase: exit $rc, expected 75"; cat "$tmp/endphase.log"; fail=1; }
grep -q "stopped by SIGTERM while .*rerun with --resume" "$tmp/endphase.log" || { echo "FAIL: endphase: message"; cat "$tmp/endphase.log"; fail=1; }
[ -e "$tmp/endphase/results.h5" ] && { echo "FAIL: endphase: results.h5 written"; fail=1; }
[ -s "$tmp/endphase/settings.spool" ] || { echo "FAIL: endphase: the spool was not kept"; fail=1; }
cp "$tmp/endphase/settings.spool" "$tmp/endphase.spool"
sed -i 's/"intermediate_size": *[0-9]*/"intermediate_size": 768/' "$tmp/inputs/models/tiny-llama/config.json"
"$exe" "$tmp/inputs/tiny.yaml" --output "$tmp/endphase" --resume >"$tmp/changed.log" 2>&1; rc=$?
[ $rc = 65 ] || { echo "FAIL: changed model: exit $rc, expected 65"; cat "$tmp/changed.log"; fail=1; }
grep -q "model file '.*tiny-llama/config.json' changed since" "$tmp/changed.log" || { echo "FAIL: changed model: not named"; cat "$tmp/changed.log"; fail=1; }
cp "$src/configs/models/tiny-llama/config.json" "$tmp/inputs/models/tiny-llama/"
echo "# edited" >>"$tmp/inputs/params/wse3.yaml"
"$exe" "$tmp/inputs/tiny.yaml" --output "$tmp/endphase" --resume >"$tmp/changed.log" 2>&1; rc=$?
[ $rc = 65 ] || { echo "FAIL: changed params: exit $rc, expected 65"; cat "$tmp/changed.log"; fail=1; }
grep -q "params file '.*wse3.yaml' changed since" "$tmp/changed.log" || { echo "FAIL: changed params: not named"; cat "$tmp/changed.log"; fail=1; }
cp "$src/configs/params/wse3.yaml" "$tmp/inputs/params/"
cp "$exe" "$tmp/other-build"; printf 'x' >>"$tmp/other-build"   # the same code, another executable
"$tmp/other-build" "$tmp/inputs/tiny.yaml" --output "$tmp/endphase" --resume >"$tmp/changed.log" 2>&1; rc=$?
[ $rc = 65 ] || { echo "FAIL: other build: exit $rc, expected 65"; cat "$tmp/changed.log"; fail=1; }
grep -q "written by another build" "$tmp/changed.log" || { echo "FAIL: other build: not named"; cat "$tmp/changed.log"; fail=1; }
cmp -s "$tmp/endphase.spool" "$tmp/endphase/settings.spool" || { echo "FAIL: a refused resume changed the spool"; fail=1; }
"$exe" "$tmp/inputs/tiny.yaml" --output "$tmp/endphase" --resume >"$tmp/endphase.resume.log" 2>&1 \
  || { echo "FAIL: endphase: resume"; cat "$tmp/endphase.resume.log"; fail=1; }
grep -q "settings 0/\|: 2 of 2 settings finished" "$tmp/endphase.resume.log" || { echo "FAIL: endphase: resume did not restore both settings"; cat "$tmp/endphase.resume.log"; fail=1; }
cmp -s "$tmp/tinywhole/summary.csv" "$tmp/endphase/summary.csv" || { echo "FAIL: endphase: resumed summary.csv differs"; fail=1; }
cmp -s <(dump "$tmp/tinywhole") <(dump "$tmp/endphase") || { echo "FAIL: endphase: resumed results differ"; fail=1; }
# A crafted checkpoint (checksum recomputed) whose schedule leaves the grid: refused by the file's name.
mkdir -p "$tmp/crafted"
cp "$tmp/usr1.spool" "$tmp/crafted/settings.spool"
python3 - "$tmp/usr1.wckp" "$tmp/crafted/checkpoint.wckp" <<'PY'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read()[:-8])
at = data.find(b"\nregion 0 0 0 755 1174")
assert at > 0, "no whole-grid region in the checkpoint"
data[at:at + 22] = b"\nregion 0 0 0 999 1174"
h = 0xcbf29ce484222325
for b in data:
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open(sys.argv[2], "wb").write(bytes(data) + struct.pack("<Q", h))
PY
expect crafted 65 "checkpoint '.*crafted/checkpoint.wckp' holds a corrupt result for task"
# A failed --resume touches nothing: the finished results of an earlier run stay where they were.
mkdir -p "$tmp/kept"
cp "$tmp/whole/results.h5" "$tmp/kept/results.h5"
cp "$tmp/whole/summary.csv" "$tmp/kept/summary.csv"
"$exe" "$cfg" "${lean[@]}" --output "$tmp/kept" --resume >"$tmp/kept.log" 2>&1; rc=$?
[ $rc = 66 ] || { echo "FAIL: kept: exit $rc, expected 66"; cat "$tmp/kept.log"; fail=1; }
cmp -s "$tmp/whole/results.h5" "$tmp/kept/results.h5" && cmp -s "$tmp/whole/summary.csv" "$tmp/kept/summary.csv" \
  || { echo "FAIL: a --resume without a checkpoint moved the finished results"; ls "$tmp/kept"; fail=1; }

# SIGTERM inside a search piece that would run for minutes (cut_step_pes 1): honoured within a few
# seconds, with a checkpoint (issue 24, item 2). Slurm's grace before SIGKILL is 30 s.
"$exe" "$cfg" --set search.cut_step_pes=1 --output "$tmp/longpiece" >"$tmp/longpiece.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -s "$tmp/longpiece/.wavel-dse.lock" ] && break; sleep 0.05; done
sleep 3
kill -TERM "$pid"
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then
  echo "FAIL: longpiece: still running 10 s after SIGTERM"; kill -9 "$pid"; fail=1
else
  wait "$pid"; rc=$?
  [ $rc = 75 ] || { echo "FAIL: longpiece: exit $rc after SIGTERM, expected 75"; tail -5 "$tmp/longpiece.log"; fail=1; }
  [ -s "$tmp/longpiece/checkpoint.wckp" ] || { echo "FAIL: longpiece: no checkpoint"; fail=1; }
fi

[ $fail = 0 ] && echo "ok: checkpoint on SIGUSR1 and SIGTERM, resume on 1 and 4 ranks identical, bad checkpoints refused"
exit $fail
