#!/usr/bin/env bash
# The main job on the bundled default config: setup, build, then a 2-rank run that prints the result table.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
WAVEL_BUILD_TARGET=${WAVEL_BUILD_TARGET:-wavel-dse} bash scripts/setup.sh

# Open MPI refuses root unless told; with 2 ranks it binds each to one core, so let threads float.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_PROC_BIND=${OMP_PROC_BIND:-false} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# mpirun's hwloc would probe X displays, a DNS lookup each where /etc/hosts lacks localhost (5 s lost per stall).
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--gl}

mpirun -np 2 --bind-to none build/wavel-dse configs/quickstart.yaml "$@"
echo "read it back with: /usr/bin/python3 scripts/read_results.py results/runs/quickstart/results.h5"
