#!/usr/bin/env bash
# The test command: setup, build, then every CTest test (MPI tests at 1, 2 and 4 ranks).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
ctest --test-dir build --output-on-failure --timeout 600 "$@"
