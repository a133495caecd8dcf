// results.h5 read in a sandboxed child (issue 15): the same tables as the in-process reader, its
// errors passed through, and a child that crashes or hangs turned into exit 65 naming the file.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"
#include "wavel/io/results.hpp"
#include "wavel/io/sandboxed_read.hpp"

namespace {

using wavel::io::Column;
using wavel::io::Table;

using wavel::test::outcome;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("sandboxed results.h5 reader: same tables, errors and contained crashes" * doctest::test_suite("mpi")) {
  const auto dir = wavel::test::scratch_dir("sandboxed-read");
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) return;  // one process writes and reads its own files
  const std::string path = (dir / "results.h5").string();
  const Table written{"settings", {Column{"latency_s", "s", std::vector<double>{0.1, -0.0, 1e300}},
                                   Column{"label", "", std::vector<std::string>{"a", "", "µm"}},
                                   Column{"count", "1", std::vector<std::int64_t>{-1, 0, 1LL << 62}}}};
  const Table empty{"empty", {}};
  wavel::io::write_results_h5(path, {}, {written, empty}, MPI_COMM_SELF);

  const auto tables = wavel::io::read_tables_h5_sandboxed(path, {"settings", "empty"});
  REQUIRE(tables.size() == 2);
  const Table direct = wavel::io::read_table_h5(path, "settings");
  CHECK(wavel::io::encode_tables({tables[0]}) == wavel::io::encode_tables({direct}));  // bit for bit
  CHECK(tables[0].columns[2].units == "1");
  CHECK(tables[1].name == "empty");
  CHECK(tables[1].columns.empty());

  // The reader's own errors come back with their exit codes.
  auto [code, text] = outcome([&] { wavel::io::read_tables_h5_sandboxed(path, {"nope"}); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(contains(text, "has no table 'nope'"));
  const std::string not_h5 = (dir / "text.h5").string();
  { std::ofstream(not_h5) << "wafer: wse3\n"; }
  std::tie(code, text) = outcome([&] { wavel::io::read_tables_h5_sandboxed(not_h5, {"settings"}); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(contains(text, "not an HDF5 file"));
  std::tie(code, text) = outcome([&] { wavel::io::read_tables_h5_sandboxed((dir / "absent.h5").string(), {"x"}); });
  CHECK(code == wavel::ExitCode::no_input);

  // A reader that crashes or hangs (as libhdf5 does on some forged files): 65, naming the file.
  wavel::io::SandboxLimits crashing;
  crashing.child_setup = [] { ::raise(SIGSEGV); };
  std::tie(code, text) = outcome([&] { wavel::io::read_tables_h5_sandboxed(path, {"settings"}, crashing); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(contains(text, "results file '" + path + "' could not be read: the HDF5 library crashed (signal 11"));
  CHECK(contains(text, "corrupt or crafted file"));
  wavel::io::SandboxLimits hanging;
  hanging.wall_seconds = 1;
  hanging.child_setup = [] { ::pause(); };
  std::tie(code, text) = outcome([&] { wavel::io::read_tables_h5_sandboxed(path, {"settings"}, hanging); });
  CHECK(code == wavel::ExitCode::data_error);
  CHECK(contains(text, "did not finish reading it within 1 s"));
  wavel::io::SandboxLimits greedy;  // the address-space limit holds in the child
  greedy.memory_bytes = std::uint64_t{64} << 20;
  greedy.child_setup = [] {
    // A sanitizer build reports its allocator's refusal on stderr; the refusal is the point here.
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, STDERR_FILENO);
    std::string big(std::size_t{256} << 20, 'x');
    std::memset(big.data(), 1, big.size());
  };
  std::tie(code, text) = outcome([&] { wavel::io::read_tables_h5_sandboxed(path, {"settings"}, greedy); });
  CHECK(code == wavel::ExitCode::data_error);
  // (A sanitizer build's allocator stops the child instead of throwing bad_alloc.)
  CHECK((contains(text, "memory limit of 64 MiB") || contains(text, "corrupt or crafted file")));
}

TEST_CASE("sandboxed results.h5 reader: a forged answer is refused before anything large is allocated") {
  const std::string good = wavel::io::encode_tables(
      {Table{"t", {Column{"a", "", std::vector<std::string>{"x", "y"}}, Column{"b", "1", std::vector<std::int64_t>{1, 2}}}}});
  CHECK(wavel::io::decode_tables(good, "f.h5").front().columns.size() == 2);
  for (std::size_t cut = 0; cut < good.size(); ++cut) {
    const auto [code, text] = outcome([&] { wavel::io::decode_tables(good.substr(0, cut), "f.h5"); });
    CHECK(code == wavel::ExitCode::data_error);
    CHECK(contains(text, "results file 'f.h5': the reader's answer is malformed"));
  }
  wavel::Packer huge;  // claims 2^60 tables
  huge.put(std::uint64_t{1} << 60);
  CHECK(outcome([&] { wavel::io::decode_tables(huge.bytes(), "f.h5"); }).first == wavel::ExitCode::data_error);
  // Columns of different lengths, and trailing bytes.
  const std::string uneven = wavel::io::encode_tables(
      {Table{"t", {Column{"a", "", std::vector<double>{1}}, Column{"b", "", std::vector<double>{1, 2}}}}});
  CHECK(contains(outcome([&] { wavel::io::decode_tables(uneven, "f.h5"); }).second, "different lengths"));
  CHECK(contains(outcome([&] { wavel::io::decode_tables(good + "x", "f.h5"); }).second, "left over"));
}
