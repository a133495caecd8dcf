// Columnar result tables and the atomic writers for results.h5 and summary.csv.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace wavel::io {

/// One named column with its units ("1" for dimensionless, "" for text).
struct Column {
  std::string name;
  std::string units;
  std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<std::string>> values;
};

/// A table is a group of equally long columns, written in this order.
struct Table {
  std::string name;  ///< HDF5 group name, e.g. "settings"
  std::vector<Column> columns;

  [[nodiscard]] std::size_t rows() const;  ///< throws wavel::InternalError if columns differ in length
};

/// Key/value provenance stored as variable-length UTF-8 attributes on "/".
struct Attribute {
  std::string name;
  std::variant<std::string, std::int64_t, double> value;
};

/// Writes tables and root attributes to `path` via `path.partial`, renamed when complete.
/// Collective over comm; only `root`'s table values are used. Throws wavel::OutputError.
void write_results_h5(const std::string& path, const std::vector<Attribute>& root_attributes,
                      const std::vector<Table>& tables, MPI_Comm comm, int root = 0);

/// Reads a table written by write_results_h5 (column order from its `columns` attribute).
Table read_table_h5(const std::string& path, const std::string& table_name);

/// Writes one table as CSV (header row of column names), via a temporary file and rename.
/// Doubles are printed with enough digits to round-trip.
void write_csv(const std::string& path, const Table& table);

/// Writes `text` to `path` atomically (temporary name, then rename). Throws wavel::OutputError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace wavel::io
