#!/usr/bin/env bash
# Installs wavel-dse's dependencies and builds it in Release mode; safe to re-run.
#
# Environment:
#   KOKKOS_ROOT=DIR       use a site Kokkos install instead of building one (cluster users)
#   WAVEL_SKIP_APT=1      do not call apt-get (no root, or packages come from modules)
#   WAVEL_BUILD_DIR=DIR   build directory (default: build)
#   WAVEL_CMAKE_ARGS=...  extra arguments for the CMake configure step
#   WAVEL_JOBS=N          parallel build jobs (default: nproc)
#   WAVEL_BUILD_TARGET=T  build only target T (e.g. wavel-dse); default: everything
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build_dir=${WAVEL_BUILD_DIR:-build}
jobs=${WAVEL_JOBS:-$(nproc)}
deps="$root/.deps"
kokkos_prefix="$deps/kokkos"

say()  { printf '[setup] %s\n' "$*"; }
loud() { printf '\n[setup] ################################################################\n[setup] %s\n[setup] ################################################################\n\n' "$*" >&2; }

packages=(g++ cmake make git xz-utils ca-certificates
          libopenmpi-dev openmpi-bin libhdf5-openmpi-dev hdf5-tools
          libcli11-dev libyaml-cpp-dev libeigen3-dev doctest-dev libbenchmark-dev
          python3 python3-h5py python3-numpy python3-matplotlib)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else return 1; fi
}

apt_install() {
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "$@"
}

if [ "${WAVEL_SKIP_APT:-0}" != 1 ]; then
  say "installing Debian packages"
  as_root apt-get update -q || { echo "[setup] error: apt-get update failed (need root or sudo; set WAVEL_SKIP_APT=1 to skip)" >&2; exit 1; }
  apt_install "${packages[@]}"
else
  say "WAVEL_SKIP_APT=1: not installing packages"
fi

# Kokkos 3.4.1 with OpenMP+Serial, built from Debian's own trilinos source (Debian's binary is Serial-only).
build_kokkos() {
  local src="$deps/src" sources=/etc/apt/sources.list.d/debian.sources
  mkdir -p "$src"
  if ! ls "$src"/trilinos_*.orig.tar.* >/dev/null 2>&1; then
    if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
      if [ -f "$sources" ]; then
        say "adding a deb-src entry derived from $sources"
        sed 's/^Types: deb$/Types: deb-src/' "$sources" | as_root tee /etc/apt/sources.list.d/wavel-deb-src.sources >/dev/null
      elif grep -qs '^deb ' /etc/apt/sources.list; then
        # One-line format (minimal images and debootstrap chroots).
        say "adding deb-src entries derived from /etc/apt/sources.list"
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list | as_root tee /etc/apt/sources.list.d/wavel-deb-src.list >/dev/null
      else
        echo "[setup] neither $sources nor /etc/apt/sources.list to derive a deb-src entry from" >&2; return 1
      fi
      as_root apt-get update -q
    fi
    say "downloading Debian's trilinos source (about 166 MB)"
    (cd "$src" && apt-get source --download-only trilinos) || return 1
  fi
  local tarball top
  tarball=$(ls "$src"/trilinos_*.orig.tar.* | head -1)
  top=$(tar -tf "$tarball" | head -1 | cut -d/ -f1)
  rm -rf "$src/kokkos" "$src/$top"
  say "extracting packages/kokkos from $(basename "$tarball")"
  tar -xf "$tarball" -C "$src" "$top/packages/kokkos" || return 1
  mv "$src/$top/packages/kokkos" "$src/kokkos" && rm -rf "$src/$top"
  cmake -S "$src/kokkos" -B "$src/kokkos-build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_INSTALL_PREFIX="$kokkos_prefix" -DCMAKE_CXX_STANDARD=17 -DBUILD_SHARED_LIBS=ON \
        -DKokkos_ENABLE_OPENMP=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_TESTS=OFF >"$src/kokkos-configure.log" 2>&1 \
    || { tail -20 "$src/kokkos-configure.log" >&2; return 1; }
  cmake --build "$src/kokkos-build" -j "$jobs" >"$src/kokkos-build.log" 2>&1 || { tail -20 "$src/kokkos-build.log" >&2; return 1; }
  cmake --install "$src/kokkos-build" >/dev/null || return 1
  rm -rf "$src/kokkos-build" "$src/kokkos"
  touch "$kokkos_prefix/.wavel-complete"
}

kokkos_root=${KOKKOS_ROOT:-}
if [ -n "$kokkos_root" ]; then
  say "using site Kokkos at $kokkos_root (KOKKOS_ROOT)"
elif [ -f "$kokkos_prefix/.wavel-complete" ]; then
  say "using cached Kokkos (OpenMP+Serial) at $kokkos_prefix"
  kokkos_root=$kokkos_prefix
else
  say "building Kokkos 3.4.1 (OpenMP+Serial) into $kokkos_prefix"
  if build_kokkos; then
    kokkos_root=$kokkos_prefix
  else
    rm -rf "$kokkos_prefix"
    loud "WARNING: building Kokkos with OpenMP failed. Falling back to Debian's SERIAL-ONLY Kokkos
[setup] (libtrilinos-kokkos-dev): wavel-dse will run single-threaded per rank."
    if [ "${WAVEL_SKIP_APT:-0}" != 1 ]; then apt_install libtrilinos-kokkos-dev; fi
    kokkos_root=/usr
  fi
fi

say "configuring ($build_dir, Release)"
# shellcheck disable=SC2086
cmake -S "$root" -B "$root/$build_dir" -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos_root" ${WAVEL_CMAKE_ARGS:-}
say "building ${WAVEL_BUILD_TARGET:-all targets} with $jobs jobs"
cmake --build "$root/$build_dir" -j "$jobs" ${WAVEL_BUILD_TARGET:+--target "$WAVEL_BUILD_TARGET"}
say "done: $root/$build_dir/wavel-dse"
