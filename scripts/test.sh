#!/usr/bin/env bash
# The test command: setup, build, then every CTest test (MPI tests at 1, 2 and 4 ranks), then a
# sanitizer pass (ASan+UBSan, preset asan) of the unit tests on one rank and of the executable under
# the hostile-input script (and the CLI script with WAVEL_SANITIZE_CLI=1), then a short fuzz smoke run
# of every input reader (scripts/fuzz.sh, which installs clang from Debian when it is missing).
# It ends with a verdict line: the stages passed, failed and skipped (each skipped one with its reason).
#   WAVEL_SKIP_SANITIZERS=1  skip the sanitizer pass     WAVEL_FUZZ_SECONDS=N  per fuzz target (default 5; 0 skips)
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
stage "ctest" bash -c 'ctest --test-dir build --output-on-failure --timeout 600 "$@" | tee "$0"; exit "${PIPESTATUS[0]}"' "$ctest_log" "$@"
ctest_counts=$(grep -Eo "[0-9]+ tests failed out of [0-9]+" "$ctest_log" | tail -1)
rm -f "$ctest_log"

sanitized_script() {  # sanitized_script NAME: tests/cli/test_NAME.sh under build-asan/wavel-dse, clean of reports
  local t=$1 log="build-asan/cli-$1.log"
  echo "[test] sanitizer pass: tests/cli/test_$t.sh with build-asan/wavel-dse"
  if ! bash "tests/cli/test_$t.sh" build-asan/wavel-dse "$root" "build-asan/cli-$t-tmp" >"$log" 2>&1; then
    grep -E "FAIL|ERROR|runtime error" "$log" | head -20; return 1
  fi
  if grep -qE "ERROR: AddressSanitizer|runtime error:" "$log"; then
    grep -E -A5 "ERROR: AddressSanitizer|runtime error:" "$log" | head -40; return 1
  fi
}
if [ "${WAVEL_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo "[test] sanitizer pass: ASan+UBSan build of wavel_tests and wavel-dse (build-asan), one rank"
  kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' build/CMakeCache.txt)
  export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_PROC_BIND=false OMP_NUM_THREADS=1 HWLOC_COMPONENTS=-gl
  if cmake --preset asan ${kokkos_dir:+-DKokkos_DIR="$kokkos_dir"} >/dev/null &&
     cmake --build build-asan -j "${WAVEL_JOBS:-$(nproc)}" --target wavel_tests wavel-dse; then
    stage "sanitized unit tests" build-asan/tests/wavel_tests
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
elif ! command -v clang++ >/dev/null && [ "${WAVEL_SKIP_APT:-0}" = 1 ]; then
  skipped+=("fuzz smoke run: clang++ is not installed and WAVEL_SKIP_APT=1 forbids installing it")
else
  echo "[test] fuzz smoke run: $fuzz_seconds s per target"
  stage "fuzz smoke run" bash scripts/fuzz.sh "$fuzz_seconds"
fi

for s in "${skipped[@]}"; do echo "[test] skipped: $s"; done
for f in "${failed[@]}"; do echo "[test] FAILED: $f"; done
echo "[test] verdict: ${#passed[@]} passed, ${#failed[@]} failed, ${#skipped[@]} skipped stages${ctest_counts:+ (ctest: $ctest_counts)}"
[ "${#failed[@]}" = 0 ]
