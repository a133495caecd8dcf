#!/usr/bin/env bash
# Regenerates results/paper/ (tables and plots, all PREDICTED by the cost model) from the committed
# configs/paper/*.yaml (costed with the params_file they name, configs/params/wse3.yaml) and the
# validation against WaferLLM's published runs (configs/params/wse2-waferllm.yaml). Writes the sweeps'
# wall times to results/paper/timing.txt and each plotted setting to results/paper/plots/*/index.md.
# Run from anywhere after scripts/setup.sh.
# Usage: scripts/paper.sh [RANKS]   (default 2; raw runs go to results/runs/paper-{dense,moe}/)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
exe=${WAVEL_DSE:-build/wavel-dse}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_PROC_BIND=${OMP_PROC_BIND:-false} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} MPLBACKEND=Agg
out=results/paper

timing="# scripts/paper.sh at $(git rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u +%Y-%m-%d), $ranks ranks on $(nproc --all) cores"
for sweep in dense moe; do
  start=$(date +%s)
  mpirun -n "$ranks" --bind-to none "$exe" "configs/paper/$sweep.yaml" --set output.progress=always
  took=$(( $(date +%s) - start ))
  echo "paper.sh: $sweep sweep took $took s on $ranks ranks" >&2
  timing+=$'\n'"$sweep: $took s"
done
mkdir -p "$out" && printf '%s\n' "$timing" >"$out/timing.txt"
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
# plot_results.py is run without --setting); plots/*/index.md says which setting each id is.
dense_plots=(0 8 16 225 273)
moe_plots=(8 56 80 152 160)
/usr/bin/python3 scripts/plot_results.py "$dense" --out "$out/plots/dense" "${dense_plots[@]/#/--setting=}" \
  --schedule waferllm --calibration results/runs/paper-validate/validation.csv
/usr/bin/python3 scripts/plot_results.py "$moe" --out "$out/plots/moe" "${moe_plots[@]/#/--setting=}" --schedule waferllm
echo "results/paper regenerated"
