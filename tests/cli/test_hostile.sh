#!/usr/bin/env bash
# Hostile input and unlucky operators (issue 15): the documented exit code, no crash, nothing on
# stdout but the data, an exclusive output directory and no stale results (a full disk:
# test_full_disk.sh).
set -u
exe=$(realpath "$1"); src=$2; tmp=$3
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
tiny="$src/configs/tiny.yaml"
no() { echo "FAIL: $*"; fail=1; }
# expect CODE PATTERN ARGS...: exit code and a message fragment (stdout or stderr).
expect() {
  local want=$1 pattern=$2; shift 2
  timeout 60 "$exe" "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then no "wavel-dse $* exited $got, expected $want"; cat "$tmp/err"; return; fi
  if [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$tmp/out" "$tmp/err"; then
    no "wavel-dse $*: output lacks '$pattern'"; cat "$tmp/out" "$tmp/err"; return; fi
  if grep -qE 'std::|vector::|basic_string|bad_alloc' "$tmp/err"; then no "wavel-dse $*: C++ library text"; cat "$tmp/err"; fi
  echo "ok: wavel-dse $* -> $got"
}

# YAML aliases: a self-reference (file and --set) and an alias bomb, each refused at once.
printf 'workloads:\n  models: [llama3-8b]\nwafer: &a [*a]\n' >"$tmp/self.yaml"
expect 78 "self.yaml:3:" --dry-run "$tmp/self.yaml"
expect 78 "recursive YAML alias" --dry-run "$tiny" --set 'wafer=&a [*a]'
{ echo 'l0: &l0 [x, x, x, x, x, x, x, x, x, x]'
  for i in 1 2 3 4 5 6 7 8; do p="*l$((i - 1))"; echo "l$i: &l$i [$p, $p, $p, $p, $p, $p, $p, $p, $p, $p]"; done
} >"$tmp/bomb.yaml"
expect 78 "too many YAML nodes" --dry-run "$tmp/bomb.yaml"

# Bounds: a HF config.json with 2^31 layers, a MeshIR op with a billion rounds.
mkdir -p "$tmp/huge"
sed 's/"num_hidden_layers": [0-9]*/"num_hidden_layers": 2147483648/' "$src/tests/data/hf/llama3-8b/config.json" >"$tmp/huge/config.json"
expect 78 "num_hidden_layers: is 2147483648; the supported maximum is 1024" --dry-run "$tiny" --set "workloads.models=[$tmp/huge]"

# A 14 MB config.json of 7 M values (under the 16 MiB cap): refused from its text at once, in a
# fraction of the memory yaml-cpp's tree would take (3.4 GB): run under a 1 GiB address-space limit.
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['junk']=[0]*7000000; open(sys.argv[2],'w').write(json.dumps(d,separators=(',',':')))" \
  "$src/tests/data/hf/llama3-8b/config.json" "$tmp/huge/config.json"
# (ASan reserves terabytes of address space for its shadow: under it, no limit.)
limit=1048576; [ -n "${ASAN_OPTIONS:-}" ] && limit=unlimited
(ulimit -v "$limit"; expect 78 "more than 200000 JSON values" --dry-run "$tiny" --set "workloads.models=[$tmp/huge]"; exit $fail) || fail=1

# Kokkos is quiet: stdout of --help and --dry-run is only the data, even with OMP_PROC_BIND unset.
env -u OMP_PROC_BIND "$exe" --help >"$tmp/help.txt" 2>&1
grep -q "OMP_PROC_BIND environment" "$tmp/help.txt" && no "--help prints Kokkos warnings"
grep -qF "calibrate CONFIG.yaml" "$tmp/help.txt" || no "--help lacks 'calibrate CONFIG.yaml'"
grep -qF "front.N" "$tmp/help.txt" || no "--help lacks the front.N schedule names"
env -u OMP_PROC_BIND "$exe" --dry-run "$tiny" >"$tmp/dry.yaml" 2>"$tmp/dry.err" || no "--dry-run failed"
grep -q "OMP_PROC_BIND environment" "$tmp/dry.yaml" && no "--dry-run prints Kokkos warnings on stdout"
# The dry run's whole stdout is valid input: run it from elsewhere and get the same settings.
(cd "$tmp" && "$exe" --dry-run dry.yaml >dry2.yaml 2>/dev/null) || no "the --dry-run output is not a valid config"
cmp -s <(grep -v '^# resolved' "$tmp/dry.yaml") <(grep -v '^# resolved' "$tmp/dry2.yaml") || no "fed-back dry run differs"

# A real run, then show and check: stdout is exactly the schedule; check names its parameters on stderr.
# Under Slurm (stderr a file) the progress line is on by default.
env -u OMP_PROC_BIND SLURM_JOB_ID=4242 "$exe" "$tiny" -o "$tmp/run" >"$tmp/run.log" 2>"$tmp/run.err" \
  || { no "tiny run"; cat "$tmp/run.log" "$tmp/run.err"; }
grep -q "settings 2/2, tasks" "$tmp/run.err" || no "no progress line under Slurm"
grep -q "OMP_PROC_BIND environment" "$tmp/run.log" && no "a run prints Kokkos warnings on stdout"
env -u OMP_PROC_BIND "$exe" show "$tmp/run/results.h5" --setting 0 --schedule wavel >"$tmp/wavel.meshir" || no "show"
expect 0 "verified OK" check "$tmp/wavel.meshir"
grep -q "cost-model parameters: the schedule's own 'param' lines" "$tmp/err" || no "check does not say which parameters it uses"
# Hostile MeshIR sizes: 100,000 one-PE regions are refused at the 4097th (it ran past 120 s), 4,000
# regions each nested in every other are refused by their overlapping pairs before the SRAM sweep.
python3 - "$tmp/wavel.meshir" "$tmp" <<'PY'
import sys
src = open(sys.argv[1]).read().splitlines()
for name, n, nested in (("many", 100000, False), ("nested", 4000, True)):
    out = []
    for line in src:
        out.append("grid 400 400" if line.startswith("grid ") else line)
        if line.startswith("region 1 "):
            for i in range(n):
                x, y, w = (16 + i % 8, 16 + i % 8, 300 - i % 8) if nested else (16 + i % 384, i // 384, 1)
                out.append(f"region {i + 2} {x} {y} {w} {w}")
    open(f"{sys.argv[2]}/{name}.meshir", "w").write("\n".join(out) + "\n")
PY
expect 65 "more than 4096 regions, the most a schedule may have" check "$tmp/many.meshir"
expect 65 "pairs of regions overlap" check "$tmp/nested.meshir"
expect 65 "more than 4096 regions" simulate "$tmp/many.meshir"
# show on files that are not results: 65 (bad data) or 66 (missing), never 73 (cannot write).
expect 65 "not an HDF5 file" show "$tiny"
expect 66 "does not exist" show "$tmp/absent.h5"
# A results.h5 whose global heap states a 1 GiB string in a 4 kB collection: libhdf5 1.10 itself
# SIGSEGVs in H5HG_read copying it. The sandboxed reader contains that: exit 65 naming the file.
# HDF5 1.10.8 itself reads out of bounds here: its reader child crashes (signal 11), or under ASan
# stops with ASan's report (exit status 1); either way the parent reports a corrupt file.
expect 65 "forged_global_heap.h5' could not be read: the HDF5 library" \
  show "$src/tests/data/results/forged_global_heap.h5"
ls "$tmp"/core* >/dev/null 2>&1 && no "show left a core file"
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  cp "$tmp/run/results.h5" "$tmp/short.h5"
  /usr/bin/python3 - "$tmp/short.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    g = f["schedules"]
    text = g["meshir"][:1]
    del g["meshir"]
    g.create_dataset("meshir", data=text)
    g["meshir"].attrs["units"] = ""
PY
  expect 65 "schedules/meshir' has 1 rows" show "$tmp/short.h5" --setting 1 --schedule wavel
fi

# The output directory is exclusive: a second run is refused naming the holder (exit 69).
mkdir -p "$tmp/locked"
echo "pid 4242 on host elsewhere" >"$tmp/locked/.wavel-dse.lock"
flock "$tmp/locked/.wavel-dse.lock" sleep 30 &
holder=$!
sleep 0.3
expect 69 "in use by another run (pid 4242 on host elsewhere" "$tiny" -o "$tmp/locked"
kill "$holder"; wait "$holder" 2>/dev/null

# A failed rerun leaves no results that look current: the old ones are set aside as *.stale.
mkdir -p "$tmp/run/summary.csv.partial"   # makes writing summary.csv fail
expect 73 "summary.csv" "$tiny" -o "$tmp/run" --set output.hdf5=false
[ -e "$tmp/run/results.h5" ] && no "a failed rerun left the previous results.h5 in place"
[ -e "$tmp/run/summary.csv" ] && no "a failed rerun left the previous summary.csv in place"
[ -e "$tmp/run/results.h5.stale" ] || no "the previous results.h5 was not kept as results.h5.stale"
rmdir "$tmp/run/summary.csv.partial"
expect 0 "results:" "$tiny" -o "$tmp/run"
[ -e "$tmp/run/results.h5.stale" ] && no "a complete rerun left results.h5.stale behind"

# A grid shorter than WaferLLM's side step (15): a run, not a SIGSEGV; on 2 ranks as a what-if point too.
expect 0 "results:" "$tiny" -o "$tmp/g14" --set wafer.grid_w_pes=14
if command -v mpiexec >/dev/null; then
  timeout 60 mpiexec --oversubscribe --bind-to none -n 2 "$exe" "$tiny" -o "$tmp/g14w" --set 'wafer.sweep={grid_w_pes: [16, 14]}' \
    >"$tmp/out" 2>"$tmp/err" || { no "a what-if grid of 14 on 2 ranks exited $?"; cat "$tmp/err"; }
fi

# Links planted in a shared output directory are never followed: the run goes on (its scratch
# files are made afresh) and the target is untouched; a planted lock file is refused (73).
mkdir -p "$tmp/planted"; echo precious >"$tmp/victim"
for f in settings.spool results.h5.partial results.h5.partial.reserve summary.csv.partial checkpoint.wckp.partial; do
  ln -s "$tmp/victim" "$tmp/planted/$f"
done
expect 0 "results:" "$tiny" -o "$tmp/planted" --set search.checkpoint_interval_s=0.001
[ "$(cat "$tmp/victim")" = precious ] || no "a planted symlink's target was overwritten"
for f in results.h5 summary.csv; do [ -L "$tmp/planted/$f" ] && no "$f ended up a symlink"; done
mkdir -p "$tmp/plantedlock"; ln -s "$tmp/victim" "$tmp/plantedlock/.wavel-dse.lock"
expect 73 "is a symbolic link" "$tiny" -o "$tmp/plantedlock"
[ "$(cat "$tmp/victim")" = precious ] || no "a planted lock symlink's target was overwritten"

# A checkpoint that is a FIFO or a device is refused at once (a FIFO used to block forever).
mkdir -p "$tmp/fifo"; mkfifo "$tmp/fifo/checkpoint.wckp"
expect 65 "not a regular file" "$tiny" -o "$tmp/fifo" --resume
mkdir -p "$tmp/dev"; ln -s /dev/zero "$tmp/dev/checkpoint.wckp"
expect 65 "symbolic link" "$tiny" -o "$tmp/dev" --resume

# Names from files reach terminals and UTF-8 columns safely: an invalid UTF-8 model folder name and a
# schedule name with escape sequences; -o '' is a usage error, not ignored; a 40,000-case sweep is
# told to use axes, not about aliases it does not have.
bad=$(printf 'mod\xff\x1b[2Jel')
mkdir -p "$tmp/$bad"; cp "$src/configs/models/tiny-llama/config.json" "$tmp/$bad/"
expect 0 "results:" "$tiny" -o "$tmp/utf8" --set "workloads.models=['$tmp/$bad']"
grep -q $'\x1b' "$tmp/out" "$tmp/err" && no "a model name's escape sequence reached the terminal"
if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
  /usr/bin/python3 -c 'import h5py,sys; f=h5py.File(sys.argv[1],"r"); [f[g][c].asstr()[:] for g in f for c in f[g] if f[g][c].dtype.kind in "SO"]; [f.attrs[a] for a in f.attrs]' \
    "$tmp/utf8/results.h5" 2>"$tmp/err" || { no "results.h5 string columns are not valid UTF-8"; cat "$tmp/err"; }
fi
sed 's/^schedule "wavel"/schedule "x\x1b[31mred\x07"/' "$tmp/wavel.meshir" >"$tmp/esc.meshir"
expect 0 'schedule '"'"'x\x1b[31mred\x07'"'"'' check "$tmp/esc.meshir"
grep -q $'\x1b' "$tmp/out" "$tmp/err" && no "a schedule name's escape sequence reached the terminal"
expect 64 "-o/--output needs a directory" "$tiny" -o ''
python3 -c "
print('workloads:\n  cases:')
for i in range(40000): print('    - {model: llama3-8b, phase: decode, concurrent_requests: 1, input_tokens: %d, output_tokens: 1}' % (i + 1))
" >"$tmp/cases.yaml"
expect 78 "written as axes" --dry-run "$tmp/cases.yaml"
grep -q "alias" "$tmp/err" && no "a large cases list is reported as an alias problem"

# Outputs this run does not write are not left looking current, nor deleted: kept as *.stale, said so.
expect 0 "results:" "$tiny" -o "$tmp/stale"
echo "old" >"$tmp/stale/sensitivity.csv"; echo "old" >"$tmp/stale/wafer_counts.csv"
expect 0 "kept as '$tmp/stale/results.h5.stale'" "$tiny" -o "$tmp/stale" --set output.hdf5=false
[ -e "$tmp/stale/results.h5.stale" ] || no "output.hdf5=false deleted the previous results.h5"
[ -e "$tmp/stale/results.h5" ] && no "output.hdf5=false left the previous results.h5 looking current"
for f in sensitivity.csv wafer_counts.csv; do
  [ -e "$tmp/stale/$f" ] && no "an old $f stays beside new results"
  [ -e "$tmp/stale/$f.stale" ] || no "the old $f was not kept as $f.stale"
done

exit $fail
