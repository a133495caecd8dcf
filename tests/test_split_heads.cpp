// Split heads (issue 37): a prefill attention section's head groups on cells of the leaf, in the
// same steps; the cells by hand, the placement, the model's and the simulator's step times (a cell
// each, not their sum), MeshIR, and the search's choice.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "cost_fixtures.hpp"
#include "search_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/workload/model.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::wse3;

namespace {

workload::Workload llama_prefill(std::int64_t prompt) {
  return workload::build_workload(*workload::find_model_preset("llama3-8b"), {workload::Phase::prefill, 1, prompt, 0});
}

const workload::Layer& first_decoder(const workload::Workload& w) {
  const auto it = std::find_if(w.layers.begin(), w.layers.end(), [](const workload::Layer& l) { return l.decoder; });
  REQUIRE(it != w.layers.end());
  return *it;
}

// The first decoder block on a side x side region with `groups` head groups (SRAM unbounded).
meshir::Schedule place_block(const workload::Workload& w, std::int64_t side, std::int64_t groups) {
  meshir::Schedule s = one_region(side, side);
  s.grid_w_pes = s.grid_h_pes = side;
  s.sram_per_pe_bytes = std::int64_t{1} << 30;
  meshir::Tune tune;
  tune.head_groups = groups;
  meshir::Placer placer(s, false);
  placer.place(first_decoder(w), 0, s.regions[0], 0, tune);
  return s;
}

std::vector<std::size_t> named_like(const meshir::Schedule& s, const std::string& part) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    if (s.ops[i].name.find(part) != std::string::npos) out.push_back(i);
  }
  return out;
}

// Per-op times summed over each step's slowest op, and over every op.
std::pair<double, double> step_and_all(const meshir::Schedule& s, const std::function<double(std::size_t)>& time) {
  std::map<int, double> step_max;
  double all = 0;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    step_max[s.ops[i].step] = std::max(step_max[s.ops[i].step], time(i));
    all += time(i);
  }
  double steps = 0;
  for (const auto& [step, t] : step_max) steps += t;
  return {steps, all};
}

bool verified(const meshir::Schedule& s) {
  const auto problems = meshir::verify(s, "split", {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); });
  for (const auto& p : problems) MESSAGE(p.message);
  return problems.empty();
}

}  // namespace

TEST_CASE("split heads: the cells by hand") {
  using meshir::Rect;
  // 4 groups on 690 x 690: a 2 x 2 grid of 345-PE squares.
  const auto four = meshir::head_cells(Rect{10, 20, 690, 690}, 4);
  REQUIRE(four.size() == 4);
  CHECK(four[0] == Rect{10, 20, 345, 345});
  CHECK(four[1] == Rect{355, 20, 345, 345});
  CHECK(four[3] == Rect{355, 365, 345, 345});
  // 16: 4 x 4 cells of 172 or 173 PEs, tiling the leaf.
  const auto sixteen = meshir::head_cells(Rect{0, 0, 690, 690}, 16);
  REQUIRE(sixteen.size() == 16);
  std::int64_t area = 0;
  for (const auto& c : sixteen) {
    CHECK(std::max(c.w, c.h) <= 173);
    area += c.pes();
  }
  CHECK(area == 690 * 690);
  // 8 on a square: 2 x 4 and 4 x 2 tie on the longest side (345); the fewer columns win.
  const auto eight = meshir::head_cells(Rect{0, 0, 690, 690}, 8);
  REQUIRE(eight.size() == 8);
  CHECK(eight[0] == Rect{0, 0, 345, 172});
  // A tall leaf takes more rows than columns; a leaf too small for any grid takes none.
  CHECK(meshir::head_cells(Rect{0, 0, 100, 400}, 4)[0] == Rect{0, 0, 100, 100});
  CHECK(meshir::head_cells(Rect{0, 0, 3, 3}, 8).empty());
}

TEST_CASE("split heads: only prefill attention whose heads the count divides") {
  const auto w = llama_prefill(2048);
  const auto& block = first_decoder(w);
  const int first = meshir::attention_section(block);
  REQUIRE(first >= 0);
  CHECK(block.ops[static_cast<std::size_t>(first)].name == "attn_scores");
  CHECK(meshir::splits_heads(block, false, 4));
  CHECK(meshir::splits_heads(block, false, 32));
  CHECK_FALSE(meshir::splits_heads(block, false, 3));   // 32 heads
  CHECK_FALSE(meshir::splits_heads(block, false, 64));
  CHECK_FALSE(meshir::splits_heads(block, true, 4));    // decode
  CHECK_FALSE(meshir::splits_heads(block, false, 1));
  const auto decode = workload::build_workload(*workload::find_model_preset("llama3-8b"), {workload::Phase::decode, 1, 2048, 128});
  CHECK_FALSE(meshir::splits_heads(first_decoder(decode), true, 4));
}

TEST_CASE("split heads: the placement, its MeshIR and its costs (LLaMA-3-8B prefill, 4 groups on 128 x 128)") {
  const auto w = llama_prefill(2048);
  const meshir::Schedule whole = place_block(w, 128, 1);
  const meshir::Schedule split = place_block(w, 128, 4);
  // The leaf and its four 64 x 64 cells.
  REQUIRE(split.regions.size() == 5);
  CHECK(split.regions[4] == meshir::Rect{64, 64, 64, 64});
  const auto in = named_like(split, ".heads_in.h");
  const auto scores = named_like(split, ".attn_scores.h");
  const auto values = named_like(split, ".attn_values.h");
  const auto out = named_like(split, ".heads_out.h");
  REQUIRE(in.size() == 4);
  REQUIRE(scores.size() == 4);
  REQUIRE(values.size() == 4);
  REQUIRE(out.size() == 4);
  for (std::size_t g = 0; g < 4; ++g) {
    CAPTURE(g);
    // Each group in its own cell, every group in one step.
    CHECK(split.ops[in[g]].step == split.ops[in[0]].step);
    CHECK(split.ops[scores[g]].step == split.ops[scores[0]].step);
    CHECK(split.ops[scores[g]].region == static_cast<int>(g) + 1);
    CHECK(split.ops[in[g]].to_region == static_cast<int>(g) + 1);
    CHECK(split.ops[out[g]].to_region == 0);
    // A quarter of the heads: 8 query heads, 2 KV heads, a quarter of the FLOPs.
    CHECK(split.ops[scores[g]].work.heads == 8);
    CHECK(split.ops[scores[g]].work.kv_heads == 2);
    // Q (2048 x 1024 FP16) and K and V of 2 KV heads (2048 x 256 each) move in; 2048 x 1024 back.
    CHECK(split.ops[in[g]].work.input_bytes == 2048 * 1024 * 2 + 2 * 2048 * 256 * 2);
    CHECK(split.ops[out[g]].work.input_bytes == 2048 * 1024 * 2);
  }
  const auto whole_scores = named_like(whole, ".attn_scores");
  REQUIRE(whole_scores.size() == 1);
  CHECK(split.ops[scores[0]].work.flops * 4 == whole.ops[whole_scores[0]].work.flops);
  // The next op (o_proj) reads the first cell's return, on the leaf, in the leaf's layout.
  const auto o_proj = named_like(split, ".o_proj");
  REQUIRE(o_proj.size() == 1);
  CHECK(split.ops[o_proj[0]].inputs == std::vector<int>{static_cast<int>(out[0])});
  CHECK(split.ops[o_proj[0]].region == 0);
  CHECK(verified(split));
  // MeshIR text round-trips.
  const auto text = meshir::print(split);
  CHECK(meshir::print(meshir::parse(text, "split")) == text);

  const auto params = cost::default_params(wse3());
  const auto model = cost::evaluate(split, wse3(), params, false, 2048);
  // The model: a group's scores are a MeshGEMM-T of 8 heads on its 64 x 64 cell, priced alone ...
  meshir::Schedule alone = one_region(64, 64);
  alone.grid_w_pes = alone.grid_h_pes = 128;
  alone.sram_per_pe_bytes = split.sram_per_pe_bytes;
  alone.ops = {split.ops[scores[0]]};
  alone.ops[0].region = 0;
  alone.ops[0].step = 0;
  alone.ops[0].used = alone.regions[0];
  alone.ops[0].inputs.clear();
  const double one_cell = cost::evaluate(alone, wse3(), params, false, 2048).ops[0].total_cycles;
  CHECK(model.ops[scores[0]].total_cycles == doctest::Approx(one_cell).epsilon(1e-12));
  // ... and the four cells share the step: the pass is the steps' slowest ops, not every op summed.
  const auto [model_steps, model_all] = step_and_all(split, [&](std::size_t i) { return model.ops[i].total_cycles; });
  CHECK(model.pass_cycles == doctest::Approx(model_steps).epsilon(1e-9));
  CHECK(model_all - model_steps >= 3.0 * one_cell);
  // Split heads pay here: fewer, taller tiles' k-loops on a ring half as long.
  const auto model_whole = cost::evaluate(whole, wse3(), params, false, 2048);
  CHECK(model.pass_cycles < model_whole.pass_cycles);

  // The simulator prices the same schedule from its own physics, with the same overlap.
  sim::SimOptions options;
  const auto simulated = sim::simulate(split, wse3(), false, 2048, options);
  const auto [sim_steps, sim_all] = step_and_all(split, [&](std::size_t i) { return simulated.ops[i].total_cycles; });
  CHECK(simulated.pass_cycles == doctest::Approx(sim_steps).epsilon(1e-9));
  CHECK(sim_all - sim_steps >= 3.0 * simulated.ops[scores[0]].total_cycles * 0.9);
  const auto simulated_whole = sim::simulate(whole, wse3(), false, 2048, options);
  CHECK(simulated.pass_cycles < simulated_whole.pass_cycles);
}

TEST_CASE("split heads: movers of one step contend per way out of the leaf, in the model and the simulator") {
  const auto w = llama_prefill(2048);
  const meshir::Schedule split = place_block(w, 128, 4);
  const auto in = named_like(split, ".heads_in.h");
  REQUIRE(in.size() == 4);
  // From the leaf's centre the four cells lie up-left, up-right, down-left and down-right: dx and
  // dy tie, so each leaves along X, two west and two east. Each way carries two cells' bytes.
  const auto params = cost::default_params(wse3());
  const auto model = cost::evaluate(split, wse3(), params, false, 2048);
  meshir::Schedule alone = split;
  alone.ops = {split.ops[in[0]]};
  alone.ops[0].inputs.clear();
  alone.ops[0].step = 0;
  const auto single = cost::evaluate(alone, wse3(), params, false, 2048).ops[0];
  CHECK(model.ops[in[0]].link_cycles == doctest::Approx(2.0 * single.link_cycles).epsilon(1e-12));
  CHECK(model.ops[in[0]].total_cycles == doctest::Approx(single.total_cycles + single.link_cycles).epsilon(1e-12));
  // The simulator groups the same step's movers by way too and runs each way's lanes on one line:
  // a mover is charged what it loses there, never less than its own run.
  const auto simulated = sim::simulate(split, wse3(), false, 2048, sim::SimOptions{});
  for (const std::size_t i : in) {
    CHECK(simulated.ops[i].contention_cycles >= 0.0);
    CHECK(simulated.ops[i].total_cycles >= simulated.ops[i].cycles);
  }
}

TEST_CASE("split heads are a search choice: the space without them is a subset, and they pay on LLaMA-3-8B prefill") {
  const auto w = llama_prefill(2048);
  const auto wafer = wse3();
  const auto params = cost::default_params(wafer);
  auto options = wavel::test::one_level_options();
  options.head_groups = {1};
  const auto without = search::search_setting(w, wafer, params, options, {});
  options.head_groups = {1, 4, 16};
  const auto with = search::search_setting(w, wafer, params, options, {});
  REQUIRE(!without.front.empty());
  REQUIRE(!with.front.empty());
  const double plain = without.front.front().objectives.tokens_per_s;
  const double split = with.front.front().objectives.tokens_per_s;
  CHECK(split > 1.05 * plain);
  // Every front schedule verifies and costs as the search scored it; the fastest splits its heads.
  for (const auto& p : with.front) {
    const auto c = cost::evaluate(p.schedule, wafer, params, false, 2048);
    CHECK(c.tokens_per_s == p.objectives.tokens_per_s);
    CHECK(c.sram_headroom >= 0.0);
    CHECK(verified(p.schedule));
  }
  CHECK_FALSE(named_like(with.front.front().schedule, ".heads_in.h").empty());
  CHECK(named_like(without.front.front().schedule, ".heads_in.h").empty());
}
