// Test runner: MPI, then Kokkos, then doctest; output from rank 0 only, result reduced over ranks.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <fstream>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the hub thread talks MPI beside the worker
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int result = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    doctest::Context context(argc, argv);
    std::ofstream devnull;
    if (rank != 0) {
      devnull.open("/dev/null");
      context.setCout(&devnull);
    }
    result = context.run();
  }
  int worst = 0;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
