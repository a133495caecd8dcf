#!/usr/bin/env bash
# Regenerates configs/params/ by the two calibration levels (docs/calibration.md):
#   1. wse3-kernels.yaml: the kernel constants fitted on WSE-3 hardware kernel measurements, and the
#      simulator's PE timing (sim_timing) fitted on the same points through the simulator's loops;
#   2. wse2-waferllm.yaml: from (1), what the kernels cannot pin, fitted on WaferLLM's WSE-2 end-to-end
#      points (for the model and, through WaferLLM's simulated schedules, for the simulator);
#   3. wse3.yaml: (1) alone, the file WSE-3 sweeps use (no constant fitted on WSE-2 with WSE-2's hop cost).
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

# WSE-3 sweeps take the WSE-3 kernel fit alone: the end-to-end constants of (2) were fitted with
# WSE-2's hop cost and stay in the WSE-2 file (the fits: section records each file's steps).
{
  echo "# WSE-3 parameters for sweeps: the kernel constants of wse3-kernels.yaml (WSE-3 hardware kernel"
  echo "# measurements) and what is derived from them; nothing fitted on WSE-2. Written by scripts/calibrate.sh."
  cat "$params/wse3-kernels.yaml"
} >"$params/wse3.yaml.partial"
mv "$params/wse3.yaml.partial" "$params/wse3.yaml"
echo "configs/params/{wse3-kernels,wse2-waferllm,wse3}.yaml regenerated"
