// Tests for the HDF5 wrapper and the results.h5 / CSV writers, run at 1, 2 and 4 MPI ranks.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/io/hdf5.hpp"
#include "wavel/io/results.hpp"

// Every case here is collective (MPI_COMM_WORLD): run at 1, 2 and 4 ranks.
TEST_SUITE_BEGIN("mpi");

namespace fs = std::filesystem;
using wavel::io::Attribute;
using wavel::io::Column;
using wavel::io::Table;

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::uint64_t bits_of(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

/// Doubles whose bit patterns are awkward for text and compression: signed zero, subnormals,
/// extremes, values with no short decimal form.
std::vector<double> awkward_doubles() {
  return {0.1,
          1.0 / 3.0,
          -0.0,
          std::numeric_limits<double>::denorm_min(),
          std::numeric_limits<double>::max(),
          std::numeric_limits<double>::lowest(),
          2.2250738585072014e-308,
          6.02214076e23,
          -1e-300,
          std::numeric_limits<double>::infinity()};
}

/// Deterministic finite doubles spread over all exponents (an LCG over raw bit patterns).
std::vector<double> pseudo_random_doubles(std::size_t count) {
  std::vector<double> values;
  std::uint64_t state = 0x9E3779B97F4A7C15ULL;
  while (values.size() < count) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    double value = 0;
    std::memcpy(&value, &state, sizeof value);
    if (std::isfinite(value)) values.push_back(value);
  }
  return values;
}

void check_same_bits(const std::vector<double>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CAPTURE(i);
    CHECK(bits_of(actual[i]) == bits_of(expected[i]));
  }
}

Table sample_table() {
  std::vector<double> latency_s = awkward_doubles();
  latency_s.push_back(std::numeric_limits<double>::quiet_NaN());
  const std::size_t rows = latency_s.size();
  std::vector<std::int64_t> count;
  std::vector<std::string> label;
  const std::vector<std::string> labels = {"alpha", "µs", "", "with,comma", "quote\"d", "日本語", "trailing space ",
                                           "two\nlines", "x", "end"};
  for (std::size_t i = 0; i < rows; ++i) {
    count.push_back(static_cast<std::int64_t>(i) * 1000 - 3);
    label.push_back(labels[i % labels.size()]);
  }
  count[0] = std::numeric_limits<std::int64_t>::min();
  count[1] = std::numeric_limits<std::int64_t>::max();
  // Column order deliberately not alphabetical: the `columns` attribute must preserve it.
  return Table{"settings",
               {Column{"latency_s", "s", latency_s}, Column{"label", "", label}, Column{"count", "1", count}}};
}

std::vector<Attribute> sample_attributes() {
  return {Attribute{"format_version", std::int64_t{1}},
          Attribute{"tool_version", std::string("wavel-dse 0.1.0 (abc123-dirty)")},
          Attribute{"config_text", std::string("model: llama\nwafer:\n  unit: µm\n")},
          Attribute{"seed_fraction", 0.1},
          Attribute{"mpi_ranks", std::int64_t{-7}}};
}

template <class T>
const std::vector<T>& values_of(const Table& table, std::size_t column) {
  return std::get<std::vector<T>>(table.columns.at(column).values);
}

}  // namespace

TEST_CASE("hdf5: Handle owns and closes identifiers") {
  CHECK_THROWS_AS(wavel::io::h5::Handle(H5I_INVALID_HID), wavel::OutputError);
  wavel::io::h5::Handle space(H5Screate(H5S_SCALAR));
  REQUIRE(space.valid());
  wavel::io::h5::Handle moved(std::move(space));
  CHECK_FALSE(space.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  CHECK(moved.valid());
  const hid_t id = moved.id();
  moved.close();
  CHECK_FALSE(moved.valid());
  CHECK(H5Iis_valid(id) <= 0);
  moved.close();  // closing twice is harmless
}

TEST_CASE("hdf5: results round trip with units, column order and root attributes") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-roundtrip");
  const std::string path = (dir / "results.h5").string();
  const Table written = sample_table();
  const Table second{"summary", {Column{"best_cost_s", "s", std::vector<double>{1.5, 2.5}},
                                 Column{"id", "1", std::vector<std::int64_t>{7, 9}}}};

  wavel::io::write_results_h5(path, sample_attributes(), {written, second}, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);

  CHECK(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".partial"));

  const Table read = wavel::io::read_table_h5(path, "settings");
  CHECK(read.name == "settings");
  REQUIRE(read.columns.size() == 3);
  CHECK(read.columns[0].name == "latency_s");
  CHECK(read.columns[1].name == "label");
  CHECK(read.columns[2].name == "count");
  CHECK(read.columns[0].units == "s");
  CHECK(read.columns[1].units == "");
  CHECK(read.columns[2].units == "1");
  check_same_bits(values_of<double>(read, 0), values_of<double>(written, 0));
  CHECK(values_of<std::string>(read, 1) == values_of<std::string>(written, 1));
  CHECK(values_of<std::int64_t>(read, 2) == values_of<std::int64_t>(written, 2));

  const Table summary = wavel::io::read_table_h5(path, "summary");
  REQUIRE(summary.columns.size() == 2);
  CHECK(values_of<double>(summary, 0) == std::vector<double>{1.5, 2.5});
  CHECK(values_of<std::int64_t>(summary, 1) == std::vector<std::int64_t>{7, 9});

  namespace h5 = wavel::io::h5;
  const h5::Handle file = h5::open_file_readonly(path);
  const h5::Handle root = h5::open_group(file, "/");
  CHECK(h5::read_int_attribute(root, "format_version") == 1);
  CHECK(h5::read_int_attribute(root, "mpi_ranks") == -7);
  CHECK(h5::read_string_attribute(root, "tool_version") == "wavel-dse 0.1.0 (abc123-dirty)");
  CHECK(h5::read_string_attribute(root, "config_text") == "model: llama\nwafer:\n  unit: µm\n");
  CHECK(bits_of(h5::read_double_attribute(root, "seed_fraction")) == bits_of(0.1));
  const h5::Handle group = h5::open_group(file, "settings");
  CHECK(h5::read_string_list_attribute(group, "columns") == std::vector<std::string>{"latency_s", "label", "count"});
  CHECK(h5::has_child(file, "summary"));
  CHECK_FALSE(h5::has_child(file, "nope"));

  // Wrong-kind reads are errors, not silent conversions.
  // Reading failures are bad input data (exit 65), not output failures (73).
  CHECK_THROWS_AS(h5::read_int_column(group, "latency_s"), wavel::InputDataError);
  CHECK_THROWS_AS(h5::read_double_column(group, "label"), wavel::InputDataError);
  CHECK_THROWS_AS(h5::read_string_attribute(root, "format_version"), wavel::InputDataError);
  CHECK_THROWS_AS(h5::read_double_attribute(root, "missing"), wavel::InputDataError);
  CHECK_THROWS_AS(wavel::io::read_table_h5(path, "nope"), wavel::InputDataError);
  CHECK_THROWS_AS(wavel::io::read_table_h5((dir / "absent.h5").string(), "settings"), wavel::InputMissingError);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: only root's values and layout are used, whichever rank is root") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-root-values");
  const std::string path = (dir / "results.h5").string();
  int ranks = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const int root = ranks - 1;
  Table table = sample_table();
  std::vector<Attribute> attributes = sample_attributes();
  if (world_rank() != root) {
    for (auto& column : table.columns) {
      std::visit([](auto& values) { values = {}; }, column.values);
    }
    attributes.clear();
  }
  wavel::io::write_results_h5(path, attributes, {table}, MPI_COMM_WORLD, root);
  MPI_Barrier(MPI_COMM_WORLD);
  const Table expected = sample_table();
  const Table read = wavel::io::read_table_h5(path, "settings");
  REQUIRE(read.columns.size() == 3);
  check_same_bits(values_of<double>(read, 0), values_of<double>(expected, 0));
  CHECK(values_of<std::string>(read, 1) == values_of<std::string>(expected, 1));
  CHECK(values_of<std::int64_t>(read, 2) == values_of<std::int64_t>(expected, 2));
  const auto file = wavel::io::h5::open_file_readonly(path);
  const auto root_group = wavel::io::h5::open_group(file, "/");
  CHECK(wavel::io::h5::read_int_attribute(root_group, "format_version") == 1);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: zero-row and zero-column tables") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-empty");
  const std::string path = (dir / "results.h5").string();
  const Table empty{"empty", {Column{"cost_s", "s", std::vector<double>{}},
                              Column{"id", "1", std::vector<std::int64_t>{}},
                              Column{"name", "", std::vector<std::string>{}}}};
  const Table no_columns{"no_columns", {}};
  wavel::io::write_results_h5(path, {}, {empty, no_columns}, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_FALSE(fs::exists(path + ".partial"));

  const Table read = wavel::io::read_table_h5(path, "empty");
  REQUIRE(read.columns.size() == 3);
  CHECK(read.rows() == 0);
  CHECK(read.columns[0].name == "cost_s");
  CHECK(read.columns[0].units == "s");
  CHECK(std::holds_alternative<std::vector<double>>(read.columns[0].values));
  CHECK(std::holds_alternative<std::vector<std::int64_t>>(read.columns[1].values));
  CHECK(std::holds_alternative<std::vector<std::string>>(read.columns[2].values));
  CHECK(wavel::io::read_table_h5(path, "no_columns").columns.empty());
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: a missing or non-directory parent throws on every rank and leaves nothing") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-bad-dir");
  const std::string missing = (dir / "no-such-dir" / "results.h5").string();
  try {
    wavel::io::write_results_h5(missing, sample_attributes(), {sample_table()}, MPI_COMM_WORLD);
    FAIL("expected wavel::OutputError");
  } catch (const wavel::OutputError& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK_FALSE(fs::exists(dir / "no-such-dir"));

  if (world_rank() == 0) wavel::io::write_file_atomically((dir / "plain-file").string(), "x");
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string under_file = (dir / "plain-file" / "results.h5").string();
  CHECK_THROWS_AS(wavel::io::write_results_h5(under_file, {}, {sample_table()}, MPI_COMM_WORLD),
                  wavel::OutputError);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(wavel::test::read_text(dir / "plain-file") == "x");
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: a failure inside the collective write keeps the previous file and removes .partial") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-fail");
  const std::string path = (dir / "results.h5").string();
  wavel::io::write_results_h5(path, {Attribute{"generation", std::int64_t{1}}}, {sample_table()}, MPI_COMM_WORLD);

  // A duplicate column name makes H5Dcreate fail, identically on every rank.
  const Table duplicate{"dup", {Column{"a", "1", std::vector<std::int64_t>{1}},
                                Column{"a", "1", std::vector<std::int64_t>{2}}}};
  CHECK_THROWS_AS(
      wavel::io::write_results_h5(path, {Attribute{"generation", std::int64_t{2}}}, {duplicate}, MPI_COMM_WORLD),
      wavel::OutputError);
  // Ragged tables are a bug in the caller, reported as such on every rank.
  const Table ragged{"ragged", {Column{"a", "1", std::vector<std::int64_t>{1, 2}},
                                Column{"b", "1", std::vector<double>{1.0}}}};
  CHECK_THROWS_AS(wavel::io::write_results_h5(path, {}, {ragged}, MPI_COMM_WORLD), wavel::InternalError);
  MPI_Barrier(MPI_COMM_WORLD);

  CHECK_FALSE(fs::exists(path + ".partial"));
  const auto file = wavel::io::h5::open_file_readonly(path);
  const auto root = wavel::io::h5::open_group(file, "/");
  CHECK(wavel::io::h5::read_int_attribute(root, "generation") == 1);
  CHECK_FALSE(wavel::io::h5::has_child(file, "dup"));
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: reads variable-length and space-padded string datasets") {
  namespace h5 = wavel::io::h5;
  const fs::path dir = wavel::test::scratch_dir("hdf5-strings");
  const std::string path = (dir / ("strings-" + std::to_string(world_rank()) + ".h5")).string();
  {
    // Written serially with the raw C API, as another tool might have written it.
    h5::Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
    const hsize_t dims[1] = {3};
    h5::Handle space(H5Screate_simple(1, dims, nullptr));
    h5::Handle vl_type(H5Tcopy(H5T_C_S1));
    H5Tset_size(vl_type.id(), H5T_VARIABLE);
    H5Tset_cset(vl_type.id(), H5T_CSET_UTF8);
    h5::Handle vl(H5Dcreate2(file.id(), "vl", vl_type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const char* vl_values[3] = {"µs", "", "longer text"};
    REQUIRE(H5Dwrite(vl.id(), vl_type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, vl_values) >= 0);

    h5::Handle padded_type(H5Tcopy(H5T_C_S1));
    H5Tset_size(padded_type.id(), 4);
    H5Tset_strpad(padded_type.id(), H5T_STR_SPACEPAD);
    h5::Handle padded(
        H5Dcreate2(file.id(), "padded", padded_type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    const char padded_values[] = "ab  abcd    ";
    REQUIRE(H5Dwrite(padded.id(), padded_type.id(), H5S_ALL, H5S_ALL, H5P_DEFAULT, padded_values) >= 0);
  }
  const h5::Handle file = h5::open_file_readonly(path);
  const h5::Handle root = h5::open_group(file, "/");
  CHECK(h5::read_string_column(root, "vl") == std::vector<std::string>{"µs", "", "longer text"});
  CHECK(h5::read_string_column(root, "padded") == std::vector<std::string>{"ab", "abcd", ""});
  CHECK(h5::dataset_type_class(h5::open_dataset(root, "vl")) == H5T_STRING);
}

TEST_CASE("csv: header, number formatting and quoting") {
  const fs::path dir = wavel::test::scratch_dir("csv-format");
  const std::string path = (dir / ("table-" + std::to_string(world_rank()) + ".csv")).string();
  const Table table{
      "t",
      {Column{"name", "", std::vector<std::string>{"plain", "a,b", "say \"hi\"", "two\nlines", ""}},
       Column{"x_s", "s", std::vector<double>{0.5, 0.1, -0.0, 1e-300, 3.0}},
       Column{"n, count", "1",
              std::vector<std::int64_t>{1, -2, 3, std::numeric_limits<std::int64_t>::max(),
                                        std::numeric_limits<std::int64_t>::min()}}}};
  wavel::io::write_csv(path, table);
  CHECK_FALSE(fs::exists(path + ".partial"));
  CHECK(wavel::test::read_text(path) ==
        "name,x_s,\"n, count\"\n"
        "plain,0.5,1\n"
        "\"a,b\",0.10000000000000001,-2\n"
        "\"say \"\"hi\"\"\",-0,3\n"
        "\"two\nlines\",1e-300,9223372036854775807\n"
        ",3,-9223372036854775808\n");

  // Overwriting replaces the file whole.
  wavel::io::write_csv(path, Table{"t", {Column{"only", "1", std::vector<std::int64_t>{}}}});
  CHECK(wavel::test::read_text(path) == "only\n");

  const std::string bad = (dir / "missing" / "t.csv").string();
  try {
    wavel::io::write_csv(bad, table);
    FAIL("expected wavel::OutputError");
  } catch (const wavel::OutputError& e) {
    CHECK(std::string(e.what()).find(bad) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(dir / "missing"));
  CHECK_THROWS_AS(wavel::io::write_csv(path, Table{"ragged", {Column{"a", "1", std::vector<double>{1.0}},
                                                             Column{"b", "1", std::vector<double>{}}}}),
                  wavel::InternalError);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("csv and hdf5: doubles round-trip bit-exactly") {
  const fs::path dir = wavel::test::scratch_dir("double-roundtrip");
  std::vector<double> values = awkward_doubles();
  values.pop_back();  // infinity: fine in HDF5, but "inf" is not a portable CSV number
  const std::vector<double> random = pseudo_random_doubles(2000);
  values.insert(values.end(), random.begin(), random.end());
  const Table table{"doubles", {Column{"value_s", "s", values}}};

  const std::string csv = (dir / ("doubles-" + std::to_string(world_rank()) + ".csv")).string();
  wavel::io::write_csv(csv, table);
  std::istringstream lines(wavel::test::read_text(csv));
  std::string line;
  REQUIRE(std::getline(lines, line));
  CHECK(line == "value_s");
  std::vector<double> parsed;
  while (std::getline(lines, line)) parsed.push_back(std::strtod(line.c_str(), nullptr));
  check_same_bits(parsed, values);

  const std::string h5_path = (dir / "doubles.h5").string();
  wavel::io::write_results_h5(h5_path, {}, {table}, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  check_same_bits(values_of<double>(wavel::io::read_table_h5(h5_path, "doubles"), 0), values);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: columns larger than one chunk") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-large");
  const std::string path = (dir / "results.h5").string();
  const std::size_t rows = 150000;  // more than two 64 Ki-row chunks
  std::vector<std::int64_t> ids(rows);
  std::vector<std::string> names(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    ids[i] = static_cast<std::int64_t>(i * i);
    names[i] = "n" + std::to_string(i);
  }
  wavel::io::write_results_h5(path, {},
                              {Table{"big", {Column{"id", "1", ids}, Column{"name", "", names}}}}, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const Table read = wavel::io::read_table_h5(path, "big");
  CHECK(values_of<std::int64_t>(read, 0) == ids);
  CHECK(values_of<std::string>(read, 1) == names);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_CASE("hdf5: a string column wider than one 64 MiB slab is written in slabs and reads back whole") {
  const fs::path dir = wavel::test::scratch_dir("hdf5-slabs");
  const std::string path = (dir / "results.h5").string();
  // Width 24 MiB: two rows per slab, so three slabs for five rows, the last one short.
  std::vector<std::string> texts;
  for (int i = 0; i < 5; ++i) texts.push_back(std::string(i == 2 ? (std::size_t{24} << 20) : 1000u + i, 'a' + i));
  wavel::io::write_results_h5(path, {}, {Table{"wide", {Column{"meshir", "", texts}}}}, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const Table read = wavel::io::read_table_h5(path, "wide");
  CHECK(values_of<std::string>(read, 0) == texts);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST_SUITE_END();
