// The parallel environment of a run (MPI, Kokkos, Slurm) and rank-agreed helpers.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>
#include <vector>


namespace wavel::engine {

/// Facts about the parallel environment, recorded as provenance.
struct RunContext {
  MPI_Comm comm = MPI_COMM_WORLD;
  int rank = 0;
  int ranks = 1;
  std::string kokkos_backend;  ///< name of Kokkos' default execution space
  int kokkos_threads = 1;      ///< its concurrency on this rank
  std::string slurm_job_id;    ///< SLURM_JOB_ID, or "" outside Slurm
};

/// Reads the context; Kokkos must be initialised.
RunContext make_run_context(MPI_Comm comm);

/// Rank `root` reads the whole file and broadcasts the bytes, so every rank validates the same text.
/// Throws wavel::InputMissingError on every rank if it cannot be read, naming the file as `what`.
std::string read_file_on_root(const std::string& path, MPI_Comm comm, const std::string& what = "config file",
                              int root = 0);

/// Broadcasts `text` from `root` (any size) into `text` on every rank.
void broadcast_string(std::string& text, MPI_Comm comm, int root = 0);

/// Exclusive use of an output directory by one run: rank 0 holds an flock on `<dir>/.wavel-dse.lock`
/// (which names the holder: pid, host, start time) until this object is destroyed or released.
class OutputDirLock {
 public:
  OutputDirLock() = default;
  OutputDirLock(OutputDirLock&& other) noexcept;
  OutputDirLock& operator=(OutputDirLock&& other) noexcept;
  OutputDirLock(const OutputDirLock&) = delete;
  OutputDirLock& operator=(const OutputDirLock&) = delete;
  ~OutputDirLock();

 private:
  friend OutputDirLock make_output_dir(const std::string& dir, MPI_Comm comm);
  int fd_ = -1;
};

/// Creates `dir` (and its parents) on rank 0 and locks it; every rank throws OutputError if that
/// fails, or wavel::Error with exit code 69 (ExitCode::busy) naming the holder if another run has it.
[[nodiscard]] OutputDirLock make_output_dir(const std::string& dir, MPI_Comm comm);

/// Runs `action` on `root` only and makes its outcome collective: if it throws a wavel::Error,
/// every rank throws an error with the same exit code and message.
void on_root_agreed(MPI_Comm comm, int root, const std::function<void()>& action);

}  // namespace wavel::engine
