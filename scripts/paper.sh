#!/usr/bin/env bash
# Regenerates results/paper/ (tables and plots, all PREDICTED by the cost model) from the committed
# configs/paper/*.yaml and configs/params/wse2-waferllm.yaml. Run from anywhere after scripts/setup.sh.
# Usage: scripts/paper.sh [RANKS]   (default 2; raw runs go to results/runs/paper-{dense,moe}/)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
exe=${WAVEL_DSE:-build/wavel-dse}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_PROC_BIND=${OMP_PROC_BIND:-false} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MPLBACKEND=Agg
out=results/paper

for sweep in dense moe; do
  start=$(date +%s)
  mpirun -n "$ranks" --bind-to none "$exe" "configs/paper/$sweep.yaml" --set output.progress=always
  echo "paper.sh: $sweep sweep took $(( $(date +%s) - start )) s on $ranks ranks" >&2
done
dense=results/runs/paper-dense/results.h5
moe=results/runs/paper-moe/results.h5

# Tables; --check fails if the search column is below a placed baseline in any row.
/usr/bin/python3 scripts/make_tables.py "$dense" --out "$out" --name dense --check
/usr/bin/python3 scripts/make_tables.py "$moe" --out "$out" --name moe --check
/usr/bin/python3 scripts/make_tables.py "$dense" "$moe" --out "$out" --name all

# The cost model against WaferLLM's published measurements (pairs for the calibration scatter).
"$exe" validate tests/data/reference/waferllm_measured.yaml --params configs/params/wse2-waferllm.yaml \
  -o results/runs/paper-validate

# Plots for a few representative settings (every setting has its own in the raw runs' folders if
# plot_results.py is run without --setting). Ids run models, wafers (1, 2, 4), phases, requests,
# lengths: 72 settings per model, 24 per wafer count (16 decode, then 8 prefill).
#   dense 0 llama3-8b decode r1 2048/128, 8 llama3-8b decode r16 2048/128, 16 llama3-8b prefill r1,
#   225 qwen2-72b decode r16 4096/128 on 1 wafer (layer subset), 273 the same whole on 4 wafers;
#   moe 8 mixtral-8x7b decode r16 (layer subset), 56 the same whole on 4 wafers, 80 qwen3-30b-a3b
#   decode r16 (layer subset), 152 deepseek-v2-lite decode r16, 160 deepseek-v2-lite prefill r1.
/usr/bin/python3 scripts/plot_results.py "$dense" --out "$out/plots/dense" --setting 0 --setting 8 --setting 16 \
  --setting 225 --setting 273 --schedule waferllm --calibration results/runs/paper-validate/validation.csv
/usr/bin/python3 scripts/plot_results.py "$moe" --out "$out/plots/moe" --setting 8 --setting 56 --setting 80 \
  --setting 152 --setting 160 --schedule waferllm
echo "results/paper regenerated"
