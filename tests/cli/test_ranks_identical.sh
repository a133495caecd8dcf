#!/usr/bin/env bash
# Runs the quickstart config at 1, 2 and 4 ranks (4 oversubscribed), with 2, 1 and 2 threads per rank
# (and a tiny MoE under skewed routing at 1, 2 and 4):
# the tables and CSV must be identical byte for byte, and every rank must have done work. Without the
# SRAM-derived root boundaries (cli_end_to_end runs the full config once): the distribution under test
# is the same, the runs take ~40 % less CI time.
set -u
exe=$1; src=$2; tmp=$3; mpiexec=$4
rm -rf "$tmp"; mkdir -p "$tmp"
fail=0
for np in 1 2 4; do
  threads=$(( np == 2 ? 1 : 2 ))
  OMP_NUM_THREADS=$threads "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" "$src/configs/quickstart.yaml" --set search.sram_boundaries=false --output "$tmp/np$np" \
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
grep -q "mpi_ranks" <(h5dump -a /mpi_ranks "$tmp/np4/results.h5") || { echo "FAIL: no mpi_ranks attribute"; fail=1; }
# Pipelines over 2 and 4 wafers (each part searched by its own tasks, per micro-batch count and
# prompt chunks, joined when finishing): the same at 1 and 3 ranks.
for np in 1 3; do
  OMP_NUM_THREADS=1 "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" "$src/configs/tiny.yaml" \
    --set "cluster.wafers=[2, 4]" --set 'search.prompt_chunks=[1, 2]' --output "$tmp/pipe$np" >"$tmp/pipe$np.log" 2>&1 \
    || { echo "FAIL: pipeline run at $np ranks"; cat "$tmp/pipe$np.log"; exit 1; }
  for g in settings front schedules sim_pairs; do h5dump -g /$g "$tmp/pipe$np/results.h5"; done | grep -v '^HDF5 "' >"$tmp/pipe$np.dump"
done
grep -q "pipeline" "$tmp/pipe1/summary.csv" || { echo "FAIL: no pipeline deployment in summary.csv"; fail=1; }
cmp -s "$tmp/pipe1/summary.csv" "$tmp/pipe3/summary.csv" || { echo "FAIL: pipeline summary.csv differs at 3 ranks"; fail=1; }
cmp -s "$tmp/pipe1.dump" "$tmp/pipe3.dump" || { echo "FAIL: pipeline results differ at 3 ranks"; diff "$tmp/pipe1.dump" "$tmp/pipe3.dump" | head; fail=1; }
# MoE under skewed routing (expert CUTs, the shared experts beside them, experts on their own rows):
# the same at 1, 2 and 4 ranks.
for np in 1 2 4; do
  OMP_NUM_THREADS=1 "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" "$src/configs/tiny.yaml" \
    --set "workloads.models=[$src/configs/models/tiny-shared-moe/config.json]" --set 'search.expert_groups=[1, 2]' \
    --set search.max_cut_depth=1 --set workloads.moe_routing_skew=1.0 --output "$tmp/moe$np" >"$tmp/moe$np.log" 2>&1 \
    || { echo "FAIL: MoE run at $np ranks"; cat "$tmp/moe$np.log"; exit 1; }
  for g in settings front schedules sim_pairs; do h5dump -g /$g "$tmp/moe$np/results.h5"; done | grep -v '^HDF5 "' >"$tmp/moe$np.dump"
done
grep -q "product_rows" "$tmp/moe1.dump" || { echo "FAIL: no expert on its own rows in the MoE schedules"; fail=1; }
for np in 2 4; do
  cmp -s "$tmp/moe1/summary.csv" "$tmp/moe$np/summary.csv" || { echo "FAIL: MoE summary.csv differs at $np ranks"; fail=1; }
  cmp -s "$tmp/moe1.dump" "$tmp/moe$np.dump" || { echo "FAIL: MoE results differ at $np ranks"; diff "$tmp/moe1.dump" "$tmp/moe$np.dump" | head; fail=1; }
done
# A hardware what-if (one key at a time, a random defect map, a pipeline case): the same at 1 and 3 ranks.
cat >"$tmp/whatif.yaml" <<EOF
wafer:
  preset: wse3
  grid_w_pes: 16
  grid_h_pes: 16
  sweep_mode: one_at_a_time
  sweep: {link_bytes_per_cycle: [8], sram_per_pe_bytes: [98304], simd_fp16_lanes: [16], defect_rate: [0.004]}
workloads:
  cases:
    - {model: $src/configs/models/tiny-llama/config.json, phase: decode, concurrent_requests: 2, input_tokens: 128, output_tokens: 32}
    - {model: $src/configs/models/tiny-llama/config.json, phase: prefill, concurrent_requests: 2, input_tokens: 128, wafers: 2}
cost: {params_file: $src/configs/params/wse3.yaml}
search: {cut_ratios: [0.5], strip_counts: [3], max_cut_depth: 2, group_scales: [1.0], used_fractions: [1.0, 0.5]}
EOF
for np in 1 3; do
  OMP_NUM_THREADS=1 "$mpiexec" -n $np --oversubscribe --bind-to none "$exe" "$tmp/whatif.yaml" --output "$tmp/whatif$np" >"$tmp/whatif$np.log" 2>&1 \
    || { echo "FAIL: what-if run at $np ranks"; cat "$tmp/whatif$np.log"; exit 1; }
  for g in settings front hardware sensitivity hardware_front sim_pairs; do h5dump -g /$g "$tmp/whatif$np/results.h5"; done | grep -v '^HDF5 "' >"$tmp/whatif$np.dump"
done
grep -q "link_bytes_per_cycle" "$tmp/whatif1/sensitivity.csv" || { echo "FAIL: no sensitivity rows"; fail=1; }
for f in summary.csv sensitivity.csv; do
  cmp -s "$tmp/whatif1/$f" "$tmp/whatif3/$f" || { echo "FAIL: what-if $f differs at 3 ranks"; fail=1; }
done
cmp -s "$tmp/whatif1.dump" "$tmp/whatif3.dump" || { echo "FAIL: what-if results differ at 3 ranks"; diff "$tmp/whatif1.dump" "$tmp/whatif3.dump" | head; fail=1; }
[ $fail = 0 ] && echo "ok: identical results at 1, 2 and 4 ranks (a skewed MoE too; pipelines and a hardware what-if: 1 and 3)"
exit $fail
