// results.h5 read in a forked child with resource limits (libhdf5 1.10 is not safe on forged files):
// the child streams the tables back through a pipe, the parent bounds time and size and checks them.
#include "wavel/io/sandboxed_read.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <new>
#include <type_traits>
#include <variant>

#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"

namespace wavel::io {
namespace {

constexpr char kTables = 'T';  // first byte of a reply: tables follow
constexpr char kError = 'E';   // ... or an error code and message

// Smallest encodings, so that a count is checked against the bytes before anything is allocated.
constexpr std::size_t kMinTableBytes = 2 * sizeof(std::uint64_t);
constexpr std::size_t kMinColumnBytes = 3 * sizeof(std::uint64_t) + 1;

std::string quoted_file(const std::string& path) { return "results file '" + path + "'"; }

/// Address space the process holds now (Linux), so the child's limit is on what it adds: a
/// sanitizer build reserves terabytes up front.
std::uint64_t address_space_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t pages = 0;
  if (!(statm >> pages)) return 0;
  return pages * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

void set_limit(int resource, rlim_t soft, rlim_t hard) {
  const rlimit limit{soft, hard};
  (void)setrlimit(resource, &limit);  // best effort: the parent's timeout still holds
}

bool write_all(int fd, const std::string& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

/// The child: limits, read, answer, _exit (never returns into the caller's stack or atexit handlers).
[[noreturn]] void child_main(int fd, const std::string& path, const std::vector<std::string>& table_names,
                             const SandboxLimits& limits, const TablePart& part) {
  std::string reply;
  try {
#ifdef __linux__
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
    // A crash ends the child at once: no handler of the parent's (Open MPI's backtrace printer, a
    // sanitizer's report) runs on libhdf5's broken state.
    for (const int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) ::signal(sig, SIG_DFL);
    // Its answer goes through the pipe; whatever libhdf5 (or a sanitizer) prints on a forged file is
    // noise the parent's message replaces.
    if (const int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC); null_fd >= 0) ::dup2(null_fd, 2);
    set_limit(RLIMIT_CORE, 0, 0);
    set_limit(RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 1);
    const rlim_t memory = address_space_bytes() + limits.memory_bytes;
    set_limit(RLIMIT_AS, memory, memory);
    if (limits.child_setup) limits.child_setup();
    std::vector<Table> tables;
    for (const auto& name : table_names) tables.push_back(read_table_h5(path, name, part));
    reply = kTables + encode_tables(tables);
  } catch (const wavel::Error& e) {
    Packer p;
    p.put(static_cast<std::int32_t>(e.code()));
    p.put(std::string(e.what()));
    reply = kError + p.take();
  } catch (const std::bad_alloc&) {
    Packer p;
    p.put(static_cast<std::int32_t>(ExitCode::data_error));
    p.put(quoted_file(path) + " could not be read: it needs more than the reader's memory limit of " +
          std::to_string(limits.memory_bytes >> 20) + " MiB (corrupt or crafted file)");
    reply = kError + p.take();
  } catch (...) {
    _exit(3);
  }
  _exit(write_all(fd, reply) ? 0 : 4);
}

/// Everything the child sends until it closes the pipe; false when the deadline or the size cap
/// came first.
bool read_reply(int fd, std::chrono::steady_clock::time_point deadline, std::uint64_t max_bytes, std::string& reply,
                bool& too_large) {
  char buffer[1 << 16];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 1 << 30)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // re-checks the deadline
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return true;  // closed: the child exited (or died)
    if (n < 0) return false;
    if (reply.size() + static_cast<std::size_t>(n) > max_bytes) {
      too_large = true;
      return false;
    }
    reply.append(buffer, static_cast<std::size_t>(n));
  }
}

/// The child's wait status; a child still running at `deadline` is killed first.
int reap(pid_t child, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return 0;
    if (std::chrono::steady_clock::now() >= deadline) break;
    ::usleep(200);  // the pipe closed as it exited: it is about to be reapable
  }
  ::kill(child, SIGKILL);
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

[[noreturn]] void throw_child_error(const std::string& reply, const std::string& path) {
  const std::string body = reply.substr(1);
  ExitCode code{};
  std::string message;
  try {
    Unpacker u(body, ExitCode::data_error);
    code = static_cast<ExitCode>(u.get<std::int32_t>());
    u.get(message);
  } catch (const wavel::Error& e) {
    throw InputDataError(quoted_file(path) + ": the reader's answer is malformed: " + e.what());
  }
  if (code == ExitCode::no_input) throw InputMissingError(message);
  if (code == ExitCode::data_error) throw InputDataError(message);
  throw InternalError(message);
}

}  // namespace

std::string encode_tables(const std::vector<Table>& tables) {
  Packer p;
  p.put(static_cast<std::uint64_t>(tables.size()));
  for (const auto& table : tables) {
    p.put(table.name);
    p.put(static_cast<std::uint64_t>(table.columns.size()));
    for (const auto& column : table.columns) {
      p.put(column.name);
      p.put(column.units);
      // TextRows go as kind 2, the strings they make.
      p.put(static_cast<std::uint8_t>(std::holds_alternative<TextRows>(column.values) ? 2 : column.values.index()));
      std::visit(
          [&](const auto& values) {
            p.put(static_cast<std::uint64_t>(values.size()));
            if constexpr (std::is_same_v<std::decay_t<decltype(values)>, TextRows>) {
              for (std::size_t i = 0; i < values.count; ++i) p.put(values.at(i));
            } else {
              for (const auto& v : values) p.put(v);
            }
          },
          column.values);
    }
  }
  return p.take();
}

std::vector<Table> decode_tables(const std::string& bytes, const std::string& path) {
  const std::string where = quoted_file(path) + ": the reader's answer is malformed: ";
  try {
    Unpacker u(bytes, ExitCode::data_error);
    std::vector<Table> tables(u.count(kMinTableBytes));
    for (auto& table : tables) {
      u.get(table.name);
      table.columns.resize(u.count(kMinColumnBytes));
      for (auto& column : table.columns) {
        u.get(column.name);
        u.get(column.units);
        switch (u.get<std::uint8_t>()) {
          case 0: {
            std::vector<double> v(u.count(sizeof(double)));
            for (auto& x : v) u.get(x);
            column.values = std::move(v);
            break;
          }
          case 1: {
            std::vector<std::int64_t> v(u.count(sizeof(std::int64_t)));
            for (auto& x : v) u.get(x);
            column.values = std::move(v);
            break;
          }
          case 2: {
            std::vector<std::string> v(u.count(sizeof(std::uint64_t)));
            for (auto& x : v) u.get(x);
            column.values = std::move(v);
            break;
          }
          default: throw InputDataError("unknown column kind");
        }
        const auto size = [](const Column& c) { return std::visit([](const auto& v) { return v.size(); }, c.values); };
        if (size(column) != size(table.columns.front())) throw InputDataError("columns of different lengths");
      }
    }
    if (!u.done()) throw InputDataError("bytes left over");
    return tables;
  } catch (const wavel::Error& e) {
    throw InputDataError(where + e.what());
  }
}

std::vector<Table> read_tables_h5_sandboxed(const std::string& path, const std::vector<std::string>& table_names,
                                            const SandboxLimits& limits, const TablePart& part) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw InternalError("cannot create a pipe to read " + quoted_file(path) + ": " + std::strerror(errno));
  }
  const pid_t child = ::fork();
  if (child < 0) {
    const int saved = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw InternalError("cannot fork a reader for " + quoted_file(path) + ": " + std::strerror(saved));
  }
  if (child == 0) {
    ::close(fds[0]);
    child_main(fds[1], path, table_names, limits, part);
  }
  ::close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits.wall_seconds);
  std::string reply;
  bool too_large = false;
  // The answer holds at most what the child could allocate, plus its framing.
  const bool complete = read_reply(fds[0], deadline, limits.memory_bytes + 4096, reply, too_large);
  ::close(fds[0]);
  const int status = reap(child, complete ? deadline : std::chrono::steady_clock::now());
  const std::string failed = quoted_file(path) + " could not be read: ";
  if (too_large) throw InputDataError(failed + "the tables read exceed the reader's memory limit");
  if (!complete) {
    throw InputDataError(failed + "the HDF5 library did not finish reading it within " +
                         std::to_string(limits.wall_seconds) + " s (corrupt or crafted file)");
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const std::string what = sig == SIGXCPU ? "used more than " + std::to_string(limits.cpu_seconds) + " s of CPU"
                                            : std::string("crashed (signal ") + std::to_string(sig) + ", " +
                                                  ::strsignal(sig) + ")";
    throw InputDataError(failed + "the HDF5 library " + what + " reading it (corrupt or crafted file)");
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty()) {
    throw InputDataError(failed + "the HDF5 library failed reading it (reader exit status " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                         "; corrupt or crafted file)");
  }
  if (reply[0] == kError) throw_child_error(reply, path);
  if (reply[0] != kTables) throw InputDataError(failed + "the reader's answer is malformed");
  reply.erase(0, 1);
  std::vector<Table> tables = decode_tables(reply, path);
  if (tables.size() != table_names.size()) throw InputDataError(failed + "the reader answered the wrong tables");
  for (std::size_t i = 0; i < tables.size(); ++i) {
    if (tables[i].name != table_names[i]) throw InputDataError(failed + "the reader answered the wrong tables");
  }
  return tables;
}

}  // namespace wavel::io
