// wavel-dse entry point: MPI lifetime only; everything else lives in the library.
#include <mpi.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "wavel/cli/cli.hpp"

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // The search allocates and frees large candidate vectors all the time; glibc would hand each one
  // back to the kernel and fault it in again (about 10 % of a quickstart run). Keep freed memory.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
#endif
  // MPI start-up without waits on name lookups (a user's own settings win). hwloc's display probe
  // resolves "localhost" for each X display it tries; without /etc/hosts (a minimal Debian chroot)
  // each is a DNS query, and a lost one stalled the start 5 s. Started without a launcher (mpirun,
  // srun), Open MPI's singleton forks a daemon that probes again; an isolated singleton needs none.
  setenv("HWLOC_COMPONENTS", "-gl", 0);
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr &&
      std::getenv("PMI_RANK") == nullptr) {
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the hub thread talks MPI beside the worker
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = wavel::cli::run_cli(args, std::cout, std::cerr, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
