// Schedules an expert would not write (issue 37): split epilogues. The allgather that restores their
// layout by hand in the cost model and in the simulator, the verifier's check of its layouts, and the
// split SiLU against the replicated one, placed, costed and searched.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "cost_fixtures.hpp"
#include "search_fixtures.hpp"
#include "sim_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sim/simulate.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_options;
using wavel::test::round_params;
using wavel::test::wse3;

namespace {

// A split epilogue's pieces on a w x h region: features over both axes in, gathered along `along`.
meshir::PlacedOp gather_on(const meshir::Rect& r, meshir::Axis along, std::int64_t features) {
  auto op = op_on(r, meshir::Kernel::allgather);
  op.reduce_axis = along;
  op.in_layout = {meshir::Dim::features, meshir::Dim::features, r.w, r.h, 1, 1, 0, 0};
  op.out_layout = along == meshir::Axis::x ? meshir::Layout{meshir::Dim::none, meshir::Dim::features, 1, r.h, 1, 1, 0, 0}
                                           : meshir::Layout{meshir::Dim::features, meshir::Dim::none, r.w, 1, 1, 1, 0, 0};
  op.work.batch = 1;
  op.work.m = 1;
  op.work.n = features;
  op.work.input_bytes = op.work.output_bytes = 2 * features;
  return op;
}

workload::Workload tiny_decode() {
  const auto model = workload::load_hf_config(wavel::test::source_path("configs/models/tiny-llama/config.json").string());
  return workload::build_workload(model, {workload::Phase::decode, 1, 128, 32});
}

// One decoder block of tiny_decode() placed on a w x h region under `tune`, and its cost.
std::pair<meshir::Schedule, cost::ScheduleCost> block_on(std::int64_t w, std::int64_t h, const meshir::Tune& tune) {
  const auto wl = tiny_decode();
  auto wafer = wse3();
  meshir::Schedule s = one_region(w, h);
  meshir::Placer placer(s, /*decode=*/true);
  placer.place(wl.layers[1], 0, s.regions[0], 0, tune);
  auto c = cost::evaluate(s, wafer, cost::default_params(wafer), true, 128);
  return {s, c};
}

int index_of(const meshir::Schedule& s, const std::string& suffix) {
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const auto& n = s.ops[i].name;
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("allgather in the cost model, by hand") {
  // 10 x 4, gathered along X: lines of 10 PEs, 4 of them. 320 features of FP16 = 640 bytes, a line's
  // slice 160. Chains into the centre: 5 hops, one stage (30); the centre's ramp takes the other 9
  // PEs' pieces, 144 bytes = 36 wavelets; the multicast back: 5 hops, 160 bytes = 40 wavelets; and
  // the collective's call (40): 10 + 30 + 76 + 40 = 156.
  auto s = one_region(10, 4);
  s.ops = {gather_on(s.regions[0], meshir::Axis::x, 320)};
  const auto c = cost::op_cost(s, s.ops[0], wse3(), round_params());
  CHECK(c.hops == 10);
  CHECK(c.stage_cycles == doctest::Approx(30.0));
  CHECK(c.link_cycles == doctest::Approx(76.0));
  CHECK(c.total_cycles == doctest::Approx(156.0));
  // Along Y: lines of 4, 10 of them; slice 64 bytes, the others' 48 = 12 wavelets, multicast 16:
  // 2 + 2 hops, 30, 28, 40 = 102.
  s.ops = {gather_on(s.regions[0], meshir::Axis::y, 320)};
  CHECK(cost::op_cost(s, s.ops[0], wse3(), round_params()).total_cycles == doctest::Approx(102.0));
  // A line of one PE already holds its slice.
  auto line = one_region(1, 4);
  line.ops = {gather_on(line.regions[0], meshir::Axis::x, 320)};
  CHECK(cost::op_cost(line, line.ops[0], wse3(), round_params()).total_cycles == 0.0);
}

TEST_CASE("allgather in the simulator, by hand") {
  // A line of 3 along X, 48 features: 48 wavelets (one FP16 element each), a piece of 16 per PE.
  // Launch 64; PE 0 and PE 2 each send 16 wavelets one hop into PE 1, whose one ejection ramp takes
  // them in turn: 64 + 1 + 32 = 97. PE 1 multicasts the 48 wavelets one hop each way: 97 + 1 + 48.
  auto s = one_region(3, 1);
  s.ops = {gather_on(s.regions[0], meshir::Axis::x, 48)};
  CHECK(sim::simulate_op(s, 0, wse3(), round_options()).cycles == 146.0);
  // Twice the features: each phase's wavelets double, the launch and hops do not.
  s.ops = {gather_on(s.regions[0], meshir::Axis::x, 96)};
  CHECK(sim::simulate_op(s, 0, wse3(), round_options()).cycles == 64.0 + 1.0 + 64.0 + 1.0 + 96.0);
}

TEST_CASE("the verifier checks an allgather's layouts") {
  auto s = one_region(8, 4);
  s.ops = {gather_on(s.regions[0], meshir::Axis::x, 64)};
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  CHECK(meshir::verify(s, "t", {}, colours).empty());
  // Gathered along X, the features must stay on Y: features left on X are not what it makes.
  s.ops[0].out_layout = {meshir::Dim::features, meshir::Dim::none, 8, 1, 1, 1, 0, 0};
  auto d = meshir::verify(s, "t", {}, colours);
  REQUIRE(!d.empty());
  CHECK(d.front().message.find("allgather") != std::string::npos);
  CHECK(d.front().key_path.find("out") != std::string::npos);
  // Its input must be split over both axes.
  s.ops = {gather_on(s.regions[0], meshir::Axis::x, 64)};
  s.ops[0].in_layout = s.ops[0].out_layout;
  CHECK(!meshir::verify(s, "t", {}, colours).empty());
}

TEST_CASE("a split SiLU.mul runs its scalar loop on a piece, and the gather costs less than the copies saved") {
  // Decode's gate/up output holds the FFN features along one axis, replicated over the other. The
  // replicated SiLU loops over every PE's whole copy; split, each of the `across` PEs takes its piece.
  meshir::Tune split;
  split.split_epilogues = true;
  const auto [rs, rc] = block_on(16, 8, meshir::Tune{});
  const auto [ss, sc] = block_on(16, 8, split);
  const int r_act = index_of(rs, ".act"), s_act = index_of(ss, ".act"), gather = index_of(ss, ".act.gather");
  REQUIRE(r_act >= 0);
  REQUIRE(s_act >= 0);
  REQUIRE(gather == s_act + 1);
  CHECK(index_of(rs, ".gather") < 0);
  const auto& act = ss.ops[static_cast<std::size_t>(s_act)];
  CHECK(act.in_layout.features_on_both());
  CHECK(ss.ops[static_cast<std::size_t>(gather)].kernel == meshir::Kernel::allgather);
  // Its inputs are read in place (narrowed), not re-laid out: the split adds exactly one op.
  CHECK(ss.ops.size() == rs.ops.size() + 1);
  // The replicated loop covers 704 features over 16 or 8 PEs; split over 16 x 8, one PE's piece is
  // 8 or 16 times smaller. The act's cost must shrink accordingly (a model that charged the copy
  // would not), and with the gather the block is faster.
  const double replicated = rc.ops[static_cast<std::size_t>(r_act)].total_cycles;
  const double piece = sc.ops[static_cast<std::size_t>(s_act)].total_cycles;
  CHECK(piece < replicated / 6.0);
  CHECK(piece + sc.ops[static_cast<std::size_t>(gather)].total_cycles < replicated);
  CHECK(sc.pass_cycles < rc.pass_cycles);
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  CHECK(meshir::verify(ss, "split", {}, colours).empty());
  // Prefill has no replicated copies to split.
  CHECK_FALSE(meshir::splits_epilogue(tiny_decode().layers[1].ops[0], false));
}

TEST_CASE("split epilogues are a TUNE choice: the search's best with them is never slower, and here uses them") {
  const auto w = tiny_decode();
  auto wafer = wse3();
  wafer.grid_w_pes = wafer.grid_h_pes = 24;
  const auto params = cost::default_params(wafer);
  auto o = wavel::test::one_level_options();
  const auto with = search::search_setting(w, wafer, params, o, {});
  o.split_epilogues = false;
  const auto without = search::search_setting(w, wafer, params, o, {});
  REQUIRE(!with.front.empty());
  REQUIRE(!without.front.empty());
  CHECK(with.front.front().objectives.tokens_per_s > without.front.front().objectives.tokens_per_s);
  bool gathers = false;
  for (const auto& op : with.front.front().schedule.ops) gathers = gathers || op.kernel == meshir::Kernel::allgather;
  CHECK(gathers);
  for (const auto& op : without.front.front().schedule.ops) CHECK(op.kernel != meshir::Kernel::allgather);
}

TEST_CASE("under an expert CUT every strip splits its SiLU.mul in the same steps, and gathers in the next") {
  auto model = *workload::find_model_preset("deepseek-v2-lite");
  model.num_layers = 2;
  const auto wl = workload::build_workload(model, {workload::Phase::decode, 4, 512, 64});
  const workload::Layer* moe = nullptr;
  for (const auto& l : wl.layers) {
    if (l.is_moe && moe == nullptr) moe = &l;
  }
  REQUIRE(moe != nullptr);
  auto s = one_region(64, 48);
  s.sram_per_pe_bytes = std::int64_t{1} << 30;  // the layout, not whether two layers fit on 64 x 48
  meshir::Tune t;
  t.expert_groups = 4;
  t.split_epilogues = true;
  meshir::Placer placer(s, /*decode=*/true, workload::MoeRouting{1.25});
  placer.place(*moe, 0, s.regions[0], 0, t);
  std::map<int, std::vector<const meshir::PlacedOp*>> pieces, gathers;  // by step
  for (const auto& op : s.ops) {
    if (op.kernel == meshir::Kernel::allgather) gathers[op.step].push_back(&op);
    if (op.kernel == meshir::Kernel::elementwise && op.in_layout.features_on_both()) pieces[op.step].push_back(&op);
  }
  // The routed experts' act on each of the 4 strips (the shared experts' act on the block's region).
  std::size_t routed = 0;
  for (const auto& [step, ops] : pieces) {
    if (ops.size() < 4) continue;
    ++routed;
    CHECK(ops.size() == 4);
    REQUIRE(gathers.count(step + 1) == 1);
    CHECK(gathers.at(step + 1).size() == 4);
    std::set<int> regions;
    for (const auto* g : gathers.at(step + 1)) regions.insert(g->region);
    CHECK(regions.size() == 4);
  }
  CHECK(routed == 1);
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(s, "strips", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  CHECK(d.empty());
}
