// wavel-dse entry point: MPI lifetime only; everything else lives in the library.
#include <mpi.h>

#include <iostream>
#include <string>
#include <vector>

#include "wavel/cli/cli.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = wavel::cli::run_cli(args, std::cout, std::cerr, MPI_COMM_WORLD);
  MPI_Finalize();
  return code;
}
