// Thin RAII layer over the parallel HDF5 C API: one handle type, checked calls, collective helpers.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/io/results.hpp"

namespace wavel::io::h5 {

/// Owns one hid_t of any kind (file, group, dataset, dataspace, datatype, property list, attribute)
/// and closes it with the matching H5*close call.
class Handle {
 public:
  Handle() = default;
  explicit Handle(hid_t id);  ///< takes ownership; throws wavel::OutputError if id < 0
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept;
  Handle& operator=(Handle&& other) noexcept;
  ~Handle();

  [[nodiscard]] hid_t id() const noexcept { return id_; }
  [[nodiscard]] bool valid() const noexcept { return id_ >= 0; }
  void close();  ///< closes now; throws on failure, and the handle is released either way

 private:
  hid_t id_ = H5I_INVALID_HID;
};

/// While one is alive on this thread, HDF5 failures are reported as bad input data
/// (wavel::InputDataError, exit 65) instead of output failures (wavel::OutputError, exit 73).
/// Every read_* function below opens one itself; readers wrap opening and walking a file in one.
class ReadingScope {
 public:
  ReadingScope();
  ~ReadingScope();
  ReadingScope(const ReadingScope&) = delete;
  ReadingScope& operator=(const ReadingScope&) = delete;
};

/// The outermost and innermost entries of the calling thread's HDF5 error stack, for messages.
std::string error_stack_text();

/// Creates a new file for collective MPI-IO access by every rank of comm; fails if the name exists.
Handle create_file(const std::string& path, MPI_Comm comm);
/// Opens an existing file read-only, for one process (no MPI-IO): wavel::InputMissingError if it is
/// absent or unreadable, wavel::InputDataError if it is not an HDF5 file.
Handle open_file_readonly(const std::string& path);

Handle create_group(const Handle& parent, const std::string& name);
Handle open_group(const Handle& parent, const std::string& name);
bool has_child(const Handle& parent, const std::string& name);
Handle open_dataset(const Handle& parent, const std::string& name);
/// H5T_INTEGER, H5T_FLOAT, H5T_STRING, ...: lets readers pick the matching read_*_column.
H5T_class_t dataset_type_class(const Handle& dataset);

/// Attributes. Writes are collective in parallel HDF5: every rank passes the same value.
void write_attribute(const Handle& obj, const std::string& name, const std::string& utf8_value);
void write_attribute(const Handle& obj, const std::string& name, const std::vector<std::string>& utf8_values);
void write_attribute(const Handle& obj, const std::string& name, std::int64_t value);
void write_attribute(const Handle& obj, const std::string& name, double value);
std::string read_string_attribute(const Handle& obj, const std::string& name);
std::vector<std::string> read_string_list_attribute(const Handle& obj, const std::string& name);
std::int64_t read_int_attribute(const Handle& obj, const std::string& name);
double read_double_attribute(const Handle& obj, const std::string& name);

/// 1-D columns, written collectively: every rank calls with the same name and row count;
/// only `root` supplies the values (other ranks' vectors are ignored), so small gathered tables
/// cost one collective write. Each dataset gets a `units` attribute.
void write_column(const Handle& group, const std::string& name, const std::vector<double>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root = 0);
void write_column(const Handle& group, const std::string& name, const std::vector<std::int64_t>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root = 0);
/// Strings are stored fixed-length UTF-8 (parallel HDF5 cannot write variable-length data).
void write_column(const Handle& group, const std::string& name, const std::vector<std::string>& values,
                  std::size_t rows, const std::string& units, MPI_Comm comm, int root = 0);
/// Text rows made on demand, one slab at a time; longer rows than announced are an InternalError.
void write_column(const Handle& group, const std::string& name, const TextRows& values, std::size_t rows,
                  const std::string& units, MPI_Comm comm, int root = 0);

/// Rows [first, first + count) of a column (clamped to its length): a table too large to read whole
/// (the MeshIR texts of a big sweep) is read a row at a time.
struct RowRange {
  std::size_t first = 0;
  std::size_t count = static_cast<std::size_t>(-1);
};

/// Rows of a one-dimensional column, without reading it.
std::size_t column_length(const Handle& group, const std::string& name);
std::vector<double> read_double_column(const Handle& group, const std::string& name, const RowRange& rows = {});
std::vector<std::int64_t> read_int_column(const Handle& group, const std::string& name, const RowRange& rows = {});
std::vector<std::string> read_string_column(const Handle& group, const std::string& name, const RowRange& rows = {});

}  // namespace wavel::io::h5
