#!/usr/bin/env bash
# The test command: setup, build, then every CTest test (MPI tests at 1, 2 and 4 ranks), then a
# sanitizer pass (ASan+UBSan, preset asan) of the unit tests on one rank and of the executable under
# the hostile-input script (and the CLI script with WAVEL_SANITIZE_CLI=1), and, when clang is
# installed, a short fuzz smoke run of every input reader (scripts/fuzz.sh).
#   WAVEL_SKIP_SANITIZERS=1  skip the sanitizer pass     WAVEL_FUZZ_SECONDS=N  per fuzz target (default 5; 0 skips)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/setup.sh
status=0
ctest --test-dir build --output-on-failure --timeout 600 "$@" || status=$?

if [ "${WAVEL_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "[test] sanitizer pass: ASan+UBSan build of wavel_tests and wavel-dse (build-asan), one rank"
  kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' build/CMakeCache.txt)
  cmake --preset asan ${kokkos_dir:+-DKokkos_DIR="$kokkos_dir"} >/dev/null
  cmake --build build-asan -j "${WAVEL_JOBS:-$(nproc)}" --target wavel_tests wavel-dse
  export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false OMP_NUM_THREADS=1
  build-asan/tests/wavel_tests || status=1
  # test_cli.sh takes about 4 min under ASan: run it with WAVEL_SANITIZE_CLI=1 (clean on 2026-12-03).
  for t in hostile $([ "${WAVEL_SANITIZE_CLI:-0}" = 1 ] && echo cli); do
    echo "[test] sanitizer pass: tests/cli/test_$t.sh with build-asan/wavel-dse"
    bash "tests/cli/test_$t.sh" build-asan/wavel-dse "$root" "build-asan/cli-$t-tmp" >"build-asan/cli-$t.log" 2>&1 \
      || { status=1; grep -E "FAIL|ERROR|runtime error" "build-asan/cli-$t.log" | head -20; }
    if grep -qE "ERROR: AddressSanitizer|runtime error:" "build-asan/cli-$t.log"; then
      status=1; grep -E -A5 "ERROR: AddressSanitizer|runtime error:" "build-asan/cli-$t.log" | head -40
    fi
  done
fi

fuzz_seconds=${WAVEL_FUZZ_SECONDS:-5}
if command -v clang++ >/dev/null && [ "$fuzz_seconds" != 0 ]; then
  echo "[test] fuzz smoke run: $fuzz_seconds s per target"
  bash scripts/fuzz.sh "$fuzz_seconds" || status=1
fi
exit $status
