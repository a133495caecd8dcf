#!/usr/bin/env bash
# A sweep split into array tasks (--sweep-index) and merged gives the same tables as one run.
set -u
exe=$1; src=$2; tmp=$3
rm -rf "$tmp"; mkdir -p "$tmp"
"$exe" "$src/configs/tiny.yaml" --output "$tmp/whole" >"$tmp/whole.log" 2>&1 || { cat "$tmp/whole.log"; exit 1; }
for i in 0 1; do
  "$exe" "$src/configs/tiny.yaml" --output "$tmp/tasks" --sweep-index $i --sweep-count 2 >"$tmp/task$i.log" 2>&1 \
    || { cat "$tmp/task$i.log"; exit 1; }
done
mkdir -p "$tmp/out"
/usr/bin/python3 "$src/scripts/merge_results" "$tmp/out/merged.h5" "$tmp/tasks/sweep-1/results.h5" "$tmp/tasks/sweep-0/results.h5" \
  || { echo "FAIL: merge_results"; exit 1; }
cp "$tmp/out/merged.h5" "$tmp/merged.h5"
# summary.csv is merged too, and equals the whole run's.
cmp -s "$tmp/whole/summary.csv" "$tmp/out/summary.csv" || { echo "FAIL: merged summary.csv differs from the whole run's"; diff "$tmp/whole/summary.csv" "$tmp/out/summary.csv" | head -5; exit 1; }
/usr/bin/python3 - "$tmp/whole/results.h5" "$tmp/merged.h5" <<'PY'
import sys, h5py, numpy as np
whole, merged = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
ok = True
for table in ("settings", "front", "schedules", "sim_pairs", "sim_op_pairs"):
    cols = [c.decode() if isinstance(c, bytes) else c for c in whole[table].attrs["columns"]]
    for c in cols:
        a, b = whole[table][c][()], merged[table][c][()]
        if a.dtype.kind == "S":
            a, b = [x.decode().rstrip("\0") for x in a], [x.decode().rstrip("\0") for x in b]
            same = a == b
        else:
            same = a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        if not same:
            print(f"FAIL: /{table}/{c} differs after the merge"); ok = False
print("ok: split sweep merges to the whole run" if ok else "")
sys.exit(0 if ok else 1)
PY
