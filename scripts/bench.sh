#!/usr/bin/env bash
# Builds (via setup.sh) and runs the Google Benchmark drivers; JSON goes to results/bench/.
# Usage: scripts/bench.sh [--skip-setup]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[ "${1:-}" = "--skip-setup" ] || bash scripts/setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false
out=results/bench
mkdir -p "$out"
reps=(--benchmark_repetitions=5 --benchmark_report_aggregates_only=true)

# One core: the per-core rates the targets are stated in.
OMP_NUM_THREADS=1 build/bench/wavel_bench_search --benchmark_filter=FullScheduleEvaluation "${reps[@]}" \
  --benchmark_out="$out/search_evaluations.json" --benchmark_out_format=json
# The quickstart's settings searched on this process with 2 threads (the quickstart itself uses 2 ranks).
OMP_NUM_THREADS=2 build/bench/wavel_bench_search --benchmark_filter=QuickstartSearch \
  --benchmark_out="$out/quickstart_search.json" --benchmark_out_format=json
OMP_NUM_THREADS=1 build/bench/wavel_bench_sim "${reps[@]}" \
  --benchmark_out="$out/sim.json" --benchmark_out_format=json
OMP_NUM_THREADS=1 build/bench/wavel_bench_workload "${reps[@]}" \
  --benchmark_out="$out/workload.json" --benchmark_out_format=json
echo "JSON written to $out/"
