#!/usr/bin/env bash
# Runs configs/tiny.yaml, then scripts/make_tables.py (--check) and scripts/plot_results.py on the result:
# the files exist, say PREDICTED and name the params file, the CSV has one row per setting, the output is
# deterministic; and a copy whose Wavel throughput is lowered below WaferLLM fails --check naming that row.
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
py=/usr/bin/python3
if ! "$py" -c "import h5py, matplotlib" 2>/dev/null; then
  echo "SKIP: $py lacks h5py or matplotlib (apt-get install python3-h5py python3-matplotlib)"
  exit 77
fi
export MPLBACKEND=Agg
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
nonempty() { for f in "$@"; do [ -s "$f" ] || { echo "FAIL: missing or empty: $f"; fail=1; }; done; }

# Two request counts, so the request-grouping invariant has pairs to compare: settings 0/1 decode
# with 1/2 requests, 2/3 prefill with 1/2 requests.
"$mpiexec" -n 2 --oversubscribe --bind-to none "$exe" "$src/configs/tiny.yaml" --output "$tmp/run" \
  --set "workloads.concurrent_requests=[1, 2]" --set "cluster.wafers=[1, 2]" \
  >"$tmp/run.log" 2>&1 || { echo "FAIL: wavel-dse run"; cat "$tmp/run.log"; exit 1; }
h5="$tmp/run/results.h5"

"$py" "$src/scripts/make_tables.py" "$h5" --out "$tmp/tables" --name tiny --check >"$tmp/tables.log" 2>&1 \
  || { echo "FAIL: make_tables.py --check on the real results"; cat "$tmp/tables.log"; fail=1; }
nonempty "$tmp/tables/tiny.md" "$tmp/tables/tiny.csv"
grep -q "PREDICTED" "$tmp/tables/tiny.md" || { echo "FAIL: tiny.md lacks the PREDICTED label"; fail=1; }
params=$("$py" -c "import h5py, sys, os; v = h5py.File(sys.argv[1], 'r').attrs['params_file']
print(os.path.basename(v.decode() if isinstance(v, bytes) else v))" "$h5")
[ -n "$params" ] && grep -qF "$params" "$tmp/tables/tiny.md" \
  || { echo "FAIL: tiny.md does not name the params file '$params'"; fail=1; }
grep -q "Check passed" "$tmp/tables/tiny.md" || { echo "FAIL: tiny.md does not report the check"; fail=1; }
grep -q "Whole-model deployments over several wafers" "$tmp/tables/tiny.md" \
  || { echo "FAIL: tiny.md has no whole-model (pipeline) section"; fail=1; }
"$py" - "$h5" "$tmp/tables/tiny.csv" <<'PY' || fail=1
import csv, sys, h5py
settings = len(h5py.File(sys.argv[1], "r")["settings"]["setting_id"])
rows = list(csv.DictReader(open(sys.argv[2], newline="")))
if len(rows) != settings:
    print(f"FAIL: tiny.csv has {len(rows)} rows, results.h5 {settings} settings"); sys.exit(1)
if sorted(int(r["setting_id"]) for r in rows) != list(range(settings)):
    print("FAIL: tiny.csv does not hold each setting once"); sys.exit(1)
PY
# Every stored schedule spans its own setting's wafers (request grouping never crosses deployments).
"$py" - "$h5" <<'PY' || fail=1
import re, sys, h5py
f = h5py.File(sys.argv[1], "r")
wafers = dict(zip(f["settings"]["setting_id"][()], f["settings"]["wafers"][()]))
t = f["schedules"]
for sid, name, text in zip(t["setting_id"][()], t["schedule"][()], t["meshir"][()]):
    m = re.search(rb"\nwafers (\d+)", text)
    if (int(m.group(1)) if m else 1) != wafers[sid]:
        print(f"FAIL: schedule {name} of setting {sid} spans another number of wafers than its setting"); sys.exit(1)
PY
# Same input, same bytes (no timestamps other than the file's own).
"$py" "$src/scripts/make_tables.py" "$h5" --out "$tmp/tables2" --name tiny >/dev/null 2>&1
cmp -s "$tmp/tables/tiny.md" "$tmp/tables2/tiny.md" && cmp -s "$tmp/tables/tiny.csv" "$tmp/tables2/tiny.csv" || { echo "FAIL: make_tables.py output is not deterministic"; fail=1; }

"$py" "$src/scripts/plot_results.py" "$h5" --out "$tmp/plots" >"$tmp/plots.log" 2>&1 \
  || { echo "FAIL: plot_results.py"; cat "$tmp/plots.log"; fail=1; }
ids=$("$py" -c "import h5py, sys; print(' '.join(str(int(v)) for v in h5py.File(sys.argv[1], 'r')['settings']['setting_id'][()]))" "$h5")
for id in $ids; do
  nonempty "$tmp/plots/pareto_$id.png" "$tmp/plots/floorplan_$id.png" "$tmp/plots/floorplan_$id.svg"
done
nonempty "$tmp/plots/calibration_scatter.png"
grep -q "predicted (cost model)" "$tmp/plots/floorplan_0.svg" 2>/dev/null \
  || { echo "FAIL: floorplan_0.svg does not say 'predicted (cost model)'"; fail=1; }
# Settings 4.. run on 2 wafers: one panel per wafer.
grep -q "wafer 1: x" "$tmp/plots/floorplan_4.svg" 2>/dev/null \
  || { echo "FAIL: floorplan_4.svg (2 wafers) has no panel for wafer 1"; fail=1; }

# Negative: in a copy, setting 1's Wavel throughput goes below WaferLLM's (tiny places no WaferLLM, so the
# copy gives it Full-Chip's throughput first); setting 0's Wavel sits 1e-14 below Full-Chip, inside the
# tolerance, so it must not be named.
cp "$h5" "$tmp/lowered.h5"
"$py" - "$tmp/lowered.h5" <<'PY' || fail=1
import math, sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    s = f["settings"]
    wavel, waferllm, fullchip = s["wavel_tokens_per_s"], s["waferllm_tokens_per_s"], s["fullchip_tokens_per_s"]
    if math.isnan(waferllm[1]):
        waferllm[1] = fullchip[1]
    wavel[1] = 0.5 * waferllm[1]
    wavel[0] = fullchip[0] * (1 - 1e-14)
PY
"$py" "$src/scripts/make_tables.py" "$tmp/lowered.h5" --out "$tmp/lowered" --name tiny --check >"$tmp/lowered.log" 2>&1
rc=$?
[ $rc = 1 ] || { echo "FAIL: --check on a lowered Wavel throughput exited $rc, not 1"; cat "$tmp/lowered.log"; fail=1; }
grep -q "setting 1 (.*WaferLLM" "$tmp/lowered.log" || { echo "FAIL: --check does not name setting 1 and WaferLLM"; cat "$tmp/lowered.log"; fail=1; }
grep -q "setting 0 (" "$tmp/lowered.log" && { echo "FAIL: --check names setting 0, within the 1e-12 tolerance"; fail=1; }
grep -q "Check FAILED" "$tmp/lowered/tiny.md" || { echo "FAIL: tiny.md of the lowered copy does not report the failure"; fail=1; }

# Negative: Full-Chip serving 2 prompts slower than 1 breaks the request-grouping invariant, and a
# WaferLLM n/a with an empty reason breaks the reason rule.
cp "$h5" "$tmp/crafted.h5"
"$py" - "$tmp/crafted.h5" <<'PY' || fail=1
import math, sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    s = f["settings"]
    s["fullchip_tokens_per_s"][3] = 0.5 * s["fullchip_tokens_per_s"][2]
    s["waferllm_tokens_per_s"][1] = math.nan
    s["waferllm_na_reason"][1] = b""
PY
"$py" "$src/scripts/make_tables.py" "$tmp/crafted.h5" --out "$tmp/crafted" --name tiny --check >"$tmp/crafted.log" 2>&1
rc=$?
[ $rc = 1 ] || { echo "FAIL: --check on a crafted file exited $rc, not 1"; cat "$tmp/crafted.log"; fail=1; }
grep -q "setting 3 (.*grouping: Full-Chip at 2 requests" "$tmp/crafted.log" \
  || { echo "FAIL: --check does not name the grouping violation of setting 3"; cat "$tmp/crafted.log"; fail=1; }
grep -q "setting 1 (.*WaferLLM is n/a without a reason" "$tmp/crafted.log" \
  || { echo "FAIL: --check does not name setting 1's n/a without a reason"; cat "$tmp/crafted.log"; fail=1; }
head -1 "$tmp/tables/tiny.csv" | grep -q "wavel_over_waferllm_lo,wavel_over_waferllm_hi,wavel_over_fullchip_lo,wavel_over_fullchip_hi,waferllm_na_reason,fullchip_na_reason" \
  || { echo "FAIL: tiny.csv lacks the interval and reason columns"; fail=1; }

"$py" - "$h5" <<'PY' || { echo "FAIL: /settings lacks the request-grouping columns"; fail=1; }
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    missing = [c for c in ("wavel_request_groups", "fullchip_request_groups", "waferllm_request_groups",
                           "waferllm_layer_subset_layers") if c not in f["settings"]]
    sys.exit(1 if missing else 0)
PY

[ $fail = 0 ] && echo "ok: make_tables.py and plot_results.py on configs/tiny.yaml"
exit $fail
