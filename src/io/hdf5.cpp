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
#include "wavel/common/text.hpp"

#include "detail/hdf5_detail.hpp"

namespace wavel::io::h5 {
namespace detail {
namespace {

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
  // Exclusive: never truncates an existing file, nor one a symlink planted under this name points at.
  return owned(H5Fcreate(path.c_str(), H5F_ACC_EXCL, H5P_DEFAULT, fapl.id()), "H5Fcreate", where);
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
  const std::string valid = valid_utf8(utf8_value);  // a config's text or a path may hold any bytes
  const char* pointer = valid.c_str();
  check(H5Awrite(attr.id(), type.id(), &pointer), "H5Awrite", [&] { return detail::child_path(obj, name); });
  attr.close();
}

void write_attribute(const Handle& obj, const std::string& name, const std::vector<std::string>& utf8_values) {
  Handle type = detail::vl_utf8_type();
  Handle space = detail::vector_space(utf8_values.size());
  Handle attr = detail::create_attribute(obj, name, type.id(), space.id());
  if (!utf8_values.empty()) {
    std::vector<std::string> valid;
    valid.reserve(utf8_values.size());
    for (const auto& value : utf8_values) valid.push_back(valid_utf8(value));
    std::vector<const char*> pointers;
    pointers.reserve(valid.size());
    for (const auto& value : valid) pointers.push_back(value.c_str());
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
  // Stored as UTF-8: a byte that is not (a path, a name from a file) becomes U+FFFD.
  std::vector<std::string> valid;
  std::size_t width_bytes = 1;
  if (rank == root) {
    valid.reserve(values.size());
    for (const auto& value : values) width_bytes = std::max(width_bytes, valid.emplace_back(valid_utf8(value)).size());
  }
  detail::write_text_column(
      group, name, values.size(), width_bytes, [&](std::size_t i, std::string&) { return std::string_view(valid[i]); },
      rows, units, comm, root);
}

void write_column(const Handle& group, const std::string& name, const TextRows& values, std::size_t rows,
                  const std::string& units, MPI_Comm comm, int root) {
  detail::write_text_column(
      group, name, values.count, values.max_bytes,
      [&](std::size_t i, std::string& scratch) { return std::string_view(scratch = values.at(i)); },
      rows, units, comm, root);
}

}  // namespace wavel::io::h5
