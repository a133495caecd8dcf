#!/usr/bin/env bash
# Search checks on whole runs: pruned and exhaustive give the same front (tiny, tiny at 4 requests
# with SRAM-derived and absolute cut positions, where bound pruning fires, and tiny with a defect,
# used rectangles at every free corner and sized by SRAM need); 1 and 2 threads give identical files; on the quickstart the search alone
# (search.seed_baselines: false) is at least as fast as both baselines in every setting, and bound and
# incumbent pruning both fire; the space with fusion holds the space without (search.fusion: false):
# every setting's best at least as fast, on tiny and the quickstart, and so does the space with sibling
# branches (search.sibling_branches: false); on a tiny MoE with a shared expert
# (one CUT level), pruned equals exhaustive, also under skewed routing, and the space with concurrent
# branches holds the space without (search.concurrent_branches: false); on tiny prefill with chunked
# prompts (one CUT level), pruned equals exhaustive and the space with chunks holds the space without;
# likewise with split heads (search.head_groups) on tiny prefill, on one wafer and pipelines of 2 and 4;
# on tiny decode pipelines of 2 and 4 wafers, pruned equals exhaustive and the space with sibling
# branches holds the space without.
set -u
exe=$1; src=$2; tmp=$3
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
run() {  # run NAME THREADS ARGS...
  local name=$1 threads=$2; shift 2
  OMP_NUM_THREADS=$threads "$exe" "$@" --output "$tmp/$name" >"$tmp/$name.log" 2>&1 || { echo "FAIL: $name"; cat "$tmp/$name.log"; exit 1; }
}
run pruned 1 "$src/configs/tiny.yaml"
run exhaustive 1 "$src/configs/tiny.yaml" --set search.exhaustive=true
richer=(--set 'workloads.concurrent_requests=[4]' --set search.sram_cuts=3 --set search.cut_step_pes=5 --set sim.samples=0)
run pruned4 1 "$src/configs/tiny.yaml" "${richer[@]}"
run exhaustive4 1 "$src/configs/tiny.yaml" "${richer[@]}" --set search.exhaustive=true
# Used rectangles at every free corner and sized by SRAM need, with a defect (one CUT level: the
# exhaustive tree with every anchor is too large for CI at two).
anchors=(--set search.all_anchors=true --set search.sram_used_step_pes=4 --set 'wafer.defective_pes=[[1, 1]]'
         --set search.max_cut_depth=1 --set sim.samples=0)
run pruned_anchors 1 "$src/configs/tiny.yaml" "${anchors[@]}"
run exhaustive_anchors 1 "$src/configs/tiny.yaml" "${anchors[@]}" --set search.exhaustive=true
run threads2 2 "$src/configs/tiny.yaml"
run quick 2 "$src/configs/quickstart.yaml" --set search.seed_baselines=false
run pruned_nofusion 1 "$src/configs/tiny.yaml" --set search.fusion=false
run quick_nofusion 2 "$src/configs/quickstart.yaml" --set search.seed_baselines=false --set search.fusion=false
run pruned_nosiblings 1 "$src/configs/tiny.yaml" --set search.sibling_branches=false
run quick_nosiblings 2 "$src/configs/quickstart.yaml" --set search.seed_baselines=false --set search.sibling_branches=false
moe=(--set "workloads.models=[$src/configs/models/tiny-shared-moe/config.json]" --set 'search.expert_groups=[1, 2]'
     --set search.max_cut_depth=1 --set sim.samples=0)
run moe_pruned 1 "$src/configs/tiny.yaml" "${moe[@]}"
run moe_exhaustive 1 "$src/configs/tiny.yaml" "${moe[@]}" --set search.exhaustive=true
run moe_nobranches 1 "$src/configs/tiny.yaml" "${moe[@]}" --set search.concurrent_branches=false
run moe_skew_pruned 1 "$src/configs/tiny.yaml" "${moe[@]}" --set workloads.moe_routing_skew=1.0
run moe_skew_exhaustive 1 "$src/configs/tiny.yaml" "${moe[@]}" --set workloads.moe_routing_skew=1.0 --set search.exhaustive=true
chunks=(--set 'workloads.phases=[prefill]' --set 'workloads.concurrent_requests=[1, 2]'
        --set 'workloads.input_tokens=[128, 512]' --set search.max_cut_depth=1 --set sim.samples=0)
run chunks_pruned 1 "$src/configs/tiny.yaml" "${chunks[@]}" --set 'search.prompt_chunks=[1, 2, 4]'
run chunks_exhaustive 1 "$src/configs/tiny.yaml" "${chunks[@]}" --set 'search.prompt_chunks=[1, 2, 4]' --set search.exhaustive=true
run chunks_none 1 "$src/configs/tiny.yaml" "${chunks[@]}"
heads=(--set 'workloads.phases=[prefill]' --set search.max_cut_depth=1 --set sim.samples=0)
run heads_pruned 1 "$src/configs/tiny.yaml" "${heads[@]}" --set 'search.head_groups=[1, 2, 4]'
run heads_exhaustive 1 "$src/configs/tiny.yaml" "${heads[@]}" --set 'search.head_groups=[1, 2, 4]' --set search.exhaustive=true
run heads_none 1 "$src/configs/tiny.yaml" "${heads[@]}"
# Pipelines over 2 and 4 wafers: the joined best with split heads at least the joined best without.
wafers=(--set 'cluster.wafers=[2, 4]' --set 'workloads.concurrent_requests=[1, 4]')
run heads_wafers 1 "$src/configs/tiny.yaml" "${heads[@]}" "${wafers[@]}" --set 'search.head_groups=[1, 2, 4]'
run heads_wafers_none 1 "$src/configs/tiny.yaml" "${heads[@]}" "${wafers[@]}"
# Decode pipelines over 2 and 4 wafers (one CUT level): with the parts' crossing legs in their
# fronts, pruned equals exhaustive, and the joined best with sibling branches is at least without.
pipes=(--set search.max_cut_depth=1 --set sim.samples=0 "${wafers[@]}")
run pipe_pruned 1 "$src/configs/tiny.yaml" "${pipes[@]}"
run pipe_exhaustive 1 "$src/configs/tiny.yaml" "${pipes[@]}" --set search.exhaustive=true
run pipe_nosiblings 1 "$src/configs/tiny.yaml" "${pipes[@]}" --set search.sibling_branches=false

/usr/bin/python3 - "$tmp" <<'PY' || fail=1
import csv, math, sys
tmp = sys.argv[1]
def rows(name, table="summary"):
    return list(csv.DictReader(open(f"{tmp}/{name}/summary.csv")))
ok = True
# 1. Same front, pruned and exhaustive (compared on the objectives, from the HDF5 front table).
import h5py
def front(name):
    with h5py.File(f"{tmp}/{name}/results.h5", "r") as f:
        g = f["front"]
        return sorted(zip(g["setting_id"][:], g["tokens_per_s"][:], g["latency_s"][:], g["pes_used"][:]))
for p, e in (("pruned", "exhaustive"), ("pruned4", "exhaustive4"), ("pruned_anchors", "exhaustive_anchors"),
             ("moe_pruned", "moe_exhaustive"), ("moe_skew_pruned", "moe_skew_exhaustive"),
             ("chunks_pruned", "chunks_exhaustive"), ("heads_pruned", "heads_exhaustive"),
             ("pipe_pruned", "pipe_exhaustive")):
    if front(p) != front(e):
        print(f"FAIL: {p} and {e} fronts differ"); ok = False
def total(name, column):
    with h5py.File(f"{tmp}/{name}/results.h5", "r") as f:
        return int(sum(f["search_stats"][column][:]))
for name, column in (("pruned4", "pruned_bound"), ("quick", "pruned_bound"), ("quick", "pruned_incumbent")):
    n = total(name, column)
    print(f"{name}: {column} = {n}")
    if n <= 0:
        print(f"FAIL: {name}: {column} never fired"); ok = False
# 2. The pruned search visits at most 1 % of the exhaustive tree's nodes.
with h5py.File(f"{tmp}/pruned/results.h5", "r") as f:
    g = f["search_stats"]
    stats = list(zip(g["setting_id"][:], g["nodes_visited"][:], g["exhaustive_tree_log10"][:]))
for setting, visited, tree in stats:
    ratio = 10 ** (math.log10(int(visited)) - float(tree))
    print(f"setting {setting}: visited {visited} of 10^{float(tree):.2f} tree nodes ({100*ratio:.6f} %)")
    if ratio > 0.01:
        print("FAIL: pruned search visited more than 1 % of the tree"); ok = False
# 3. At least as fast as both baselines wherever a baseline is placed (quick: the search alone).
for name in ("pruned", "quick"):
    for r in rows(name):
        if name == "quick" and r["wavel_source"].startswith("seed:"):
            print(f"FAIL: quick setting {r['setting_id']}: a seed on the front without seeding"); ok = False
        for col in ("speedup_vs_waferllm", "speedup_vs_fullchip"):
            v = float(r[col])
            if not math.isnan(v) and v < 1.0:
                print(f"FAIL: {name} setting {r['setting_id']} {col} = {v}"); ok = False
# 4. The old space (no fusion; no concurrent or sibling branches; whole prompts; whole heads) is a subset: never a faster best
# there; the new kind wins somewhere (chunks: where a 512-token prompt does not fit the grid whole).
def tokens(r):  # a setting nothing fits has no throughput
    try:
        v = float(r["wavel_tokens_per_s"])
    except ValueError:
        return 0.0
    return 0.0 if math.isnan(v) else v
for kind, pairs in (("fusion", (("pruned", "pruned_nofusion"), ("quick", "quick_nofusion"))),
                    ("concurrent branches", (("moe_pruned", "moe_nobranches"),)),
                    ("sibling branches", (("pruned", "pruned_nosiblings"), ("quick", "quick_nosiblings"),
                                          ("pipe_pruned", "pipe_nosiblings"))),
                    ("prompt chunks", (("chunks_pruned", "chunks_none"),)),
                    ("split heads", (("heads_pruned", "heads_none"), ("heads_wafers", "heads_wafers_none")))):
    gained = 0
    for new, old in pairs:
        best_old = {r["setting_id"]: tokens(r) for r in rows(old)}
        for r in rows(new):
            n, o = tokens(r), best_old[r["setting_id"]]
            if n < o * (1 - 1e-12):
                print(f"FAIL: {new} setting {r['setting_id']}: {n} tok/s with {kind}, {o} without"); ok = False
            gained += n > o * (1 + 1e-9)
    print(f"{kind}: {gained} settings faster than the space without it")
    if gained == 0:
        print(f"FAIL: {kind} never gave a faster best schedule"); ok = False
sys.exit(0 if ok else 1)
PY
# 4. Thread count changes nothing but provenance and timing.
cmp -s "$tmp/pruned/summary.csv" "$tmp/threads2/summary.csv" || { echo "FAIL: summary.csv differs between 1 and 2 threads"; fail=1; }
for g in settings front schedules; do
  cmp -s <(h5dump -g /$g "$tmp/pruned/results.h5" | grep -v '^HDF5 "') <(h5dump -g /$g "$tmp/threads2/results.h5" | grep -v '^HDF5 "') \
    || { echo "FAIL: /$g differs between 1 and 2 threads"; fail=1; }
done
[ $fail = 0 ] && echo "ok: search modes, thread counts and baselines"
exit $fail
