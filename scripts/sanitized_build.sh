#!/usr/bin/env bash
# Builds TARGETs in build-fuzz with clang, ASan+UBSan and libFuzzer's coverage hooks: one build serves
# the fuzz targets (scripts/fuzz.sh) and the sanitized unit tests and executable (scripts/test.sh),
# so the library is compiled with sanitizers once. Installs Debian's clang (with libomp-dev, whose
# omp.h Kokkos' OpenMP headers include) when it is missing, unless WAVEL_SKIP_APT=1.
#
#   scripts/sanitized_build.sh TARGET...     (WAVEL_JOBS=N build jobs, default nproc)
#   scripts/sanitized_build.sh --check       exit 0 if clang and omp.h are usable, else 1
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
have_clang() { command -v clang++ >/dev/null && echo '#include <omp.h>' | clang++ -fopenmp -x c++ -fsyntax-only - 2>/dev/null; }
if [ "${1:-}" = --check ]; then have_clang; exit; fi
if ! have_clang; then
  if [ "${WAVEL_SKIP_APT:-0}" = 1 ]; then
    echo "[sanitized build] clang++ with omp.h is missing and WAVEL_SKIP_APT=1 forbids installing it" >&2; exit 1
  fi
  echo "[sanitized build] installing clang and its OpenMP headers (Debian)" >&2
  as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
  as_root apt-get update -q && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends \
    clang libclang-rt-dev libomp-dev
fi
# The Kokkos the main build uses (scripts/setup.sh: .deps/kokkos or KOKKOS_ROOT).
kokkos_dir=$(sed -n 's/^Kokkos_DIR:PATH=//p' build/CMakeCache.txt 2>/dev/null || true)
[ -n "$kokkos_dir" ] || kokkos_dir=${KOKKOS_ROOT:-$root/.deps/kokkos}
# fuzzer-no-link: coverage hooks without libFuzzer's main, so the tests and wavel-dse link too.
flags="-gline-tables-only -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
cmake -S "$root" -B build-fuzz -DCMAKE_BUILD_TYPE=None -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
      -DWAVEL_BUILD_FUZZ=ON -DWAVEL_BUILD_TESTS=ON -DWAVEL_BUILD_BENCH=OFF \
      -DKokkos_DIR="$kokkos_dir" -DKokkos_ROOT="$kokkos_dir" >/dev/null
cmake --build build-fuzz -j "${WAVEL_JOBS:-$(nproc)}" --target "$@"
