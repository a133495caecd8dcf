// The end of a sweep keeps MeshIR texts on disk: read_back leaves them in the spool, the schedules
// table reads them back row by row as it is written, and what lands in results.h5 is unchanged.
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/engine/spool.hpp"
#include "wavel/sweep/sweep_job.hpp"
#include "wavel/sweep/grouping.hpp"
#include "wavel/common/fields.hpp"
#include "wavel/commands/run.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/io/hdf5.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/text.hpp"

namespace fs = std::filesystem;
using wavel::driver::FrontEntry;
using wavel::driver::ScheduleResult;
using wavel::driver::SettingResult;

namespace {

int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

/// A setting with two baselines (one unplaced, no text) and `front` search points, each text distinct.
SettingResult sample(std::int64_t id, std::size_t front) {
  SettingResult r;
  r.setting_id = id;
  ScheduleResult placed;
  placed.name = "fullchip";
  placed.placed = true;
  placed.tokens_per_s = 10.0 * static_cast<double>(id + 1);
  placed.meshir = "meshir fullchip of setting " + std::to_string(id) + std::string(static_cast<std::size_t>(id) * 7, 'x');
  ScheduleResult unplaced;
  unplaced.name = "waferllm";
  unplaced.na_reason = "does not fit";
  r.schedules = {placed, unplaced};
  for (std::size_t i = 0; i < front; ++i) {
    FrontEntry f;
    f.source = "search";
    f.tokens_per_s = static_cast<double>(100 - i);
    f.meshir = "front " + std::to_string(i) + " of " + std::to_string(id);
    r.front.push_back(f);
  }
  return r;
}

std::string packed(const SettingResult& r) {
  wavel::Packer p;
  wavel::driver::pack_setting(r, p);
  return p.take();
}

std::vector<std::string> texts_of(const wavel::io::Table& table) {
  const auto& column = table.columns.at(2).values;
  if (const auto* rows = std::get_if<wavel::io::TextRows>(&column)) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < rows->count; ++i) out.push_back(rows->at(i));
    return out;
  }
  return std::get<std::vector<std::string>>(column);
}

}  // namespace

TEST_CASE("read_back leaves MeshIR texts in the spool and the schedules table reads the same texts back" * doctest::test_suite("mpi")) {
  const auto dir = wavel::test::scratch_dir("spool-texts");  // collective
  if (world_rank() != 0) return;                              // rank 0's hub alone holds the spool
  const std::vector<SettingResult> originals{sample(0, 2), sample(1, 0), sample(2, 3)};
  std::vector<wavel::config::Setting> settings(originals.size());
  auto spool = std::make_shared<wavel::engine::Spool>(wavel::engine::Spool::create((dir / "settings.spool").string(), {}));
  wavel::engine::Finished finished{spool, {}, std::vector<bool>(originals.size(), false)};
  for (std::size_t s = 0; s < originals.size(); ++s) {
    settings[s].id = originals[s].setting_id;
    finished.entries.push_back(spool->append(100 + s, packed(originals[s])));
  }
  auto light = wavel::driver::detail::read_back(finished, settings);
  REQUIRE(light.size() == 3);
  // Every text left memory; its place and size are recorded.
  CHECK(light[2].front[1].meshir.empty());
  CHECK(light[2].front[1].meshir_ref.setting_index == 2);
  CHECK(light[2].front[1].meshir_ref.slot == 3);  // after the two schedules
  CHECK(light[2].front[1].meshir_ref.bytes == originals[2].front[1].meshir.size());
  CHECK(light[0].schedules[1].meshir_ref.setting_index == -1);  // unplaced: no text, no reference

  const wavel::driver::TextFetch fetch = wavel::driver::detail::spool_texts(finished);
  CHECK(fetch(light[2].schedules[0].meshir_ref) == originals[2].schedules[0].meshir);
  CHECK(fetch(light[0].front[1].meshir_ref) == originals[0].front[1].meshir);  // another setting: re-read
  CHECK(wavel::driver::meshir_text("", light[1].schedules[0].meshir_ref, fetch) == originals[1].schedules[0].meshir);

  const auto expected = wavel::driver::schedules_table(originals);
  const auto table = wavel::driver::schedules_table(light, fetch);
  CHECK(std::holds_alternative<wavel::io::TextRows>(table.columns.at(2).values));
  CHECK(texts_of(table) == texts_of(expected));
  CHECK(wavel::io::csv_text(table) == wavel::io::csv_text(expected));
  // Without a way to read back, a text on disk is an internal error, not an empty string.
  CHECK_THROWS_AS(wavel::driver::meshir_text("", light[0].front[0].meshir_ref, {}), wavel::InternalError);

  // In results.h5 the column is the one an in-memory table gives (width: the longest text).
  const auto a = (dir / "texts.h5").string();
  const auto b = (dir / "strings.h5").string();
  wavel::io::write_results_h5(a, {}, {table}, MPI_COMM_SELF);
  wavel::io::write_results_h5(b, {}, {expected}, MPI_COMM_SELF);
  const auto read_a = wavel::io::read_table_h5(a, "schedules");
  const auto read_b = wavel::io::read_table_h5(b, "schedules");
  CHECK(texts_of(read_a) == texts_of(read_b));
  CHECK(texts_of(read_a) == texts_of(expected));
  CHECK(fs::file_size(a) == fs::file_size(b));

  // A spool altered under the run is named, not read as another text.
  auto other = std::make_shared<wavel::engine::Spool>(wavel::engine::Spool::create("", {}));
  const wavel::engine::Finished moved{other, {other->append(0, packed(sample(5, 0)))}, {false}};
  const auto wrong = wavel::driver::detail::spool_texts(moved);
  CHECK_THROWS_AS(wrong(light[0].schedules[0].meshir_ref), wavel::InputDataError);
}

TEST_CASE("a text row longer than its column announced is refused, not cut" * doctest::test_suite("mpi")) {
  const auto dir = wavel::test::scratch_dir("spool-rows");
  if (world_rank() != 0) return;
  wavel::io::TextRows rows{2, 4, [](std::size_t row) { return row == 0 ? std::string("abc") : std::string("abcdef"); }};
  const wavel::io::Table table{"t", {{"text", "", rows}}};
  CHECK_THROWS_AS(wavel::io::write_results_h5((dir / "t.h5").string(), {}, {table}, MPI_COMM_SELF),
                  wavel::InternalError);
}

TEST_CASE("request grouping reads the texts left on disk and gives the intervals the texts in memory give") {
  const auto dir = wavel::test::scratch_dir("spool-grouping");
  if (world_rank() != 0) return;
  const auto c = wavel::config::parse_config("workloads:\n"
                                             "  models: [llama3-8b]\n"
                                             "  phases: [decode]\n"
                                             "  concurrent_requests: [1, 2]\n"
                                             "  lengths: [[2048, 128]]\n"
                                             "cost:\n"
                                             "  params_file: " +
                                                 wavel::test::source_path("configs/params/wse3.yaml").string() +
                                                 "\n"
                                                 "  draws: 16\n",
                                             "g.yaml", {});
  const auto settings = wavel::config::expand_sweep(c);
  REQUIRE(settings.size() == 2);
  // Real schedules (the intervals re-cost them under the draws): Full-Chip as the baseline and
  // WaferLLM as the search's best; one request is made faster per request, so R = 2 takes it.
  std::vector<SettingResult> in_memory(2);
  for (std::size_t s = 0; s < 2; ++s) {
    const auto w = wavel::driver::setting_workload(c, settings[s]);
    auto& r = in_memory[s];
    r.setting_id = settings[s].id;
    ScheduleResult full;
    full.name = "fullchip";
    full.placed = true;
    full.tokens_per_s = s == 0 ? 1000 : 10;
    full.meshir = wavel::meshir::print(wavel::baselines::build_fullchip(w, c.wafer));
    r.schedules = {full};
    auto best = wavel::baselines::build_waferllm_tuned(w, c.wafer, c.cost.params);
    REQUIRE(best.has_value());
    r.front.push_back(FrontEntry{"search", s == 0 ? 2000.0 : 20.0, 1e-3, 100, 1, 1, 0.5, wavel::meshir::print(*best), {}});
  }
  auto spool = std::make_shared<wavel::engine::Spool>(wavel::engine::Spool::create("", {}));
  wavel::engine::Finished finished{spool, {}, {false, false}};
  for (const auto& r : in_memory) finished.entries.push_back(spool->append(0, packed(r)));
  auto on_disk = wavel::driver::detail::read_back(finished, settings);
  wavel::driver::apply_request_grouping(c, settings, in_memory);
  wavel::driver::apply_request_grouping(c, settings, on_disk, wavel::driver::detail::spool_texts(finished));
  const auto& a = in_memory[1].intervals;
  const auto& b = on_disk[1].intervals;
  CHECK(a.draws == 16);
  CHECK(std::isfinite(a.speedup_vs_fullchip_lo));
  CHECK(a.wavel_tokens_per_s_lo == b.wavel_tokens_per_s_lo);
  CHECK(a.wavel_tokens_per_s_hi == b.wavel_tokens_per_s_hi);
  CHECK(a.speedup_vs_fullchip_lo == b.speedup_vs_fullchip_lo);
  CHECK(a.speedup_vs_fullchip_hi == b.speedup_vs_fullchip_hi);
  CHECK(on_disk[1].front.front().meshir_ref.setting_index == 0);  // the donor's text, still on disk
  CHECK(on_disk[1].front.front().source == "grouped:2x1");
}
