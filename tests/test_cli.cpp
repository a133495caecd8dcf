// The command line end to end through run_cli: exit codes, messages, and what gets written.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "test_support.hpp"
#include "wavel/cli/cli.hpp"
#include "wavel/common/error.hpp"
#include "wavel/report/costed_with.hpp"

// Every case here is collective (MPI_COMM_WORLD): run at 1, 2 and 4 ranks.
TEST_SUITE_BEGIN("mpi");

namespace fs = std::filesystem;

namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result cli(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = wavel::cli::run_cli(args, out, err, MPI_COMM_WORLD);
  return {code, out.str(), err.str()};
}

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

fs::path write_config(const fs::path& dir, const std::string& name, const std::string& text) {
  const auto path = dir / name;
  if (rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

const char* kSmall =
    "workloads:\n"
    "  models: [llama3-8b]\n"
    "  phases: [prefill, decode]\n"
    "  concurrent_requests: [1, 2, 3]\n"
    "search:\n"  // the mechanics under test do not need the widest space (CI time)
    "  sram_boundaries: false\n"
    "  max_cut_depth: 2\n"
    "  cut_ratios: [0.5]\n"
    "  strip_counts: [3]\n";

}  // namespace

TEST_CASE("help and version answer without a config") {
  auto help = cli({"--help"});
  CHECK(help.code == 0);
  if (rank() == 0) CHECK(help.out.find("Usage: wavel-dse [run] CONFIG.yaml") != std::string::npos);
  auto version = cli({"--version"});
  CHECK(version.code == 0);
  if (rank() == 0) CHECK(version.out.rfind("wavel-dse 0.1.0 (git ", 0) == 0);
}

TEST_CASE("usage errors exit 64") {
  CHECK(cli({}).code == 64);
  CHECK(cli({"--no-such-flag", "x.yaml"}).code == 64);
  CHECK(cli({"a.yaml", "b.yaml"}).code == 64);
  CHECK(cli({"--dry", "x.yaml"}).code == 64);  // no prefix guessing: --dry is not --dry-run
  auto misplaced = cli({"show", "r.h5", "--trace", "t.json"});
  CHECK(misplaced.code == 64);
  if (rank() == 0) CHECK(misplaced.err.find("option --trace does not apply to 'show'") != std::string::npos);
  CHECK(cli({"simulate", "/nonexistent.meshir"}).code == 66);
}

TEST_CASE("a missing config exits 66") {
  auto r = cli({"/nonexistent/dir/config.yaml"});
  CHECK(r.code == 66);
  if (rank() == 0) CHECK(r.err.find("cannot read config file '/nonexistent/dir/config.yaml'") != std::string::npos);
}

TEST_CASE("an invalid config exits 78 and writes nothing") {
  const auto dir = wavel::test::scratch_dir("cli-bad");
  const auto config = write_config(dir, "bad.yaml", "workloads:\n  models: [llama3-8b]\n  phases: [decod]\n");
  const auto out = dir / "out";
  auto r = cli({config.string(), "--output", out.string()});
  CHECK(r.code == 78);
  if (rank() == 0) {
    CHECK(r.err.find(config.string() + ":3:12: error: workloads.phases[0]: unknown value 'decod'") !=
          std::string::npos);
    CHECK(r.err.find("1 error; nothing was written") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));
  auto bad_set = cli({config.string(), "--set", "workloads.phases=decode", "--set", "wafer.grid_w_pes=0",
                      "--output", out.string()});
  CHECK(bad_set.code == 78);
  if (rank() == 0) CHECK(bad_set.err.find("--set[2]:1:18: error: wafer.grid_w_pes: must be >= 1, got 0") !=
                         std::string::npos);
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("--dry-run lists the settings and writes nothing") {
  const auto dir = wavel::test::scratch_dir("cli-dry");
  const auto config = write_config(dir, "small.yaml", kSmall);
  const auto out = dir / "out";
  auto r = cli({"--dry-run", config.string(), "--output", out.string()});
  CHECK(r.code == 0);
  if (rank() == 0) {
    CHECK(r.out.find("# 6 settings (dry run: nothing written)") != std::string::npos);
    CHECK(r.out.find("preset: wse3") != std::string::npos);
    CHECK(r.out.find("dir: " + out.string()) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("a run writes results.h5 and summary.csv, and nothing partial") {
  const auto dir = wavel::test::scratch_dir("cli-run");
  const auto config = write_config(dir, "small.yaml", kSmall);
  const auto out = dir / "out";
  auto r = cli({"run", config.string(), "--output", out.string()});
  CHECK(r.code == 0);
  CHECK(fs::exists(out / "results.h5"));
  CHECK(fs::exists(out / "summary.csv"));
  CHECK_FALSE(fs::exists(out / "results.h5.partial"));
  CHECK_FALSE(fs::exists(out / "summary.csv.partial"));
  const std::string csv = wavel::test::read_text(out / "summary.csv");
  CHECK(csv.rfind("setting_id,model,phase,concurrent_requests,", 0) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 7);
  if (rank() == 0) CHECK(r.out.find("llama3-8b") != std::string::npos);
}

TEST_CASE("an output directory that cannot be created exits 73") {
  const auto dir = wavel::test::scratch_dir("cli-noout");
  const auto config = write_config(dir, "small.yaml", kSmall);
  const auto blocker = write_config(dir, "file", "not a directory");
  auto r = cli({config.string(), "--output", (blocker / "sub").string()});
  CHECK(r.code == 73);
}

TEST_CASE("a shown schedule's param lines: applied by name, unknown names and out-of-bounds values located (issue 40)") {
  wavel::meshir::Schedule s;
  s.costed_params = {{"alpha_cycles_per_hop", 2.5}, {"sim_timing.task_launch_cycles", 40}};
  wavel::meshir::ParsedSchedule parsed{s, {}};
  parsed.lines.costed_params = {7, 8};
  wavel::cost::CostParams params;
  wavel::wafer::PeTiming timing;
  wavel::driver::apply_costed_params(parsed, "x.meshir", params, timing);
  CHECK(params.alpha_cycles_per_hop == 2.5);
  CHECK(timing.task_launch_cycles == 40);
  parsed.schedule.costed_params = {{"alpha_cycles_per_hp", 2.5}, {"gemm_k_cycles", -1}};
  try {
    wavel::driver::apply_costed_params(parsed, "x.meshir", params, timing);
    FAIL("no error");
  } catch (const wavel::DataError& e) {
    REQUIRE(e.diagnostics().size() == 2);
    CHECK(e.diagnostics()[0].format() ==
          "x.meshir:7: error: param: unknown parameter 'alpha_cycles_per_hp'; did you mean 'alpha_cycles_per_hop'?");
    CHECK(e.diagnostics()[1].line == 8);
    CHECK(e.diagnostics()[1].message.find("gemm_k_cycles = -1") == 0);
    CHECK(e.code() == wavel::ExitCode::data_error);
  }
}

TEST_SUITE_END();
