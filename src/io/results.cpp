// Result tables: collective, atomic results.h5 writer and reader, and the atomic CSV writer.
#include "wavel/io/results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <type_traits>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/io/hdf5.hpp"

namespace wavel::io {

std::size_t Table::rows() const {
  if (columns.empty()) return 0;
  const auto size_of = [](const Column& column) {
    return std::visit([](const auto& values) { return values.size(); }, column.values);
  };
  const std::size_t rows = size_of(columns.front());
  for (const auto& column : columns) {
    if (size_of(column) != rows) {
      throw wavel::InternalError("table '" + name + "': column '" + column.name + "' has " +
                                 std::to_string(size_of(column)) + " rows but column '" + columns.front().name +
                                 "' has " + std::to_string(rows));
    }
  }
  return rows;
}

namespace detail {
namespace {

/// Why a collective write stopped; the kind decides which exception every rank throws.
enum class Failure : std::uint8_t { none = 0, output = 1, internal = 2 };

[[noreturn]] void throw_failure(Failure kind, const std::string& message) {
  if (kind == Failure::internal) throw wavel::InternalError(message);
  throw wavel::OutputError(message);
}

/// Flat byte encoding of what root decided, so every rank works from root's copy.
class Packer {
 public:
  void u64(std::uint64_t value) { raw(&value, sizeof value); }
  void f64(double value) { raw(&value, sizeof value); }
  void i64(std::int64_t value) { raw(&value, sizeof value); }
  void str(const std::string& value) {
    u64(value.size());
    bytes_ += value;
  }
  std::string& bytes() { return bytes_; }

 private:
  void raw(const void* data, std::size_t size) { bytes_.append(static_cast<const char*>(data), size); }
  std::string bytes_;
};

class Unpacker {
 public:
  explicit Unpacker(const std::string& bytes) : bytes_(bytes) {}
  std::uint64_t u64() { return raw<std::uint64_t>(); }
  double f64() { return raw<double>(); }
  std::int64_t i64() { return raw<std::int64_t>(); }
  std::string str() {
    const std::size_t size = static_cast<std::size_t>(u64());
    need(size);
    std::string value = bytes_.substr(offset_, size);
    offset_ += size;
    return value;
  }

 private:
  template <class T>
  T raw() {
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }
  void need(std::size_t size) const {
    if (bytes_.size() - offset_ < size) throw wavel::InternalError("truncated broadcast of results layout");
  }
  const std::string& bytes_;
  std::size_t offset_ = 0;
};

void broadcast_bytes(std::string& bytes, int root, MPI_Comm comm) {
  std::uint64_t size = bytes.size();
  MPI_Bcast(&size, 1, MPI_UINT64_T, root, comm);
  bytes.resize(static_cast<std::size_t>(size));
  // Chunks keep each count within int for multi-GiB config texts.
  constexpr std::size_t chunk = std::size_t{1} << 30;
  for (std::size_t offset = 0; offset < bytes.size(); offset += chunk) {
    const int count = static_cast<int>(std::min(chunk, bytes.size() - offset));
    MPI_Bcast(bytes.data() + offset, count, MPI_CHAR, root, comm);
  }
}

/// The shape of a table (everything but the values), as root sees it.
struct ColumnLayout {
  std::string name;
  std::string units;
  std::size_t kind = 0;  ///< index into Column::values
};
struct TableLayout {
  std::string name;
  std::size_t rows = 0;
  std::vector<ColumnLayout> columns;
};

struct Plan {
  Failure failure = Failure::none;
  std::string message;
  std::vector<Attribute> attributes;
  std::vector<TableLayout> tables;
};

void pack_plan(Packer& out, const Plan& plan) {
  out.u64(static_cast<std::uint64_t>(plan.failure));
  out.str(plan.message);
  if (plan.failure != Failure::none) return;
  out.u64(plan.attributes.size());
  for (const auto& attribute : plan.attributes) {
    out.str(attribute.name);
    out.u64(attribute.value.index());
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::string>) out.str(value);
          if constexpr (std::is_same_v<T, std::int64_t>) out.i64(value);
          if constexpr (std::is_same_v<T, double>) out.f64(value);
        },
        attribute.value);
  }
  out.u64(plan.tables.size());
  for (const auto& table : plan.tables) {
    out.str(table.name);
    out.u64(table.rows);
    out.u64(table.columns.size());
    for (const auto& column : table.columns) {
      out.str(column.name);
      out.str(column.units);
      out.u64(column.kind);
    }
  }
}

Plan unpack_plan(Unpacker& in) {
  Plan plan;
  plan.failure = static_cast<Failure>(in.u64());
  plan.message = in.str();
  if (plan.failure != Failure::none) return plan;
  plan.attributes.resize(static_cast<std::size_t>(in.u64()));
  for (auto& attribute : plan.attributes) {
    attribute.name = in.str();
    switch (in.u64()) {
      case 0: attribute.value = in.str(); break;
      case 1: attribute.value = in.i64(); break;
      default: attribute.value = in.f64(); break;
    }
  }
  plan.tables.resize(static_cast<std::size_t>(in.u64()));
  for (auto& table : plan.tables) {
    table.name = in.str();
    table.rows = static_cast<std::size_t>(in.u64());
    table.columns.resize(static_cast<std::size_t>(in.u64()));
    for (auto& column : table.columns) {
      column.name = in.str();
      column.units = in.str();
      column.kind = static_cast<std::size_t>(in.u64());
    }
  }
  return plan;
}

/// Root-only checks that would otherwise fail inside collective HDF5 calls at different times
/// on different ranks: table shapes, the target directory, and whether the .partial can be created.
Plan plan_on_root(const std::string& path, const std::string& partial, const std::vector<Attribute>& attributes,
                  const std::vector<Table>& tables) {
  namespace fs = std::filesystem;
  Plan plan;
  const std::string prefix = "cannot write results file '" + path + "': ";
  try {
    for (const auto& table : tables) {
      TableLayout layout{table.name, table.rows(), {}};
      for (const auto& column : table.columns) layout.columns.push_back({column.name, column.units, column.values.index()});
      plan.tables.push_back(std::move(layout));
    }
  } catch (const wavel::InternalError& e) {
    return Plan{Failure::internal, prefix + e.what(), {}, {}};
  }
  plan.attributes = attributes;

  fs::path directory = fs::path(path).parent_path();
  if (directory.empty()) directory = ".";
  std::error_code ec;
  if (!fs::exists(directory, ec)) {
    return Plan{Failure::output, prefix + "directory '" + directory.string() + "' does not exist", {}, {}};
  }
  if (!fs::is_directory(directory, ec)) {
    return Plan{Failure::output, prefix + "'" + directory.string() + "' is not a directory", {}, {}};
  }
  if (fs::is_directory(path, ec)) {
    return Plan{Failure::output, prefix + "a directory of that name exists", {}, {}};
  }
  // Creating the file is the only reliable writability test (access() says yes to root).
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    return Plan{Failure::output, prefix + "cannot create '" + partial + "': " + std::strerror(errno), {}, {}};
  }
  ::close(fd);
  return plan;
}

/// Every rank learns whether any rank failed, and the first failing rank's message.
std::pair<Failure, std::string> agree_on_failure(Failure local, const std::string& local_message, MPI_Comm comm) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  int mine = local == Failure::none ? ranks : rank;
  int first = ranks;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
  if (first == ranks) return {Failure::none, {}};
  Packer packer;
  if (rank == first) {
    packer.u64(static_cast<std::uint64_t>(local));
    packer.str(local_message);
  }
  broadcast_bytes(packer.bytes(), first, comm);
  Unpacker in(packer.bytes());
  const auto kind = static_cast<Failure>(in.u64());
  return {kind, in.str()};
}

const std::vector<double> no_doubles;
const std::vector<std::int64_t> no_ints;
const std::vector<std::string> no_strings;

/// The tables and attributes into an open file; collective.
void write_contents(const h5::Handle& file, const Plan& plan, const std::vector<Table>& tables, MPI_Comm comm,
                    int root, bool is_root) {
  {
    h5::Handle root_group = h5::open_group(file, "/");
    for (const auto& attribute : plan.attributes) {
      std::visit([&](const auto& value) { h5::write_attribute(root_group, attribute.name, value); },
                 attribute.value);
    }
  }
  for (std::size_t t = 0; t < plan.tables.size(); ++t) {
    const TableLayout& layout = plan.tables[t];
    h5::Handle group = h5::create_group(file, layout.name);
    std::vector<std::string> names;
    for (const auto& column : layout.columns) names.push_back(column.name);
    h5::write_attribute(group, "columns", names);
    for (std::size_t c = 0; c < layout.columns.size(); ++c) {
      const ColumnLayout& column = layout.columns[c];
      const Column* mine = is_root ? &tables[t].columns[c] : nullptr;
      switch (column.kind) {
        case 0:
          h5::write_column(group, column.name, mine ? std::get<0>(mine->values) : no_doubles, layout.rows,
                           column.units, comm, root);
          break;
        case 1:
          h5::write_column(group, column.name, mine ? std::get<1>(mine->values) : no_ints, layout.rows,
                           column.units, comm, root);
          break;
        default:
          h5::write_column(group, column.name, mine ? std::get<2>(mine->values) : no_strings, layout.rows,
                           column.units, comm, root);
          break;
      }
    }
    group.close();
  }
}

void write_planned_file(const std::string& partial, const Plan& plan, const std::vector<Table>& tables,
                        MPI_Comm comm, int root, bool is_root) {
  h5::Handle file = h5::create_file(partial, comm);
  std::exception_ptr failure;
  try {
    write_contents(file, plan, tables, comm, root, is_root);
  } catch (...) {
    failure = std::current_exception();
  }
  // HDF5 1.10 leaves a half-destroyed file behind when H5Fclose fails (on a full disk, say), and
  // that crashes MPI_Finalize. So flush first, where a failure leaves the file intact; if any rank
  // failed, root frees the space the partial file holds so that closing (which flushes whatever is
  // still dirty) can succeed, and the write is reported as failed. The partial file is removed later.
  const herr_t flushed = H5Fflush(file.id(), H5F_SCOPE_GLOBAL);
  const std::string flush_error = flushed < 0 ? h5::error_stack_text() : std::string();
  int ok = failure || flushed < 0 ? 0 : 1;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (ok == 0) {
    if (is_root && ::truncate(partial.c_str(), 0) != 0) {
      // Nothing more to free; the close below may then fail too.
    }
    MPI_Barrier(comm);
  }
  file.close();
  if (failure) std::rethrow_exception(failure);
  if (flushed < 0) throw wavel::OutputError("HDF5 H5Fflush failed for '" + partial + "': " + flush_error);
  if (ok == 0) throw wavel::OutputError("writing '" + partial + "' failed on another rank");
}

std::string quote_csv(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void append_cell(std::string& out, const std::vector<double>& values, std::size_t row) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", values[row]);
  out += buffer;
}
void append_cell(std::string& out, const std::vector<std::int64_t>& values, std::size_t row) {
  out += std::to_string(values[row]);
}
void append_cell(std::string& out, const std::vector<std::string>& values, std::size_t row) {
  out += quote_csv(values[row]);
}

}  // namespace
}  // namespace detail

void write_results_h5(const std::string& path, const std::vector<Attribute>& root_attributes,
                      const std::vector<Table>& tables, MPI_Comm comm, int root) {
  using detail::Failure;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool is_root = rank == root;
  const std::string partial = path + ".partial";
  const std::string prefix = "cannot write results file '" + path + "': ";

  // 1. Root validates and decides; everyone follows root's layout, so all ranks agree from here on.
  detail::Packer packer;
  if (is_root) detail::pack_plan(packer, detail::plan_on_root(path, partial, root_attributes, tables));
  detail::broadcast_bytes(packer.bytes(), root, comm);
  detail::Unpacker unpacker(packer.bytes());
  const detail::Plan plan = detail::unpack_plan(unpacker);
  if (plan.failure != Failure::none) detail::throw_failure(plan.failure, plan.message);

  // 2. The collective writes; a failure on any rank becomes a failure on all of them.
  Failure local = Failure::none;
  std::string local_message;
  try {
    detail::write_planned_file(partial, plan, tables, comm, root, is_root);
  } catch (const wavel::InternalError& e) {
    local = Failure::internal;
    local_message = prefix + e.what();
  } catch (const std::exception& e) {
    local = Failure::output;
    local_message = prefix + e.what();
  }
  auto [failure, message] = detail::agree_on_failure(local, local_message, comm);

  // 3. Root publishes the complete file under its final name, or removes the partial one.
  if (is_root) {
    std::error_code ec;
    if (failure == Failure::none) {
      std::filesystem::rename(partial, path, ec);
      if (ec) {
        failure = Failure::output;
        message = prefix + "cannot rename '" + partial + "': " + ec.message();
      }
    }
    if (failure != Failure::none) std::filesystem::remove(partial, ec);
  }
  detail::Packer outcome;
  if (is_root) {
    outcome.u64(static_cast<std::uint64_t>(failure));
    outcome.str(message);
  }
  detail::broadcast_bytes(outcome.bytes(), root, comm);
  detail::Unpacker result(outcome.bytes());
  const auto final_failure = static_cast<Failure>(result.u64());
  const std::string final_message = result.str();
  if (final_failure != Failure::none) detail::throw_failure(final_failure, final_message);
}

Table read_table_h5(const std::string& path, const std::string& table_name) {
  // Everything below is input: a failure is a malformed file (65), never an output error.
  const h5::ReadingScope reading;
  const std::string where = "results file '" + path + "'";
  const h5::Handle file = h5::open_file_readonly(path);
  if (!h5::has_child(file, table_name)) throw wavel::InputDataError(where + " has no table '" + table_name + "'");
  const h5::Handle group = h5::open_group(file, table_name);
  Table table;
  table.name = table_name;
  const std::vector<std::string> names = h5::read_string_list_attribute(group, "columns");
  constexpr std::size_t kMaxColumns = 4096;
  if (names.size() > kMaxColumns) {
    throw wavel::InputDataError(where + ": table '" + table_name + "' lists " + std::to_string(names.size()) +
                                " columns, more than " + std::to_string(kMaxColumns));
  }
  for (const auto& name : names) {
    const std::string dataset_name = "'" + table_name + "/" + name + "'";
    // A column is a direct child: no paths that lead elsewhere in the file, no repeats.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw wavel::InputDataError(where + ": table '" + table_name + "' lists an invalid column name '" + name + "'");
    }
    for (const auto& earlier : table.columns) {
      if (earlier.name == name) throw wavel::InputDataError(where + ": column " + dataset_name + " is listed twice");
    }
    if (!h5::has_child(group, name)) throw wavel::InputDataError(where + ": column " + dataset_name + " is missing");
    Column column;
    column.name = name;
    {
      const h5::Handle dataset = h5::open_dataset(group, name);
      column.units = h5::read_string_attribute(dataset, "units");
      switch (h5::dataset_type_class(dataset)) {
        case H5T_INTEGER: column.values = h5::read_int_column(group, name); break;
        case H5T_FLOAT: column.values = h5::read_double_column(group, name); break;
        case H5T_STRING: column.values = h5::read_string_column(group, name); break;
        default:
          throw wavel::InputDataError(where + ": column " + dataset_name +
                                      " is neither integer, floating-point nor string");
      }
    }
    const std::size_t rows = std::visit([](const auto& v) { return v.size(); }, column.values);
    if (!table.columns.empty()) {
      const std::size_t first = std::visit([](const auto& v) { return v.size(); }, table.columns.front().values);
      if (rows != first) {
        throw wavel::InputDataError(where + ": column " + dataset_name + " has " + std::to_string(rows) +
                                    " rows but '" + table_name + "/" + table.columns.front().name + "' has " +
                                    std::to_string(first));
      }
    }
    table.columns.push_back(std::move(column));
  }
  return table;
}

void write_csv(const std::string& path, const Table& table) {
  const std::size_t rows = table.rows();
  std::string text;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    if (c > 0) text += ',';
    text += detail::quote_csv(table.columns[c].name);
  }
  text += '\n';
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (c > 0) text += ',';
      std::visit([&](const auto& values) { detail::append_cell(text, values, row); }, table.columns[c].values);
    }
    text += '\n';
  }
  write_file_atomically(path, text);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  // Durable before it is reported: data synced, then renamed, then the directory entry synced,
  // so a crash or a full disk never leaves a file that looks complete but is not.
  const std::string partial = path + ".partial";
  int fd = -1;
  auto fail = [&](const std::string& why) {
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(partial.c_str());
    throw wavel::OutputError("cannot write '" + path + "': " + why + ": " + std::strerror(saved));
  };
  fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail("cannot create '" + partial + "'");
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write to '" + partial + "' failed");
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync of '" + partial + "' failed");
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) fail("closing '" + partial + "' failed");
  if (::rename(partial.c_str(), path.c_str()) != 0) fail("cannot rename '" + partial + "'");
  std::string directory = std::filesystem::path(path).parent_path().string();
  if (directory.empty()) directory = ".";
  const int dir_fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0 || ::fsync(dir_fd) != 0) {
    const int saved = errno;
    if (dir_fd >= 0) ::close(dir_fd);
    throw wavel::OutputError("cannot write '" + path + "': fsync of directory '" + directory +
                             "' failed: " + std::strerror(saved));
  }
  ::close(dir_fd);
}

}  // namespace wavel::io
