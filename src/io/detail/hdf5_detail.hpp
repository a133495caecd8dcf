// Internals of the HDF5 wrappers shared by the writing (hdf5.cpp) and reading (hdf5_read.cpp) halves:
// error capture and classification, handle helpers, and the Source every read goes through.
#pragma once

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/io/hdf5.hpp"

namespace wavel::io::h5::detail {


/// HDF5 prints its error stack to stderr by default; library code must not print, so we
/// silence it once and put the stack's essentials into the exception instead.
inline void quiet_hdf5() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

inline constexpr std::size_t kMaxReadBytes = std::size_t{256} << 20;  // per attribute or column

struct StackEntries {
  std::vector<std::string> lines;
};

inline herr_t collect_entry(unsigned /*n*/, const H5E_error2_t* err, void* data) {
  auto* entries = static_cast<StackEntries*>(data);
  std::string line = err->func_name ? std::string(err->func_name) + "(): " : std::string();
  line += err->desc ? err->desc : "(no description)";
  entries->lines.push_back(std::move(line));
  return 0;
}

/// The outermost (API) and innermost (root cause) entries of the current error stack.
inline std::string error_stack_summary() {
  StackEntries entries;
  if (H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_entry, &entries) < 0 || entries.lines.empty()) {
    return "no HDF5 error details";
  }
  std::string text = entries.lines.front();
  if (entries.lines.size() > 1) text += " <- " + entries.lines.back();
  return text;
}

/// Open ReadingScopes on this thread: failures then mean bad input, not failed output.
inline thread_local int g_reading = 0;

[[noreturn]] inline void throw_io(const std::string& message) {
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
inline std::string object_path(hid_t loc) {
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

inline std::string child_path(const Handle& parent, const std::string& name) {
  std::string where = object_path(parent.id());
  // Insert "/name" before the closing quote; the root group already ends with '/'.
  where.pop_back();
  if (where.back() != '/') where += '/';
  return where + name + "'";
}

inline std::string quoted(const std::string& text) { return "'" + text + "'"; }

inline herr_t close_any(hid_t id) noexcept {
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

inline Handle scalar_space() {
  return owned(H5Screate(H5S_SCALAR), "H5Screate", [] { return std::string("a scalar dataspace"); });
}

inline Handle vector_space(std::size_t n) {
  const hsize_t dims[1] = {static_cast<hsize_t>(n)};
  return owned(H5Screate_simple(1, dims, dims), "H5Screate_simple",
               [n] { return "a dataspace of " + std::to_string(n) + " elements"; });
}

/// Variable-length UTF-8 string type, used for every text attribute.
inline Handle vl_utf8_type() {
  auto what = [] { return std::string("a variable-length UTF-8 string type"); };
  Handle type = owned(H5Tcopy(H5T_C_S1), "H5Tcopy", what);
  check(H5Tset_size(type.id(), H5T_VARIABLE), "H5Tset_size", what);
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "H5Tset_cset", what);
  return type;
}

inline Handle fixed_utf8_type(std::size_t width_bytes) {
  auto what = [width_bytes] { return "a " + std::to_string(width_bytes) + "-byte UTF-8 string type"; };
  Handle type = owned(H5Tcopy(H5T_C_S1), "H5Tcopy", what);
  check(H5Tset_size(type.id(), width_bytes), "H5Tset_size", what);
  check(H5Tset_cset(type.id(), H5T_CSET_UTF8), "H5Tset_cset", what);
  check(H5Tset_strpad(type.id(), H5T_STR_NULLPAD), "H5Tset_strpad", what);
  return type;
}

/// Creates an attribute, replacing an existing one so that "write" means "set".
inline Handle create_attribute(const Handle& obj, const std::string& name, hid_t file_type, hid_t space) {
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

inline Source describe(Handle object, bool is_attribute, std::string where) {
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

inline Source open_attribute_source(const Handle& obj, const std::string& name) {
  quiet_hdf5();
  std::string where = child_path(obj, name) + " (attribute)";
  Handle attr = owned(H5Aopen(obj.id(), name.c_str(), H5P_DEFAULT), "H5Aopen", [&] { return where; });
  return describe(std::move(attr), true, std::move(where));
}

inline Source open_dataset_source(const Handle& group, const std::string& name) {
  quiet_hdf5();
  std::string where = child_path(group, name);
  Handle dataset = owned(H5Dopen2(group.id(), name.c_str(), H5P_DEFAULT), "H5Dopen2", [&] { return where; });
  return describe(std::move(dataset), false, std::move(where));
}

/// Reads fixed- or variable-length strings; fixed ones lose their NUL or space padding.
inline std::vector<std::string> read_strings(const Source& source) {
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

}  // namespace wavel::io::h5::detail
