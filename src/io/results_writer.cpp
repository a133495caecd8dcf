// The atomic writer of a run's result files: results.h5 and the text files published with it.
//
// Root writes every file, the HDF5 one through parallel HDF5's MPI-IO driver on MPI_COMM_SELF; the
// other ranks wait for the outcome. The tables are gathered on root anyway, and HDF5 1.10.8 cannot
// survive a write that fails on one rank only: inside its own collective flush the ranks then take
// different paths and wait for each other forever (seen with 2 ranks on a full disk).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/common/output_file.hpp"
#include "wavel/io/hdf5.hpp"
#include "wavel/io/results.hpp"

namespace wavel::io {

namespace {

/// Why root's write stopped; the kind decides which exception every rank throws.
enum class Failure : std::uint64_t { none = 0, output = 1, internal = 2, polled = 3 };

/// What root holds free on the results' file system while HDF5 writes: the metadata of our files
/// is a few hundred KiB (h5stat), and closing after a failed write may have to write all of it.
constexpr off_t kCloseHeadroomBytes = off_t{4} << 20;

std::string reserve_path(const std::string& partial) { return partial + ".reserve"; }

/// The checks that give a clear message before HDF5 is involved, and the headroom reservation.
void prepare_target(const std::string& path, const std::string& partial, const std::string& prefix) {
  namespace fs = std::filesystem;
  fs::path directory = fs::path(path).parent_path();
  if (directory.empty()) directory = ".";
  std::error_code ec;
  if (!fs::exists(directory, ec)) throw OutputError(prefix + "directory '" + directory.string() + "' does not exist");
  if (!fs::is_directory(directory, ec)) throw OutputError(prefix + "'" + directory.string() + "' is not a directory");
  if (fs::is_directory(path, ec)) throw OutputError(prefix + "a directory of that name exists");
  // Creating the file is the only reliable writability test (access() says yes to root).
  const int fd = create_fresh_file(partial, O_WRONLY);
  if (fd < 0) throw OutputError(prefix + "cannot create '" + partial + "': " + open_error_text(errno));
  ::close(fd);
  // HDF5 creates the file itself, exclusively (h5::create_file), so the test file goes again.
  ::unlink(partial.c_str());
  // HDF5 1.10 flushes its metadata again when closing after a failed write, and a close that fails
  // leaves a half-destroyed file that crashes MPI_Finalize: hold space that the close can have.
  const std::string reserve = reserve_path(partial);
  const int reserve_fd = create_fresh_file(reserve, O_WRONLY);
  const int reserved = reserve_fd < 0 ? errno : ::posix_fallocate(reserve_fd, 0, kCloseHeadroomBytes);
  if (reserve_fd >= 0) ::close(reserve_fd);
  if (reserved != 0 && reserved != EOPNOTSUPP && reserved != EINVAL) {
    ::unlink(reserve.c_str());
    ::unlink(partial.c_str());
    throw OutputError(prefix + "cannot reserve " + std::to_string(kCloseHeadroomBytes >> 20) +
                      " MiB of headroom in '" + directory.string() + "': " + std::strerror(reserved));
  }
}

void write_contents(const h5::Handle& file, const std::vector<Attribute>& attributes, const std::vector<Table>& tables,
                    const std::function<void()>& poll) {
  {
    h5::Handle root_group = h5::open_group(file, "/");
    for (const auto& attribute : attributes) {
      std::visit([&](const auto& value) { h5::write_attribute(root_group, attribute.name, value); }, attribute.value);
    }
  }
  for (const auto& table : tables) {
    const std::size_t rows = table.rows();
    h5::Handle group = h5::create_group(file, table.name);
    std::vector<std::string> names;
    for (const auto& column : table.columns) names.push_back(column.name);
    h5::write_attribute(group, "columns", names);
    for (const auto& column : table.columns) {
      if (poll) poll();
      std::visit([&](const auto& values) { h5::write_column(group, column.name, values, rows, column.units, MPI_COMM_SELF, 0); },
                 column.values);
    }
    group.close();
  }
}

/// Writes the HDF5 file complete under `path`.partial, or throws with nothing left behind.
void write_h5_partial(const std::string& path, const std::vector<Attribute>& attributes,
                      const std::vector<Table>& tables, const std::function<void()>& poll) {
  const std::string partial = path + ".partial";
  const std::string prefix = "cannot write results file '" + path + "': ";
  for (const auto& table : tables) {
    try {
      (void)table.rows();
    } catch (const InternalError& e) {
      throw InternalError(prefix + e.what());
    }
  }
  prepare_target(path, partial, prefix);
  std::exception_ptr failure;
  try {
    h5::Handle file = h5::create_file(partial, MPI_COMM_SELF);
    try {
      write_contents(file, attributes, tables, poll);
    } catch (...) {
      failure = std::current_exception();
    }
    // Flush first, where a failure leaves the file intact; then release the headroom (and, after a
    // failure, the space the partial file holds), so that closing, which writes whatever is still
    // dirty, succeeds.
    const herr_t flushed = H5Fflush(file.id(), H5F_SCOPE_GLOBAL);
    const std::string flush_error = flushed < 0 ? h5::error_stack_text() : std::string();
    ::unlink(reserve_path(partial).c_str());
    if ((failure || flushed < 0) && ::truncate(partial.c_str(), 0) != 0) {
      // Nothing more to free than the headroom.
    }
    file.close();
    if (!failure && flushed < 0) throw OutputError("HDF5 H5Fflush failed for '" + partial + "': " + flush_error);
  } catch (...) {
    if (!failure) failure = std::current_exception();
  }
  if (!failure) return;
  ::unlink(partial.c_str());
  ::unlink(reserve_path(partial).c_str());
  try {
    std::rethrow_exception(failure);
  } catch (const InternalError& e) {
    throw InternalError(prefix + e.what());
  } catch (const Error& e) {
    if (e.code() == ExitCode::checkpointed) throw;  // the poll's stop, as it is
    throw OutputError(prefix + e.what());
  } catch (const std::exception& e) {
    throw OutputError(prefix + e.what());
  }
}

/// Renames every staged file to its final name, then syncs the directories; if a rename fails, the
/// files already published are removed again, so that none of the set is left.
void publish(const std::vector<std::string>& finals) {
  std::vector<std::string> done;
  for (const auto& path : finals) {
    const std::string partial = path + ".partial";
    if (::rename(partial.c_str(), path.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      for (const auto& published : done) ::unlink(published.c_str());
      for (const auto& other : finals) ::unlink((other + ".partial").c_str());
      throw OutputError("cannot write '" + path + "': cannot rename '" + partial + "': " + why);
    }
    done.push_back(path);
  }
  for (const auto& path : finals) sync_directory_of(path);
}

std::pair<Failure, std::string> write_on_root(const ResultFiles& files) {
  std::vector<std::string> staged;  // final names whose .partial is complete
  try {
    for (const auto& [path, text] : files.text_files) {
      if (files.poll) files.poll();
      write_durably(path + ".partial", text, path);
      staged.push_back(path);
    }
    if (!files.h5_path.empty()) {
      write_h5_partial(files.h5_path, files.attributes, files.h5_tables, files.poll);
      staged.push_back(files.h5_path);
    }
    if (files.poll) files.poll();  // the last moment at which nothing is published yet
    publish(staged);
    return {Failure::none, {}};
  } catch (const std::exception& e) {
    for (const auto& path : staged) ::unlink((path + ".partial").c_str());
    const auto* error = dynamic_cast<const Error*>(&e);
    if (error != nullptr && error->code() == ExitCode::checkpointed) return {Failure::polled, e.what()};
    return {dynamic_cast<const InternalError*>(&e) != nullptr ? Failure::internal : Failure::output, e.what()};
  }
}

}  // namespace

void write_result_files(const ResultFiles& files, MPI_Comm comm, int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  auto [failure, message] = rank == root ? write_on_root(files) : std::pair<Failure, std::string>{};
  std::uint64_t kind = static_cast<std::uint64_t>(failure);
  MPI_Bcast(&kind, 1, MPI_UINT64_T, root, comm);
  if (kind == 0) return;
  std::uint64_t size = message.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, root, comm);
  message.resize(static_cast<std::size_t>(size));
  MPI_Bcast(message.data(), static_cast<int>(size), MPI_CHAR, root, comm);
  if (static_cast<Failure>(kind) == Failure::internal) throw InternalError(message);
  if (static_cast<Failure>(kind) == Failure::polled) throw Error(ExitCode::checkpointed, message);
  throw OutputError(message);
}

void write_results_h5(const std::string& path, const std::vector<Attribute>& root_attributes,
                      const std::vector<Table>& tables, MPI_Comm comm, int root) {
  ResultFiles files;
  files.h5_path = path;
  files.attributes = root_attributes;
  files.h5_tables = tables;
  write_result_files(files, comm, root);
}

}  // namespace wavel::io
