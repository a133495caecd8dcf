// The reading half of the HDF5 wrappers: attributes and (parts of) 1-D columns, every size checked
// before it is allocated (see hdf5.hpp).
#include "detail/hdf5_detail.hpp"

namespace wavel::io::h5 {

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
