#!/usr/bin/env bash
# Regenerates configs/params/ by the two calibration levels (README, Calibration):
#   1. wse3-kernels.yaml: the kernel constants fitted on WSE-3 hardware kernel measurements, and the
#      simulator's PE timing (sim_timing) fitted on the same points through the simulator's loops;
#   2. wse2-waferllm.yaml: from (1), what the kernels cannot pin, fitted on WaferLLM's WSE-2 end-to-end
#      points (for the model and, through WaferLLM's simulated schedules, for the simulator);
#   3. wse3.yaml: (1) with the end-to-end launch cost of (2): the file WSE-3 sweeps use.
# Run from anywhere after scripts/setup.sh. Scratch output goes to results/runs/calibrate-*.
set -euo pipefail
cd "$(dirname "$0")/.."
exe=${WAVEL_DSE:-build/wavel-dse}
kernels=tests/data/reference/wse3_kernels
params=configs/params

"$exe" calibrate "$kernels/meshgemm.yaml" "$kernels/meshgemv.yaml" "$kernels/shift.yaml" --wafer wse3 \
  -o results/runs/calibrate-wse3-kernels
cp results/runs/calibrate-wse3-kernels/params.yaml "$params/wse3-kernels.yaml"

"$exe" calibrate tests/data/reference/waferllm_measured.yaml --params "$params/wse3-kernels.yaml" \
  -o results/runs/calibrate-wse2-waferllm
cp results/runs/calibrate-wse2-waferllm/params.yaml "$params/wse2-waferllm.yaml"

# The launch cost per op is software, the same on both generations; the WSE-2 refits of alpha and
# gemm_k (and the simulator's scalar_op_cycles) are WSE-2's own and stay out of the WSE-3 file.
overhead=$(grep '^kernel_overhead_cycles:' "$params/wse2-waferllm.yaml")
{
  echo "# WSE-3 parameters for sweeps: the kernel constants of wse3-kernels.yaml (WSE-3 hardware kernel"
  echo "# measurements) and kernel_overhead_cycles from wse2-waferllm.yaml (end-to-end, per-op launch software)."
  echo "# Written by scripts/calibrate.sh; the uncertainty section covers the kernel constants only."
  sed "s|^kernel_overhead_cycles:.*|$overhead|" "$params/wse3-kernels.yaml"
} >"$params/wse3.yaml.partial"
mv "$params/wse3.yaml.partial" "$params/wse3.yaml"
echo "configs/params/{wse3-kernels,wse2-waferllm,wse3}.yaml regenerated"
