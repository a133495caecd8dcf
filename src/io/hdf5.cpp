// Checked, RAII wrappers over the parallel HDF5 C API: handles, files, groups, attributes, 1-D columns.
#include "wavel/io/hdf5.hpp"

#include <algorithm>
#include <functional>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel::io::h5 {
namespace detail {
namespace {

/// HDF5 prints its error stack to stderr by default; library code must not print, so we
/// silence it once and put the stack's essentials into the exception instead.
void quiet_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

constexpr std::size_t kMaxReadBytes = std::size_t{256} << 20;  // per attribute or column

struct StackEntries {
  std::vector<std::string> lines;
};

herr_t collect_entry(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* entries = static_cast<StackEntries*>(data);
  std::string line = err->func_name ? std::string(err->func_name) + "(): " : std::string();
  line += err->desc ? err->desc : "(no description)";
  entries->lines.push_back(std::move(line));
  return 0;
}

/// The outermost (API) and innermost (root cause) entries of the current error stack.
std::string error_stack_summary() {
  StackEntries entries;
  if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_entry, &entries) < 0 || entries.lines.empty()) {
    return "no HDF5 error details";
  }
  std::string text = entries.lines.front();
  if (entries.lines.size() > 1) text += " <- " + entries.lines.back();
  return text;
}

/// Open ReadingScopes on this thread: failures then mean bad input, not failed output.
thread_local int g_reading = 0;

[[noreturn]] void throw_io(const std::string& message) {
  if (g_reading > 0) throw wavel::InputDataError(message);
  throw wavel::OutputError(message);
}

/// Captures the error stack *before* building the context: any further HDF5 call clears it.
template <class Context>
[[noreturn]] void fail(const char* func, Context&& context) {
  const std::string stack = error_stack_summary();
  const std::string where = context();
  throw_io("HDF5 " + std::string(func) + " failed for " + where + ": " + stack);
}

template <class Context>
hid_t check_id(hid_t id, const char* func, Context&& context) {
  if (id < 0) fail(func, std::forward<Context>(context));
  return id;
}

template <class Context>
void check(herr_t status, const char* func, Context&& context) {
  if (status < 0) fail(func, std::forward<Context>(context));
}

template <class Context>
Handle owned(hid_t id, const char* func, Context&& context) {
  return Handle(check_id(id, func, std::forward<Context>(context)));
}

/// "FILE:/path/to/object" for messages; best effort, never throws.
std::string object_path(hid_t loc) {
  std::string file = "?";
  std::string path = "?";
  if (const ssize_t n = H5Fget_name(loc, nullptr, 0); n > 0) {
    file.assign(static_cast<std::size_t>(n) + 1, '\0');
    H5Fget_name(loc, file.data(), file.size());
    file.resize(static_cast<std::size_t>(n));
  }
  if (const ssize_t n = H5Iget_name(loc, nullptr, 0); n > 0) {
    path.assign(static_cast<std::size_t>(n) + 1, '\0');
    H5Iget_name(loc, path.data(), path.size());
    path.resize(static_cast<std::size_t>(n));
  }
  H5Eclear2(H5E_DEFAULT);
  return "'" + file + ":" + path + "'";
}

std::string child_path(const Handle& parent, const std::string& name) {
  std::string where = object_path(parent.id());
  // Insert "/name" before the closing quote; the root group already ends with '/'.
  where.pop_back();
  if (where.back() != '/') where += '/';
  return where + name + "'";
}

std::string quoted(const std::string& text) { return "'" + text + "'"; }

herr_t close_any(hid_t id) noexcept {
  switch (H5Iget_type(id)) {
    case H5I_FILE: return H5Fclose(id);
    case H5I_GROUP: return H5Gclose(id);
    case H5I_DATASET: return H5Dclose(id);
    case H5I_DATASPACE: return H5Sclose(id);
    case H5I_DATATYPE: return H5Tclose(id);
    case H5I_ATTR: return H5Aclose(id);
    case H5I_GENPROP_LST: return H5Pclose(id);
    case H5I_BADID: return -1;
    default: return H5Idec_ref(id) < 0 ? -1 : 0;
  }
}

Handle scalar_space() {
  return owned(H5Screate(H5S_SCALAR), "H5Screate", [] { return std::string("a scalar dataspace"); });
}

Handle vector_space(std::size_t n) {
  const hsize_t dims[1] = {static_cast<hsize_t>(n)};
  return owned(H5Screate_simple(1, dims, dims), "H5Screate_simple",
               [n] { return "a dataspace of " + std::to_string(n) + " elements"; });
}

/// Variable-length UTF-8 string type, used for every text attribute.
Handle vl_utf8_type() {
  auto what = [] { return std::string("a variable-length UTF-8 string type"); };
  Handle type = owned(H5Tcopy(H5T_C_S1), "H5Tcopy", what);
  check(H5Tset_size(type.id(), H5T_VARIABLE), "H5Tset_size", what);
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "H5Tset_cset", what);
  return type;
}

Handle fixed_utf8_type(std::size_t width_bytes) {
  auto what = [width_bytes] { return "a " + std::to_string(width_bytes) + "-byte UTF-8 string type"; };
  Handle type = owned(H5Tcopy(H5T_C_S1), "H5Tcopy", what);
  check(H5Tset_size(type.id(), width_bytes), "H5Tset_size", what);
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "H5Tset_cset", what);
  check(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), "H5Tset_strpad", what);
  return type;
}

/// Creates an attribute, replacing an existing one so that "write" means "set".
Handle create_attribute(const Handle& obj, const std::string& name, hid_t file_type, hid_t space) {
  quiet_hdf5();
  auto where = [&] { return child_path(obj, name) + " (attribute)"; };
  const htri_t exists = H5Aexists(obj.id(), name.c_str());
  check(exists, "H5Aexists", where);
  if (exists > 0) check(H5Adelete(obj.id(), name.c_str()), "H5Adelete", where);
  return owned(H5Acreate2(obj.id(), name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2",
               where);
}

/// The datatype, class and element count of an attribute or dataset, ready for reading.
struct Source {
  Handle object;  ///< the attribute or dataset
  Handle type;
  Handle space;
  H5T_class_t type_class = H5T_NO_CLASS;
  std::size_t count = 0;          ///< elements to read: all, or the rows select() kept
  bool is_attribute = false;
  std::string where;
  Handle file_space, mem_space;   ///< set by select(): a row range of a dataset

  /// Reads only rows [first, first + rows) of a dataset (clamped to its extent).
  void select(std::size_t first, std::size_t rows) {
    auto at = [&] { return where; };
    first = std::min(first, count);
    rows = std::min(rows, count - first);
    file_space = owned(H5Scopy(space.id()), "H5Scopy", at);
    const hsize_t start[1] = {static_cast<hsize_t>(first)};
    const hsize_t n[1] = {static_cast<hsize_t>(rows)};
    check(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, n, nullptr), "H5Sselect_hyperslab", at);
    mem_space = owned(H5Screate_simple(1, n, nullptr), "H5Screate_simple", at);
    space = owned(H5Scopy(mem_space.id()), "H5Scopy", at);  // what the reclaim of variable-length rows walks
    count = rows;
  }

  /// A forged extent must not turn into a huge allocation: element size times count is capped.
  void check_size() const {
    const std::size_t element_bytes = std::max<std::size_t>(H5Tget_size(type.id()), sizeof(char*));
    if (count > kMaxReadBytes / element_bytes) {
      throw_io("HDF5 object " + where + " holds " + std::to_string(count) + " elements of " +
               std::to_string(element_bytes) + " bytes, more than the " + std::to_string(kMaxReadBytes >> 20) +
               " MiB a read may take");
    }
  }

  void read(hid_t mem_type, void* buffer) const {
    check_size();
    const bool rows = file_space.valid();
    const herr_t status = is_attribute ? H5Aread(object.id(), mem_type, buffer)
                                       : H5Dread(object.id(), mem_type, rows ? mem_space.id() : H5S_ALL,
                                                 rows ? file_space.id() : H5S_ALL, H5P_DEFAULT, buffer);
    check(status, is_attribute ? "H5Aread" : "H5Dread", [&] { return where; });
  }

  void expect_class(H5T_class_t wanted, const char* wanted_name) const {
    if (type_class != wanted) {
      throw_io("HDF5 object " + where + " does not hold " + wanted_name + " values");
    }
  }
};

Source describe(Handle object, bool is_attribute, std::string where) {
  Source source;
  auto at = [&] { return where; };
  source.type = owned(is_attribute ? H5Aget_type(object.id()) : H5Dget_type(object.id()),
                      is_attribute ? "H5Aget_type" : "H5Dget_type", at);
  source.space = owned(is_attribute ? H5Aget_space(object.id()) : H5Dget_space(object.id()),
                       is_attribute ? "H5Aget_space" : "H5Dget_space", at);
  source.type_class = H5Tget_class(source.type.id());
  if (source.type_class == H5T_NO_CLASS) fail("H5Tget_class", at);
  const int rank = H5Sget_simple_extent_ndims(source.space.id());
  check(rank, "H5Sget_simple_extent_ndims", at);
  if (rank > 1) throw_io("HDF5 object " + where + " is not one-dimensional");
  const hssize_t count = H5Sget_simple_extent_npoints(source.space.id());
  if (count < 0) fail("H5Sget_simple_extent_npoints", at);
  source.count = static_cast<std::size_t>(count);
  source.object = std::move(object);
  source.is_attribute = is_attribute;
  source.where = std::move(where);
  return source;
}

Source open_attribute_source(const Handle& obj, const std::string& name) {
  quiet_hdf5();
  std::string where = child_path(obj, name) + " (attribute)";
  Handle attr = owned(H5Aopen(obj.id(), name.c_str(), H5P_DEFAULT), "H5Aopen", [&] { return where; });
  return describe(std::move(attr), true, std::move(where));
}

Source open_dataset_source(const Handle& group, const std::string& name) {
  quiet_hdf5();
  std::string where = child_path(group, name);
  Handle dataset = owned(H5Dopen2(group.id(), name.c_str(), H5P_DEFAULT), "H5Dopen2", [&] { return where; });
  return describe(std::move(dataset), false, std::move(where));
}

/// Reads fixed- or variable-length strings; fixed ones lose their NUL or space padding.
std::vector<std::string> read_strings(const Source& source) {
  source.expect_class(H5T_STRING, "string");
  std::vector<std::string> out;
  if (source.count == 0) return out;
  source.check_size();
  auto at = [&] { return source.where; };
  Handle mem_type = owned(H5Tcopy(source.type.id()), "H5Tcopy", at);
  const htri_t variable = H5Tis_variable_str(source.type.id());
  check(variable, "H5Tis_variable_str", at);
  out.reserve(source.count);
  if (variable > 0) {
    std::vector<char*> pointers(source.count, nullptr);
    source.read(mem_type.id(), pointers.data());
    for (const char* p : pointers) out.emplace_back(p ? p : "");
#if H5_VERSION_GE(1, 12, 0)
    check(H5Treclaim(mem_type.id(), source.space.id(), H5P_DEFAULT, pointers.data()), "H5Treclaim", at);
#else
    check(H5Dvlen_reclaim(mem_type.id(), source.space.id(), H5P_DEFAULT, pointers.data()), "H5Dvlen_reclaim", at);
#endif
    return out;
  }
  const std::size_t width = H5Tget_size(source.type.id());
  if (width == 0) fail("H5Tget_size", at);
  const H5T_str_t pad = H5Tget_strpad(source.type.id());
  std::vector<char> buffer(source.count * width, '\0');
  source.read(mem_type.id(), buffer.data());
  for (std::size_t i = 0; i < source.count; ++i) {
    const char* begin = buffer.data() + i * width;
    std::size_t length = std::find(begin, begin + width, '\0') - begin;
    if (pad == H5T_STR_SPACEPAD) {
      while (length > 0 && begin[length - 1] == ' ') --length;
    }
    out.emplace_back(begin, length);
  }
  return out;
}

template <class T>
std::vector<T> read_numbers(const Source& source, hid_t mem_type, H5T_class_t wanted, const char* wanted_name) {
  source.expect_class(wanted, wanted_name);
  source.check_size();
  std::vector<T> out(source.count);
  if (!out.empty()) source.read(mem_type, out.data());
  return out;
}

template <class T>
T read_single(const Source& source, hid_t mem_type, H5T_class_t wanted, const char* wanted_name) {
  std::vector<T> values = read_numbers<T>(source, mem_type, wanted, wanted_name);
  if (values.size() != 1) {
    throw_io("HDF5 attribute " + source.where + " holds " + std::to_string(values.size()) + " values, expected one");
  }
  return values.front();
}

/// What root tells every rank before a collective column write: whether its values are usable,
/// and (for strings) the fixed width that every rank must use when creating the dataset.
struct ColumnAgreement {
  bool ok = true;
  std::size_t width_bytes = 1;
};

ColumnAgreement agree_on_column(std::size_t values_size, std::size_t rows, std::size_t width_bytes, MPI_Comm comm,
                                int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::uint64_t message[2] = {1, static_cast<std::uint64_t>(width_bytes)};
  if (rank == root) message[0] = values_size == rows ? 1 : 0;
  MPI_Bcast(message, 2, MPI_UINT64_T, root, comm);
  return ColumnAgreement{message[0] == 1, static_cast<std::size_t>(message[1])};
}

/// Root's rows [first, end) packed for H5Dwrite; valid until the next call.
using RowSource = std::function<const void*(std::size_t first, std::size_t end)>;

/// Rows per write: slabs of at most 64 MiB, so that a wide string column of a large sweep is never
/// packed whole (rows x the longest string).
std::size_t slab_rows(std::size_t element_bytes) {
  return std::max<std::size_t>(1, (std::size_t{64} << 20) / std::max<std::size_t>(1, element_bytes));
}

/// Creates the dataset and performs the collective writes (one per slab) in which only root selects rows.
void write_column_data(const Handle& group, const std::string& name, hid_t file_type, hid_t mem_type,
                       std::size_t element_bytes, const RowSource& root_rows, std::size_t rows,
                       const std::string& units, MPI_Comm comm, int root) {
  auto where = [&] { return child_path(group, name); };
  Handle file_space = vector_space(rows);
  Handle dcpl = owned(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", where);
  if (rows > 0) {
    // Chunks of at most 64 Ki rows and ~1 MiB keep wide string columns inside the chunk cache.
    const std::size_t by_bytes = std::max<std::size_t>(1, (std::size_t{1} << 20) / element_bytes);
    const hsize_t chunk[1] = {static_cast<hsize_t>(std::min({rows, std::size_t{65536}, by_bytes}))};
    check(H5Pset_chunk(dcpl.id(), 1, chunk), "H5Pset_chunk", where);
    check(H5Pset_shuffle(dcpl.id()), "H5Pset_shuffle", where);
    check(H5Pset_deflate(dcpl.id(), 4), "H5Pset_deflate", where);
  }
  Handle dataset = owned(
      H5Dcreate2(group.id(), name.c_str(), file_type, file_space.id(), H5P_DEFAULT, dcpl.id(), H5P_DEFAULT),
      "H5Dcreate2", where);

  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Filtered datasets can only be written collectively in parallel HDF5 1.10.
  Handle dxpl = owned(H5Pcreate(H5P_DATASET_XFER), "H5Pcreate", where);
  check(H5Pset_dxpl_mpio(dxpl.id(), H5FD_MPIO_COLLECTIVE), "H5Pset_dxpl_mpio", where);
  const std::size_t step = slab_rows(element_bytes);
  for (std::size_t first = 0; first < rows; first += step) {
    const std::size_t end = std::min(rows, first + step);
    Handle mem_space = vector_space(end - first);
    const hsize_t start[1] = {static_cast<hsize_t>(first)};
    const hsize_t count[1] = {static_cast<hsize_t>(end - first)};
    check(H5Sselect_hyperslab(file_space.id(), H5S_SELECT_SET, start, nullptr, count, nullptr), "H5Sselect_hyperslab",
          where);
    if (rank != root) {
      check(H5Sselect_none(mem_space.id()), "H5Sselect_none", where);
      check(H5Sselect_none(file_space.id()), "H5Sselect_none", where);
    }
    const char dummy = 0;  // non-root ranks select nothing but must not pass a null buffer
    const void* buffer = rank == root ? root_rows(first, end) : static_cast<const void*>(&dummy);
    const herr_t status = H5Dwrite(dataset.id(), mem_type, mem_space.id(), file_space.id(), dxpl.id(), buffer);
    // A full disk may fail the write on the rank that holds the data only: every rank must learn
    // it here, or the others would wait forever in the next collective call.
    int ok = status < 0 ? 0 : 1;
    const std::string stack = status < 0 ? error_stack_summary() : std::string();
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
    if (status < 0) throw_io("HDF5 H5Dwrite failed for " + where() + ": " + stack);
    if (ok == 0) throw_io("HDF5 H5Dwrite failed for " + where() + " on another rank");
  }
  write_attribute(dataset, "units", units);
  dataset.close();
}

template <class T>
void write_number_column(const Handle& group, const std::string& name, const std::vector<T>& values,
                         std::size_t rows, const std::string& units, MPI_Comm comm, int root, hid_t file_type,
                         hid_t mem_type) {
  quiet_hdf5();
  const ColumnAgreement agreed = agree_on_column(values.size(), rows, 1, comm, root);
  if (!agreed.ok) {
    throw wavel::InternalError("column " + child_path(group, name) + ": root rank passed a different number of " +
                               "values than the " + std::to_string(rows) + " rows announced");
  }
  write_column_data(
      group, name, file_type, mem_type, sizeof(T),
      [&](std::size_t first, std::size_t) { return static_cast<const void*>(values.data() + first); }, rows, units,
      comm, root);
}

}  // namespace
}  // namespace detail

using detail::check;
using detail::owned;

std::string error_stack_text() { return detail::error_stack_summary(); }

ReadingScope::ReadingScope() { ++detail::g_reading; }
ReadingScope::~ReadingScope() { --detail::g_reading; }

Handle::Handle(hid_t id) : id_(id) {
  if (id < 0) throw wavel::OutputError("invalid HDF5 identifier passed to wavel::io::h5::Handle");
}

Handle::Handle(Handle&& other) noexcept : id_(std::exchange(other.id_, H5I_INVALID_HID)) {}

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    if (valid()) detail::close_any(id_);
    id_ = std::exchange(other.id_, H5I_INVALID_HID);
  }
  return *this;
}

Handle::~Handle() {
  // Destructors must not throw; close() is there for callers who need to see close errors.
  if (valid()) detail::close_any(id_);
}

void Handle::close() {
  if (!valid()) return;
  detail::quiet_hdf5();
  const hid_t id = std::exchange(id_, H5I_INVALID_HID);
  if (detail::close_any(id) < 0) {
    detail::fail("H5*close", [id] { return "identifier " + std::to_string(static_cast<long long>(id)); });
  }
}

Handle create_file(const std::string& path, MPI_Comm comm) {
  detail::quiet_hdf5();
  auto where = [&] { return detail::quoted(path); };
  Handle fapl = owned(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", where);
  check(H5Pset_fapl_mpio(fapl.id(), comm, MPI_INFO_NULL), "H5Pset_fapl_mpio", where);
  // Collective metadata I/O: rank 0 does the metadata reads/writes instead of every rank.
  check(H5Pset_all_coll_metadata_ops(fapl.id(), true), "H5Pset_all_coll_metadata_ops", where);
  check(H5Pset_coll_metadata_write(fapl.id(), true), "H5Pset_coll_metadata_write", where);
  return owned(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), "H5Fcreate", where);
}

Handle open_file_readonly(const std::string& path) {
  detail::quiet_hdf5();
  ReadingScope reading;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw wavel::InputMissingError("HDF5 file '" + path + "' does not exist");
  }
  if (std::filesystem::is_directory(path, ec) || !std::ifstream(path, std::ios::binary)) {
    throw wavel::InputMissingError("cannot read HDF5 file '" + path + "'");
  }
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw wavel::InputDataError("'" + path + "' is not an HDF5 file");
  }
  return owned(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen", [&] { return detail::quoted(path); });
}

Handle create_group(const Handle& parent, const std::string& name) {
  detail::quiet_hdf5();
  return owned(H5Gcreate2(parent.id(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "H5Gcreate2",
               [&] { return detail::child_path(parent, name); });
}

Handle open_group(const Handle& parent, const std::string& name) {
  detail::quiet_hdf5();
  return owned(H5Gopen2(parent.id(), name.c_str(), H5P_DEFAULT), "H5Gopen2",
               [&] { return detail::child_path(parent, name); });
}

Handle open_dataset(const Handle& parent, const std::string& name) {
  detail::quiet_hdf5();
  return owned(H5Dopen2(parent.id(), name.c_str(), H5P_DEFAULT), "H5Dopen2",
               [&] { return detail::child_path(parent, name); });
}

H5T_class_t dataset_type_class(const Handle& dataset) {
  ReadingScope reading;
  detail::quiet_hdf5();
  auto where = [&] { return detail::object_path(dataset.id()); };
  Handle type = owned(H5Dget_type(dataset.id()), "H5Dget_type", where);
  const H5T_class_t type_class = H5Tget_class(type.id());
  if (type_class == H5T_NO_CLASS) detail::fail("H5Tget_class", where);
  return type_class;
}

bool has_child(const Handle& parent, const std::string& name) {
  detail::quiet_hdf5();
  const htri_t exists = H5Lexists(parent.id(), name.c_str(), H5P_DEFAULT);
  check(exists, "H5Lexists", [&] { return detail::child_path(parent, name); });
  return exists > 0;
}

void write_attribute(const Handle& obj, const std::string& name, const std::string& utf8_value) {
  Handle type = detail::vl_utf8_type();
  Handle space = detail::scalar_space();
  Handle attr = detail::create_attribute(obj, name, type.id(), space.id());
  const char* pointer = utf8_value.c_str();
  check(H5Awrite(attr.id(), type.id(), &pointer), "H5Awrite", [&] { return detail::child_path(obj, name); });
  attr.close();
}

void write_attribute(const Handle& obj, const std::string& name, const std::vector<std::string>& utf8_values) {
  Handle type = detail::vl_utf8_type();
  Handle space = detail::vector_space(utf8_values.size());
  Handle attr = detail::create_attribute(obj, name, type.id(), space.id());
  if (!utf8_values.empty()) {
    std::vector<const char*> pointers;
    pointers.reserve(utf8_values.size());
    for (const auto& value : utf8_values) pointers.push_back(value.c_str());
    check(H5Awrite(attr.id(), type.id(), pointers.data()), "H5Awrite", [&] { return detail::child_path(obj, name); });
  }
  attr.close();
}

void write_attribute(const Handle& obj, const std::string& name, std::int64_t value) {
  Handle space = detail::scalar_space();
  Handle attr = detail::create_attribute(obj, name, H5T_STD_I64LE, space.id());
  check(H5Awrite(attr.id(), H5T_NATIVE_INT64, &value), "H5Awrite", [&] { return detail::child_path(obj, name); });
  attr.close();
}

void write_attribute(const Handle& obj, const std::string& name, double value) {
  Handle space = detail::scalar_space();
  Handle attr = detail::create_attribute(obj, name, H5T_IEEE_F64LE, space.id());
  check(H5Awrite(attr.id(), H5T_NATIVE_DOUBLE, &value), "H5Awrite", [&] { return detail::child_path(obj, name); });
  attr.close();
}

std::string read_string_attribute(const Handle& obj, const std::string& name) {
  ReadingScope reading;
  const detail::Source source = detail::open_attribute_source(obj, name);
  std::vector<std::string> values = detail::read_strings(source);
  if (values.size() != 1) {
    detail::throw_io("HDF5 attribute " + source.where + " holds " + std::to_string(values.size()) +
                     " strings, expected one");
  }
  return std::move(values.front());
}

std::vector<std::string> read_string_list_attribute(const Handle& obj, const std::string& name) {
  ReadingScope reading;
  return detail::read_strings(detail::open_attribute_source(obj, name));
}

std::int64_t read_int_attribute(const Handle& obj, const std::string& name) {
  ReadingScope reading;
  return detail::read_single<std::int64_t>(detail::open_attribute_source(obj, name), H5T_NATIVE_INT64,
                                           H5T_INTEGER, "integer");
}

double read_double_attribute(const Handle& obj, const std::string& name) {
  ReadingScope reading;
  return detail::read_single<double>(detail::open_attribute_source(obj, name), H5T_NATIVE_DOUBLE, H5T_FLOAT,
                                     "floating-point");
}

void write_column(const Handle& group, const std::string& name, const std::vector<double>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root) {
  detail::write_number_column(group, name, values, rows, units, comm, root, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE);
}

void write_column(const Handle& group, const std::string& name, const std::vector<std::int64_t>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root) {
  detail::write_number_column(group, name, values, rows, units, comm, root, H5T_STD_I64LE, H5T_NATIVE_INT64);
}

namespace detail {
namespace {

/// Root's row i of a text column; `scratch` may hold it (a row made on demand).
using TextRow = std::function<std::string_view(std::size_t row, std::string& scratch)>;

void write_text_column(const Handle& group, const std::string& name, std::size_t values_size,
                       std::size_t root_width_bytes, const TextRow& row, std::size_t rows, const std::string& units,
                       MPI_Comm comm, int root) {
  quiet_hdf5();
  const ColumnAgreement agreed =
      agree_on_column(values_size, rows, std::max<std::size_t>(1, root_width_bytes), comm, root);
  if (!agreed.ok) {
    throw wavel::InternalError("column " + child_path(group, name) +
                               ": root rank passed a different number of values than the " + std::to_string(rows) +
                               " rows announced");
  }
  Handle type = fixed_utf8_type(agreed.width_bytes);
  std::vector<char> packed;  // one slab at a time
  std::string scratch;
  const auto pack = [&](std::size_t first, std::size_t end) {
    packed.assign((end - first) * agreed.width_bytes, '\0');
    for (std::size_t i = first; i < end; ++i) {
      const std::string_view text = row(i, scratch);
      if (text.size() > agreed.width_bytes) {
        throw wavel::InternalError("column " + child_path(group, name) + ": row " + std::to_string(i) + " has " +
                                   std::to_string(text.size()) + " bytes, more than the " +
                                   std::to_string(agreed.width_bytes) + " announced");
      }
      std::memcpy(packed.data() + (i - first) * agreed.width_bytes, text.data(), text.size());
    }
    return static_cast<const void*>(packed.data());
  };
  write_column_data(group, name, type.id(), type.id(), agreed.width_bytes, pack, rows, units, comm, root);
}

}  // namespace
}  // namespace detail

void write_column(const Handle& group, const std::string& name, const std::vector<std::string>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  // Only root's strings are valid, so only root can know the width every rank must create.
  std::size_t width_bytes = 1;
  if (rank == root) {
    for (const auto& value : values) width_bytes = std::max(width_bytes, value.size());
  }
  detail::write_text_column(
      group, name, values.size(), width_bytes, [&](std::size_t i, std::string&) { return std::string_view(values[i]); },
      rows, units, comm, root);
}

void write_column(const Handle& group, const std::string& name, const TextRows& values, std::size_t rows,
                  const std::string& units, MPI_Comm comm, int root) {
  detail::write_text_column(
      group, name, values.count, values.max_bytes,
      [&](std::size_t i, std::string& scratch) { return std::string_view(scratch = values.at(i)); },
      rows, units, comm, root);
}

namespace {

detail::Source rows_of(const Handle& group, const std::string& name, const RowRange& rows) {
  detail::Source source = detail::open_dataset_source(group, name);
  if (rows.first != 0 || rows.count < source.count) source.select(rows.first, rows.count);
  return source;
}

}  // namespace

std::size_t column_length(const Handle& group, const std::string& name) {
  ReadingScope reading;
  return detail::open_dataset_source(group, name).count;
}

std::vector<double> read_double_column(const Handle& group, const std::string& name, const RowRange& rows) {
  ReadingScope reading;
  return detail::read_numbers<double>(rows_of(group, name, rows), H5T_NATIVE_DOUBLE, H5T_FLOAT, "floating-point");
}

std::vector<std::int64_t> read_int_column(const Handle& group, const std::string& name, const RowRange& rows) {
  ReadingScope reading;
  return detail::read_numbers<std::int64_t>(rows_of(group, name, rows), H5T_NATIVE_INT64, H5T_INTEGER, "integer");
}

std::vector<std::string> read_string_column(const Handle& group, const std::string& name, const RowRange& rows) {
  ReadingScope reading;
  return detail::read_strings(rows_of(group, name, rows));
}

}  // namespace wavel::io::h5
