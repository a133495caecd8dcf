// The wavel-dse command line: subcommand dispatch, options, and the mapping of errors to exit codes.
#pragma once

#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

namespace wavel::cli {

/// "wavel-dse 0.1.0 (git <hash>[-dirty])".
std::string version_string();

/// Runs `wavel-dse args...` (args exclude the program name) and returns the process exit code.
/// MPI must be initialised. Kokkos is initialised here with the --kokkos-* arguments unless it
/// already is. Output goes to `out` and diagnostics to `err`, on rank 0 only.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, MPI_Comm comm);

}  // namespace wavel::cli
