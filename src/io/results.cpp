// Result tables: the results.h5 reader, CSV text and the atomic single-file writers.
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
#include "wavel/common/output_file.hpp"
#include "wavel/io/hdf5.hpp"

namespace wavel::io {

namespace {

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
void append_cell(std::string& out, const TextRows& values, std::size_t row) { out += quote_csv(values.at(row)); }

}  // namespace

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

Table read_table_h5(const std::string& path, const std::string& table_name, const TablePart& part) {
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
  for (const auto& wanted : part.columns) {
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      throw wavel::InputDataError(where + ": table '" + table_name + "' has no column '" + wanted + "'");
    }
  }
  const h5::RowRange rows_read{part.first_row, part.rows};
  std::string first_column;
  std::size_t table_rows = 0;
  for (const auto& name : names) {
    const std::string dataset_name = "'" + table_name + "/" + name + "'";
    const bool skipped =
        !part.columns.empty() && std::find(part.columns.begin(), part.columns.end(), name) == part.columns.end();
    // A column is a direct child: no paths that lead elsewhere in the file, no repeats.
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
      throw wavel::InputDataError(where + ": table '" + table_name + "' lists an invalid column name '" + name + "'");
    }
    for (const auto& earlier : table.columns) {
      if (earlier.name == name) throw wavel::InputDataError(where + ": column " + dataset_name + " is listed twice");
    }
    if (!h5::has_child(group, name)) throw wavel::InputDataError(where + ": column " + dataset_name + " is missing");
    // Every column, read or not, has the table's length (a part is read from a whole table).
    const std::size_t length = h5::column_length(group, name);
    if (first_column.empty()) {
      first_column = name;
      table_rows = length;
    } else if (length != table_rows) {
      throw wavel::InputDataError(where + ": column " + dataset_name + " has " + std::to_string(length) +
                                  " rows but '" + table_name + "/" + first_column + "' has " + std::to_string(table_rows));
    }
    if (skipped) continue;
    Column column;
    column.name = name;
    {
      const h5::Handle dataset = h5::open_dataset(group, name);
      column.units = h5::read_string_attribute(dataset, "units");
      switch (h5::dataset_type_class(dataset)) {
        case H5T_INTEGER: column.values = h5::read_int_column(group, name, rows_read); break;
        case H5T_FLOAT: column.values = h5::read_double_column(group, name, rows_read); break;
        case H5T_STRING: column.values = h5::read_string_column(group, name, rows_read); break;
        default:
          throw wavel::InputDataError(where + ": column " + dataset_name +
                                      " is neither integer, floating-point nor string");
      }
    }
    table.columns.push_back(std::move(column));
  }
  return table;
}

std::string csv_text(const Table& table) {
  const std::size_t rows = table.rows();
  std::string text;
  for (std::size_t c = 0; c < table.columns.size(); ++c) {
    if (c > 0) text += ',';
    text += quote_csv(table.columns[c].name);
  }
  text += '\n';
  for (std::size_t row = 0; row < rows; ++row) {
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (c > 0) text += ',';
      std::visit([&](const auto& values) { append_cell(text, values, row); }, table.columns[c].values);
    }
    text += '\n';
  }
  return text;
}

void write_csv(const std::string& path, const Table& table) { write_file_atomically(path, csv_text(table)); }

void write_durably(const std::string& partial, const std::string& text, const std::string& label) {
  int fd = -1;
  auto fail = [&](const std::string& why) {
    const int saved = errno;
    if (fd >= 0) ::close(fd);
    ::unlink(partial.c_str());
    throw wavel::OutputError("cannot write '" + label + "': " + why + ": " + std::strerror(saved));
  };
  fd = create_fresh_file(partial, O_WRONLY);
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
}

void write_file_atomically(const std::string& path, const std::string& text) {
  // Durable before it is reported: data synced, then renamed, then the directory entry synced,
  // so a crash or a full disk never leaves a file that looks complete but is not.
  const std::string partial = path + ".partial";
  write_durably(partial, text, path);
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(partial.c_str());
    throw wavel::OutputError("cannot write '" + path + "': cannot rename '" + partial + "': " + std::strerror(saved));
  }
  sync_directory_of(path);
}

void sync_directory_of(const std::string& path) {
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
