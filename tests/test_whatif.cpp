// Hardware what-if: the wafer sweep's points, seeded defect maps, hardware reaching the cost model
// and the simulator, energy per token and the sensitivity rows, each against a hand-derived value.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>

#include "cost_fixtures.hpp"
#include "meshir_fixtures.hpp"
#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/hardware.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/energy.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/report/whatif.hpp"
#include "wavel/sim/microarch.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;

namespace {

const char* kWhatIf =
    "wafer:\n"
    "  preset: wse3\n"
    "  sweep_mode: one_at_a_time\n"
    "  sweep:\n"
    "    sram_per_pe_bytes: [49152, 98304]\n"
    "    link_bytes_per_cycle: [2, 8]\n"
    "    alpha_cycles_per_hop: 2\n"
    "workloads:\n"
    "  models: [llama3-8b]\n"
    "  phases: [decode]\n"
    "  concurrent_requests: [1, 4]\n";

std::string config_error(const std::string& text) {
  try {
    config::parse_config(text, "w.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("one-at-a-time hardware points: the base, then each value that differs from it") {
  const auto c = config::parse_config(kWhatIf, "w.yaml", {});
  // 49152 is the base's own SRAM: not a point of its own.
  REQUIRE(c.hardware.size() == 5);
  CHECK(c.hardware[0].label == "base");
  CHECK(c.hardware[0].base);
  CHECK(c.hardware[1].label == "sram_per_pe_bytes=98304");
  CHECK(c.hardware[1].wafer.sram_per_pe_bytes == 98304);
  CHECK(c.hardware[2].wafer.link_bytes_per_cycle == 2);
  CHECK(c.hardware[3].wafer.link_bytes_per_cycle == 8);
  CHECK(c.hardware[3].wafer.sram_per_pe_bytes == 49152);
  // A hop latency is hardware: the cost parameter of that name follows it; software constants stay.
  CHECK(c.hardware[4].wafer.alpha_cycles_per_hop == 2.0);
  CHECK(c.hardware[4].params.alpha_cycles_per_hop == 2.0);
  CHECK(c.hardware[4].params.gemm_k_cycles == c.cost.params.gemm_k_cycles);
  CHECK(c.hardware[1].params.alpha_cycles_per_hop == c.cost.params.alpha_cycles_per_hop);
  REQUIRE(c.at_hardware.size() == 5);
  // A point's configuration does not copy the other points (1000 points with 8,900 random
  // defects each would be 140 GB of copies).
  for (const auto& at : c.at_hardware) CHECK(at.hardware.empty());
  CHECK(&config::for_hardware(c, 3).wafer != &c.wafer);
  CHECK(config::for_hardware(c, 3).wafer.link_bytes_per_cycle == 8);
  CHECK(config::for_hardware(config::for_hardware(c, 3), 3).wafer.link_bytes_per_cycle == 8);

  // Settings: models, then hardware points, then the other axes.
  const auto settings = config::expand_sweep(c);
  REQUIRE(settings.size() == 10);
  CHECK(settings[0].hardware == 0);
  CHECK(settings[1].hardware == 0);
  CHECK(settings[2].hardware == 1);
  CHECK(settings[9].hardware == 4);
  CHECK(config::setting_label(c, settings[2]) == "llama3-8b decode r1 in2048 out128 [sram_per_pe_bytes=98304]");
}

TEST_CASE("product hardware points and their base") {
  const auto c = config::parse_config(
      "wafer:\n  sweep:\n    sram_per_pe_bytes: [49152, 98304]\n    simd_fp16_lanes: [8, 16]\n"
      "workloads:\n  models: [llama3-8b]\n",
      "w.yaml", {});
  REQUIRE(c.hardware.size() == 4);
  CHECK(c.hardware[0].label == "sram_per_pe_bytes=49152,simd_fp16_lanes=8");
  CHECK(c.hardware[0].base);  // every key at the preset's value
  CHECK_FALSE(c.hardware[3].base);
  CHECK(c.hardware[3].wafer.fmac_lanes() == 16);
  CHECK(c.hardware[3].wafer.sram_per_pe_bytes == 98304);
  // Without a sweep: one point, the config itself.
  const auto plain = config::parse_config("workloads:\n  models: [llama3-8b]\n", "p.yaml", {});
  REQUIRE(plain.hardware.size() == 1);
  CHECK(plain.at_hardware.empty());
  CHECK(&config::for_hardware(plain, 0) == &plain);
}

TEST_CASE("hardware sweeps: bad axes are errors with their key and line") {
  const std::string unknown = config_error("wafer:\n  sweep:\n    sram_kib: [64]\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(unknown.find("w.yaml:3") != std::string::npos);
  CHECK(unknown.find("wafer.sweep") != std::string::npos);
  const std::string big = config_error("wafer:\n  sweep:\n    grid_w_pes: [100, 5000]\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(big.find("wafer.sweep.grid_w_pes[1]") != std::string::npos);
  const std::string twice =
      config_error("wafer:\n  sweep:\n    simd_fp16_lanes: [16, 16]\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(twice.find("listed twice") != std::string::npos);
  const std::string many = config_error(
      "wafer:\n  sweep:\n    link_bytes_per_cycle: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n"
      "    routable_colours: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n    simd_fp16_lanes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
      "workloads:\n  models: [llama3-8b]\n");
  CHECK(many.find("the hardware sweep has 1100 points; the limit is 1000") != std::string::npos);
  const std::string rate = config_error("wafer:\n  defect_rate: 0.5\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(rate.find("wafer.defect_rate") != std::string::npos);
  const std::string outside = config_error(
      "wafer:\n  defective_pes: [[200, 3]]\n  sweep:\n    grid_w_pes: [100]\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(outside.find("leaves out the defective PE [200, 3]") != std::string::npos);
  const std::string power = config_error("energy:\n  system_power_w: 90000\nworkloads:\n  models: [llama3-8b]\n");
  CHECK(power.find("energy.system_power_w") != std::string::npos);
}

TEST_CASE("random defect maps are reproducible by seed and avoid listed defects") {
  const std::vector<wafer::PeCoord> listed{{3, 4}};
  const auto a = wafer::random_defects(100, 50, 40, 7, listed);
  const auto b = wafer::random_defects(100, 50, 40, 7, listed);
  const auto other = wafer::random_defects(100, 50, 40, 8, listed);
  REQUIRE(a.size() == 40);
  std::set<std::pair<std::int64_t, std::int64_t>> distinct;
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].x == b[i].x);
    CHECK(a[i].y == b[i].y);
    CHECK(a[i].x >= 0);
    CHECK(a[i].x < 100);
    CHECK(a[i].y < 50);
    CHECK_FALSE((a[i].x == 3 && a[i].y == 4));
    distinct.emplace(a[i].x, a[i].y);
  }
  CHECK(distinct.size() == 40);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) differs = differs || a[i].x != other[i].x || a[i].y != other[i].y;
  CHECK(differs);
  CHECK_THROWS_AS(wafer::random_defects(2, 2, 5, 1, listed), std::invalid_argument);

  // Through the config: round(rate x grid PEs) defects, the same map on every parse.
  const std::string text = "wafer:\n  grid_w_pes: 100\n  grid_h_pes: 100\n  defect_rate: 0.001\n  defect_seed: 3\n"
                           "workloads:\n  models: [llama3-8b]\n";
  const auto c1 = config::parse_config(text, "d.yaml", {});
  const auto c2 = config::parse_config(text, "d.yaml", {});
  REQUIRE(c1.wafer.defective_pes.size() == 10);
  CHECK(c1.wafer.usable_pes() == 100 * 100 - 10);
  for (std::size_t i = 0; i < 10; ++i) CHECK(c1.wafer.defective_pes[i].x == c2.wafer.defective_pes[i].x);
  // The resolved YAML keeps the rate, not the drawn PEs: read back, it draws the same map.
  const auto again = config::parse_config(config::to_yaml(c1), "again.yaml", {});
  REQUIRE(again.wafer.defective_pes.size() == 10);
  for (std::size_t i = 0; i < 10; ++i) CHECK(again.wafer.defective_pes[i].y == c1.wafer.defective_pes[i].y);
}

TEST_CASE("a hardware sweep survives the resolved YAML") {
  const auto c = config::parse_config(kWhatIf, "w.yaml", {});
  const auto again = config::parse_config(config::to_yaml(c), "again.yaml", {});
  REQUIRE(again.hardware.size() == c.hardware.size());
  for (std::size_t h = 0; h < c.hardware.size(); ++h) CHECK(again.hardware[h].label == c.hardware[h].label);
}

TEST_CASE("the simulator's PE is the wafer description's, nothing of a preset") {
  auto w = test::wse3();
  w.fmac_lanes() = 3;
  w.link_bytes_per_cycle = 7;
  w.sram_read_bytes_per_cycle = 24;
  w.sram_write_bytes_per_cycle = 12;
  w.alpha_cycles_per_hop = 2.5;
  w.routable_colours = 5;
  const auto m = sim::microarch_for(w);
  CHECK(m.fmac_lanes == 3);
  CHECK(m.link_bytes_per_cycle == 7);
  CHECK(m.sram_read_bytes_per_cycle == 24);
  CHECK(m.sram_write_bytes_per_cycle == 12);
  CHECK(m.hop_cycles == 2.5);
  CHECK(m.routable_colours == 5);
  w.routable_colours = 0;
  CHECK_THROWS_AS(sim::microarch_for(w), std::invalid_argument);
  // A default MicroArch carries no wafer figure that could stand in for a missing one.
  const sim::MicroArch blank;
  CHECK(blank.fmac_lanes == 0);
  CHECK(blank.link_bytes_per_cycle == 0);
  CHECK(blank.routable_colours == 0);
}

TEST_CASE("link bandwidth halves a bandwidth-bound transfer term and leaves the latency-bound one") {
  auto w = test::wse3();
  const auto p = test::round_params();
  const meshir::Rect from{0, 0, 8, 8}, to{40, 0, 8, 8};
  const auto slow = cost::transfer_cost(from, to, 1 << 20, w, p);
  w.link_bytes_per_cycle *= 2;
  const auto fast = cost::transfer_cost(from, to, 1 << 20, w, p);
  // Hand: bytes / (link bytes per cycle x parallel links); the links do not change, so exactly half.
  CHECK(fast.link_cycles == doctest::Approx(slow.link_cycles / 2.0).epsilon(1e-12));
  CHECK(slow.link_cycles > 1000.0);
  CHECK(fast.hops == slow.hops);
  CHECK(fast.hop_cycles == slow.hop_cycles);  // alpha x hops: latency, not bandwidth
  CHECK(fast.overhead_cycles == slow.overhead_cycles);
  // A 4-byte transfer is latency-bound: doubling the link moves it by under one cycle.
  auto narrow = test::wse3();
  const auto tiny_slow = cost::transfer_cost(from, to, 4, narrow, p);
  narrow.link_bytes_per_cycle *= 2;
  const auto tiny_fast = cost::transfer_cost(from, to, 4, narrow, p);
  CHECK(tiny_slow.total_cycles - tiny_fast.total_cycles < 1.0);
  CHECK(tiny_fast.total_cycles == doctest::Approx(tiny_slow.total_cycles).epsilon(0.01));
}

TEST_CASE("the clock scales time and nothing else") {
  const auto s = meshir_fixtures::decode_schedule();
  auto w = test::wse3();
  w.grid_w_pes = s.grid_w_pes;
  w.grid_h_pes = s.grid_h_pes;
  const auto p = test::round_params();
  const auto base = cost::evaluate(s, w, p, true, 128);
  w.clock_hz *= 2;
  const auto fast = cost::evaluate(s, w, p, true, 128);
  REQUIRE(base.tokens_per_s > 0);
  CHECK(fast.pass_cycles == base.pass_cycles);
  CHECK(fast.tokens_per_s == doctest::Approx(2.0 * base.tokens_per_s).epsilon(1e-12));
  CHECK(fast.latency_s == doctest::Approx(base.latency_s / 2.0).epsilon(1e-12));
}

TEST_CASE("energy per token by hand") {
  const auto w = test::wse3();
  cost::EnergyParams e;
  e.system_power_w = 20000;
  e.off_wafer_pj_per_bit = 10;
  CHECK(cost::system_power_w(w, e) == doctest::Approx(20000.0));
  // One wafer at 1000 tokens/s: 20 kW / 1000 = 20 J per token; 50 tokens/s per kW.
  const auto one = cost::token_energy(w, e, 1, 1000.0, 4096);
  CHECK(one.j_per_token == doctest::Approx(20.0));
  CHECK(one.link_j_per_token == 0.0);
  CHECK(one.tokens_per_s_per_kw == doctest::Approx(50.0));
  // Three wafers: 60 kW, and two boundaries of 4096 FP16 values at 10 pJ/bit = 2 x 65536 x 1e-11 J.
  const auto three = cost::token_energy(w, e, 3, 1000.0, 4096);
  CHECK(three.link_j_per_token == doctest::Approx(2.0 * 4096 * 16 * 10e-12));
  CHECK(three.j_per_token == doctest::Approx(60.0 + 2.0 * 4096 * 16 * 10e-12));
  // Power follows the clock and the fabric's PE count against the preset.
  auto fast = w;
  fast.clock_hz *= 1.5;
  CHECK(cost::system_power_w(fast, e) == doctest::Approx(30000.0));
  auto half = w;
  half.fabric_w_pes /= 2;
  CHECK(cost::system_power_w(half, e) == doctest::Approx(20000.0 * (w.fabric_w_pes / 2) / w.fabric_w_pes));
  CHECK(std::isnan(cost::token_energy(w, e, 1, 0.0, 4096).j_per_token));
}

TEST_CASE("sensitivity rows: each setting one key from its base, elasticity as a log ratio") {
  const auto c = config::parse_config(kWhatIf, "w.yaml", {});
  const auto settings = config::expand_sweep(c);
  std::vector<driver::SettingResult> results(settings.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    results[i].setting_id = settings[i].id;
    driver::FrontEntry best;
    // Requests 1: 100 tokens/s on the base; each point its own figure.
    best.tokens_per_s = 100.0 * static_cast<double>(settings[i].hardware + 1) * (settings[i].shape.concurrent_requests);
    results[i].front.push_back(best);
  }
  const auto rows = driver::sensitivity_rows(c, settings, results);
  REQUIRE(rows.size() == 8);  // 4 non-base points x 2 request counts
  const auto& link8 = rows[4];  // setting 6: hardware 3 (link 8), requests 1
  CHECK(link8.setting_id == 6);
  CHECK(link8.base_setting_id == 0);
  CHECK(link8.key == "link_bytes_per_cycle");
  CHECK(link8.base_value == 4);
  CHECK(link8.value == 8);
  CHECK(link8.change == doctest::Approx(3.0));  // 400 / 100 - 1
  CHECK(link8.elasticity == doctest::Approx(std::log(4.0) / std::log(2.0)));
  CHECK(rows[1].base_setting_id == 1);  // requests 4 against requests 4
  const auto table = driver::sensitivity_table(rows);
  CHECK(table.rows() == 8);
}

TEST_CASE("defect index and the largest clean rectangle against brute force") {
  auto wafer = test::wse3();
  wafer.grid_w_pes = 23;
  wafer.grid_h_pes = 17;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const auto drawn = wafer::random_defects(23, 17, static_cast<std::int64_t>(seed * 5), seed, {});
    wafer.defective_pes.assign(drawn.begin(), drawn.end());
    const wafer::DefectIndex index(wafer);
    const auto brute_count = [&](const meshir::Rect& r) {
      std::int64_t n = 0;
      for (const auto& pe : wafer.defective_pes) n += r.contains(pe.x, pe.y) ? 1 : 0;
      return n;
    };
    // Every rectangle of the grid: the index counts as a scan of the list does.
    meshir::Rect best{0, 0, 0, 0};
    for (std::int64_t x = 0; x < 23; ++x) {
      for (std::int64_t y = 0; y < 17; ++y) {
        for (std::int64_t w = 1; x + w <= 23; ++w) {
          for (std::int64_t h = 1; y + h <= 17; ++h) {
            const meshir::Rect r{x, y, w, h};
            const auto n = brute_count(r);
            REQUIRE(index.count(x, y, w, h) == n);
            // Largest clean, ties to the smallest left edge, then right edge, then top.
            if (n == 0 && (r.pes() > best.pes() ||
                           (r.pes() == best.pes() && std::make_tuple(r.x, r.x + r.w, r.y) <
                                                         std::make_tuple(best.x, best.x + best.w, best.y)))) {
              best = r;
            }
          }
        }
      }
    }
    // Full-Chip's region is that rectangle.
    const auto w = workload::build_workload(*workload::find_model_preset("llama3-8b"),
                                            {workload::Phase::decode, 1, 128, 16});
    const auto full = baselines::build_fullchip(w, wafer);
    REQUIRE(full.regions.size() == 1);
    CHECK(full.regions[0] == best);
  }
}

TEST_CASE("workloads.cases list settings one by one, on every hardware point") {
  const std::string text =
      "wafer:\n  sweep:\n    link_bytes_per_cycle: [8]\n  sweep_mode: one_at_a_time\n"
      "workloads:\n  cases:\n"
      "    - {model: llama3-8b, phase: decode, concurrent_requests: 16, output_tokens: 64}\n"
      "    - {model: qwen2-72b, phase: prefill, concurrent_requests: 2, input_tokens: 1024, wafers: 4}\n"
      "    - {model: llama3-8b, phase: prefill}\n";
  const auto c = config::parse_config(text, "c.yaml", {});
  REQUIRE(c.workloads.models.size() == 2);
  const auto settings = config::expand_sweep(c);
  REQUIRE(settings.size() == 6);  // 2 hardware points x 3 cases
  CHECK(settings[0].shape.concurrent_requests == 16);
  CHECK(settings[0].shape.output_tokens == 64);
  CHECK(settings[0].wafers == 1);
  CHECK(settings[1].model_index == 1);
  CHECK(settings[1].wafers == 4);
  CHECK(settings[1].shape.output_tokens == 0);  // prefill
  CHECK(settings[2].model_index == 0);
  CHECK(settings[2].shape.input_tokens == 2048);
  CHECK(settings[5].hardware == 1);
  CHECK(settings[5].shape.phase == workload::Phase::prefill);
  // The resolved YAML reads back to the same settings.
  const auto again = config::parse_config(config::to_yaml(c), "again.yaml", {});
  const auto again_settings = config::expand_sweep(again);
  REQUIRE(again_settings.size() == settings.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    CHECK(config::setting_label(again, again_settings[i]) == config::setting_label(c, settings[i]));
  }
  // Errors name the case.
  const std::string both = config_error("workloads:\n  models: [llama3-8b]\n  cases:\n    - {model: llama3-8b, phase: decode}\n");
  CHECK(both.find("not both") != std::string::npos);
  const std::string deep = config_error("workloads:\n  cases:\n    - {model: llama3-8b, phase: decode, wafers: 64}\n");
  CHECK(deep.find("workloads.cases[0].wafers") != std::string::npos);
  const std::string bare = config_error("workloads:\n  cases:\n    - {model: llama3-8b}\n");
  const std::string axis = config_error(
      "workloads:\n  cases:\n    - {model: llama3-8b, phase: decode}\ncluster:\n  wafers: [1, 2]\n");
  CHECK(axis.find("cluster.wafers") != std::string::npos);
  CHECK(bare.find("workloads.cases[0]") != std::string::npos);
}
