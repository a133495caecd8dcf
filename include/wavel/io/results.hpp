// Columnar result tables and the atomic writers for results.h5 and summary.csv.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace wavel::io {

/// Text rows made one at a time when written (read back from disk), so that a wide text column of
/// a large sweep is never held whole.
struct TextRows {
  std::size_t count = 0;
  std::size_t max_bytes = 0;  ///< the longest row's bytes (fixes the HDF5 string width)
  std::function<std::string(std::size_t row)> at;
  [[nodiscard]] std::size_t size() const { return count; }
};

/// One named column with its units ("1" for dimensionless, "" for text).
struct Column {
  std::string name;
  std::string units;
  std::variant<std::vector<double>, std::vector<std::int64_t>, std::vector<std::string>, TextRows> values;
};

/// A column of `rows` values, row i being get(i): integers and bools as int64 (a bool as 0/1),
/// floating point as double, text as strings.
template <class Get>
Column column(std::string name, std::string units, std::size_t rows, Get get) {
  using T = std::decay_t<decltype(get(std::size_t{0}))>;
  if constexpr (std::is_integral_v<T>) {
    std::vector<std::int64_t> values(rows);
    for (std::size_t i = 0; i < rows; ++i) values[i] = static_cast<std::int64_t>(get(i));
    return Column{std::move(name), std::move(units), std::move(values)};
  } else if constexpr (std::is_floating_point_v<T>) {
    std::vector<double> values(rows);
    for (std::size_t i = 0; i < rows; ++i) values[i] = static_cast<double>(get(i));
    return Column{std::move(name), std::move(units), std::move(values)};
  } else {
    std::vector<std::string> values(rows);
    for (std::size_t i = 0; i < rows; ++i) values[i] = std::string(get(i));
    return Column{std::move(name), std::move(units), std::move(values)};
  }
}

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

/// Result files published together: after write_result_files all of them are complete under their
/// final names, or none of them is there (each is written under `NAME.partial` first).
struct ResultFiles {
  std::string h5_path;                ///< "" for no HDF5 file
  std::vector<Attribute> attributes;  ///< on the HDF5 file's "/"
  std::vector<Table> h5_tables;
  std::vector<std::pair<std::string, std::string>> text_files;  ///< path and contents (root's are used)
  /// Called on root between files and between HDF5 columns; a wavel::Error it throws stops the write
  /// (nothing of the set is left) and is rethrown with its exit code.
  std::function<void()> poll = nullptr;
};

/// Collective over comm; only `root`'s tables and texts are used, and root writes the text files. Every rank
/// throws the same wavel::OutputError (or InternalError, or the poll's Error) if any part failed on any rank.
void write_result_files(const ResultFiles& files, MPI_Comm comm, int root = 0);

/// write_result_files with one HDF5 file and no CSV.
void write_results_h5(const std::string& path, const std::vector<Attribute>& root_attributes,
                      const std::vector<Table>& tables, MPI_Comm comm, int root = 0);

/// Which part of a table to read: these columns (empty: all, in the file's order), these rows.
struct TablePart {
  std::vector<std::string> columns;
  std::size_t first_row = 0;
  std::size_t rows = static_cast<std::size_t>(-1);
};

/// Reads a table written by write_results_h5 (column order from its `columns` attribute), or the
/// part of it `part` names (a column it does not list is an InputDataError).
Table read_table_h5(const std::string& path, const std::string& table_name, const TablePart& part = {});

/// Writes one table as CSV (header row of column names), via a temporary file and rename.
/// Doubles are printed with enough digits to round-trip.
void write_csv(const std::string& path, const Table& table);

/// The CSV text of a table: a header row of column names, doubles with round-trip digits.
std::string csv_text(const Table& table);

/// Writes `text` to `partial` and syncs it; on failure removes it and throws wavel::OutputError
/// naming `label`.
void write_durably(const std::string& partial, const std::string& text, const std::string& label);

/// Syncs the directory entry of `path` (after a rename); throws wavel::OutputError naming `path`.
void sync_directory_of(const std::string& path);

/// Writes `text` to `path` atomically (temporary name, then rename). Throws wavel::OutputError.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace wavel::io
