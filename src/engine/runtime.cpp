// MPI/Kokkos/Slurm facts and root-only actions whose failure every rank sees.
#include "wavel/engine/runtime.hpp"

#include <Kokkos_Core.hpp>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <optional>
#include <cstring>
#include <ctime>
#include <utility>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <fstream>
#include <sstream>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/input_file.hpp"
#include "wavel/common/pack.hpp"
#include "wavel/common/output_file.hpp"

namespace wavel::engine {

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

OutputDirLock::OutputDirLock(OutputDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

OutputDirLock& OutputDirLock::operator=(OutputDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

OutputDirLock::~OutputDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays, so no run races on its removal
}

OutputDirLock make_output_dir(const std::string& dir, MPI_Comm comm) {
  OutputDirLock lock;
  on_root_agreed(comm, 0, [&] {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir)) {
      throw OutputError("cannot create output directory '" + dir + "': " + ec.message());
    }
    const std::string path = (std::filesystem::path(dir) / ".wavel-dse.lock").string();
    // Not created afresh: the file outlives runs so that two of them never race on its removal.
    const int fd = open_regular_file(path, O_RDWR | O_CREAT);
    if (fd < 0) throw OutputError("cannot create lock file '" + path + "': " + open_error_text(errno));
    const int lock_errno = ::flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : errno;
    if (lock_errno == ENOLCK || lock_errno == EOPNOTSUPP || lock_errno == ENOSYS) {
      // A file system without flock (old NFS): run unlocked rather than not at all.
      std::cerr << "wavel-dse: warning: cannot lock '" << path << "' (" << std::strerror(lock_errno)
                << "); concurrent runs into this directory will not be detected\n";
    } else if (lock_errno != 0) {
      const int saved = lock_errno;
      std::string holder(256, '\0');
      const ssize_t n = ::pread(fd, holder.data(), holder.size(), 0);
      holder.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
      while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\0')) holder.pop_back();
      // Anyone may write the note: it reaches the terminal only as printable ASCII.
      for (char& c : holder) {
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
      }
      ::close(fd);
      if (saved == EWOULDBLOCK) {
        throw Error(ExitCode::busy, "output directory '" + dir + "' is in use by another run (" +
                                        (holder.empty() ? std::string("holder unknown") : holder) + "; lock file '" +
                                        path + "'); wait for it or choose another directory with -o");
      }
      throw OutputError("cannot lock '" + path + "': " + std::strerror(saved));
    }
    char host[256] = "?";
    ::gethostname(host, sizeof host - 1);
    char started[32] = "?";
    const std::time_t now = std::time(nullptr);
    std::tm utc{};
    if (::gmtime_r(&now, &utc) != nullptr) std::strftime(started, sizeof started, "%Y-%m-%d %H:%M:%S UTC", &utc);
    const std::string me = "pid " + std::to_string(::getpid()) + " on host " + host + ", started " + started + "\n";
    // Overwrite, then cut: truncating first would leave an empty note if the disk is full. A disk too
    // full for these few bytes cannot take the results either, so stop now, before any work.
    if (::pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size()) ||
        ::ftruncate(fd, static_cast<off_t>(me.size())) != 0 || ::fsync(fd) != 0) {
      const int saved = errno;
      ::unlink(path.c_str());  // still ours (flock held): no empty or stale note is left behind
      ::close(fd);
      throw OutputError("cannot write the lock file '" + path + "': " + std::strerror(saved) +
                        " (no results could be written to '" + dir + "' either)");
    }
    lock.fd_ = fd;
  });
  return lock;
}

std::string read_file_on_root(const std::string& path, MPI_Comm comm, const std::string& what, int root) {
  std::string text;
  on_root_agreed(comm, root, [&] {
    text = read_input_file(path, std::size_t{256} << 20, what);
  });
  broadcast_string(text, comm, root);
  return text;
}

}  // namespace wavel::engine
