// wavel-dse entry point: MPI lifetime only; everything else lives in the library.
#include <mpi.h>

#include <iostream>
#include <string>
#include <vector>

#include "wavel/cli/cli.hpp"

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);  // the hub thread talks MPI beside the worker
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = wavel::cli::run_cli(args, std::cout, std::cerr, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
