// MPI/Kokkos/Slurm facts and root-only actions whose failure every rank sees.
#include "wavel/driver/runtime.hpp"

#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel::driver {

RunContext make_run_context(MPI_Comm comm) {
  RunContext c;
  c.comm = comm;
  MPI_Comm_rank(comm, &c.rank);
  MPI_Comm_size(comm, &c.ranks);
  c.kokkos_backend = Kokkos::DefaultExecutionSpace::name();
  c.kokkos_threads = Kokkos::DefaultExecutionSpace().concurrency();
  if (const char* job = std::getenv("SLURM_JOB_ID")) c.slurm_job_id = job;
  return c;
}

void broadcast_string(std::string& text, MPI_Comm comm, int root) {
  unsigned long long size = text.size();
  MPI_Bcast(&size, 1, MPI_UNSIGNED_LONG_LONG, root, comm);
  text.resize(size);
  // Large configs are unlikely, but MPI counts are int: send in chunks.
  constexpr std::size_t kChunk = 1 << 30;
  for (std::size_t offset = 0; offset < size; offset += kChunk) {
    const int count = static_cast<int>(std::min<std::size_t>(kChunk, size - offset));
    MPI_Bcast(text.data() + offset, count, MPI_CHAR, root, comm);
  }
}

void on_root_agreed(MPI_Comm comm, int root, const std::function<void()>& action) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int code = 0;
  std::string message;
  if (rank == root) {
    try {
      action();
    } catch (const Error& e) {
      code = static_cast<int>(e.code());
      message = e.what();
    } catch (const std::exception& e) {
      code = static_cast<int>(ExitCode::internal);
      message = e.what();
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, root, comm);
  if (code == 0) return;
  broadcast_string(message, comm, root);
  throw Error(static_cast<ExitCode>(code), message);
}

void make_output_dir(const std::string& dir, MPI_Comm comm) {
  on_root_agreed(comm, 0, [&] {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
      throw OutputError("cannot create output directory '" + dir + "': " + ec.message());
    }
  });
}

std::string read_file_on_root(const std::string& path, MPI_Comm comm, int root) {
  std::string text;
  on_root_agreed(comm, root, [&] {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputMissingError("cannot read config file '" + path + "'");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad()) throw InputMissingError("error while reading '" + path + "'");
    text = bytes.str();
  });
  broadcast_string(text, comm, root);
  return text;
}

}  // namespace wavel::driver
