#!/usr/bin/env bash
# The test command: setup, build, then every CTest test (MPI tests at 1, 2 and 4 ranks), then a
# sanitizer pass (ASan+UBSan) of the unit tests on one rank and of the executable under the
# hostile-input script (and the CLI script with WAVEL_SANITIZE_CLI=1), then a short fuzz smoke run of
# every input reader. The sanitizer pass and the fuzz targets share one clang build (build-fuzz,
# scripts/sanitized_build.sh, which installs clang from Debian when it is missing); without clang
# and with WAVEL_SKIP_APT=1 the sanitizer pass uses gcc (preset asan, build-asan) and fuzzing is skipped.
# It ends with a verdict line: the stages passed, failed and skipped (each skipped one with its reason).
#   WAVEL_SKIP_SANITIZERS=1  skip the sanitizer pass     WAVEL_FUZZ_SECONDS=N  per fuzz target (default 5; 0 skips)
#   WAVEL_CTEST_JOBS=N       CTest tests at once (default: nproc)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
passed=() failed=() skipped=()
stage() {  # stage NAME COMMAND...: runs it and records the outcome
  local name=$1; shift
  if "$@"; then passed+=("$name"); else failed+=("$name"); fi
}
bash scripts/setup.sh || { echo "[test] verdict: setup failed; nothing was tested"; exit 1; }

ctest_log=$(mktemp)
# Tests run side by side, one per core (WAVEL_CTEST_JOBS): most are one process waiting on another's
# files or signals, and slurm_local runs alone (RUN_SERIAL).
stage "ctest" bash -c 'ctest --test-dir build --output-on-failure --timeout 600 -j "${WAVEL_CTEST_JOBS:-$(nproc)}" "$@" | tee "$0"; exit "${PIPESTATUS[0]}"' "$ctest_log" "$@"
ctest_counts=$(grep -Eo "[0-9]+ tests failed out of [0-9]+" "$ctest_log" | tail -1)
rm -f "$ctest_log"

san_dir=build-fuzz
if [ "${WAVEL_SKIP_APT:-0}" = 1 ] && ! bash scripts/sanitized_build.sh --check; then san_dir=build-asan; fi
sanitized_script() {  # sanitized_script NAME: tests/cli/test_NAME.sh under $san_dir/wavel-dse, clean of reports
  local t=$1 log="$san_dir/cli-$1.log"
  echo "[test] sanitizer pass: tests/cli/test_$t.sh with $san_dir/wavel-dse"
  if ! bash "tests/cli/test_$t.sh" "$san_dir/wavel-dse" "$root" "$san_dir/cli-$t-tmp" >"$log" 2>&1; then
    grep -E "FAIL|ERROR|runtime error" "$log" | head -20; return 1
  fi
  if grep -qE "ERROR: AddressSanitizer|runtime error:" "$log"; then
    grep -E -A5 "ERROR: AddressSanitizer|runtime error:" "$log" | head -40; return 1
  fi
}
sanitized_build() {  # the unit tests and wavel-dse with ASan+UBSan in $san_dir
  if [ "$san_dir" = build-fuzz ]; then
    bash scripts/sanitized_build.sh wavel_tests wavel-dse
  else
    local kokkos_dir
    kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' build/CMakeCache.txt)
    cmake --preset asan ${kokkos_dir:+-DKokkos_DIR="$kokkos_dir"} >/dev/null &&
      cmake --build build-asan -j "${WAVEL_JOBS:-$(nproc)}" --target wavel_tests wavel-dse
  fi
}
if [ "${WAVEL_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "[test] sanitizer pass: ASan+UBSan build of wavel_tests and wavel-dse ($san_dir), one rank"
  export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false OMP_NUM_THREADS=1 HWLOC_COMPONENTS=-gl
  if sanitized_build; then
    stage "sanitized unit tests" "$san_dir/tests/wavel_tests"
    stage "sanitized hostile inputs" sanitized_script hostile
    # test_cli.sh takes about 4 min under ASan.
    if [ "${WAVEL_SANITIZE_CLI:-0}" = 1 ]; then
      stage "sanitized CLI script" sanitized_script cli
    else
      skipped+=("sanitized CLI script: WAVEL_SANITIZE_CLI is not 1 (about 4 min more; the CLI script runs unsanitized in ctest)")
    fi
  else
    failed+=("sanitizer build")
  fi
else
  skipped+=("sanitizer pass: WAVEL_SKIP_SANITIZERS=1")
fi

fuzz_seconds=${WAVEL_FUZZ_SECONDS:-5}
if [ "$fuzz_seconds" = 0 ]; then
  skipped+=("fuzz smoke run: WAVEL_FUZZ_SECONDS=0")
elif [ "$san_dir" = build-asan ]; then
  skipped+=("fuzz smoke run: clang++ is not installed and WAVEL_SKIP_APT=1 forbids installing it")
else
  echo "[test] fuzz smoke run: $fuzz_seconds s per target"
  stage "fuzz smoke run" bash scripts/fuzz.sh "$fuzz_seconds"
fi

for s in "${skipped[@]}"; do echo "[test] skipped: $s"; done
for f in "${failed[@]}"; do echo "[test] FAILED: $f"; done
echo "[test] verdict: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped stages${ctest_counts:+ (ctest: $ctest_counts)}"
[ "${#failed[@]}" = 0 ]
