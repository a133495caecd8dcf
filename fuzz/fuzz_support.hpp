// Shared by the fuzz targets: MPI for the library's collectives, Kokkos, and a per-process scratch file.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <cstdio>
#include <string>

namespace wavel::fuzz {

/// MPI (singleton) and Kokkos, started once; the library's readers may use either.
inline void start_runtime() {
  static const bool started = [] {
    int argc = 0;
    char** argv = nullptr;
    MPI_Init(&argc, &argv);
    Kokkos::InitArguments args;
    args.num_threads = 1;
    args.disable_warnings = true;
    Kokkos::initialize(args);
    return true;
  }();
  (void)started;
}

/// Writes the input to a file of this process's own (in /dev/shm when it exists) and returns its path.
inline std::string scratch_file(const std::uint8_t* data, std::size_t size, const char* suffix) {
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  const std::string path = dir + "/wavel-fuzz-" + std::to_string(getpid()) + suffix;
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    if (size > 0) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace wavel::fuzz
