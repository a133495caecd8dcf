// Concurrent branches (issue 37; issue 38's shared experts beside the routed ones): which ops form the
// branch, where its strip lies and how wide, its steps, and its cost in the model and the simulator
// against the same block run one op after another.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <map>
#include <string>

#include "cost_fixtures.hpp"
#include "search_fixtures.hpp"
#include "sim_fixtures.hpp"
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
using wavel::test::round_options;
using wavel::test::wse3;

namespace {

workload::Workload moe_workload(const std::string& preset, workload::Phase phase, std::int64_t requests) {
  auto model = *workload::find_model_preset(preset);
  model.num_layers = 2;
  return workload::build_workload(model, {phase, requests, 512, 64});
}

const workload::Layer& first_moe(const workload::Workload& w) {
  for (const auto& l : w.layers) {
    if (l.is_moe) return l;
  }
  throw std::runtime_error("no MoE layer");
}

std::size_t op_named(const workload::Layer& l, const std::string& name) {
  for (std::size_t i = 0; i < l.ops.size(); ++i) {
    if (l.ops[i].name == name) return i;
  }
  throw std::runtime_error("no op " + name);
}

// An expert CUT into `groups` strips with the shared experts beside them.
meshir::Tune with_branches(std::int64_t groups) {
  meshir::Tune t;
  t.expert_groups = groups;
  t.concurrent_branches = true;
  return t;
}

struct Placed {
  meshir::Schedule s;
  cost::ScheduleCost c;
};

// The first MoE block of `w` on a w x h region under `tune` (SRAM unbounded: the layout is tested).
Placed place_moe(const workload::Workload& w, std::int64_t width, std::int64_t height, const meshir::Tune& tune) {
  Placed p{one_region(width, height), {}};
  p.s.sram_per_pe_bytes = std::int64_t{1} << 30;
  meshir::Placer placer(p.s, w.shape.phase == workload::Phase::decode, workload::MoeRouting{1.25});
  placer.place(first_moe(w), 0, p.s.regions[0], 0, tune);
  p.c = cost::evaluate(p.s, wse3(), cost::default_params(wse3()), w.shape.phase == workload::Phase::decode, 512);
  return p;
}

// Per-op times summed over the steps' slowest ops, over every op, and over the shared experts' ops.
struct Sums {
  double steps = 0, all = 0, shared = 0;
};
Sums sums_of(const meshir::Schedule& s, const std::function<double(std::size_t)>& time) {
  std::map<int, double> step_max;
  Sums out;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const double t = time(i);
    step_max[s.ops[i].step] = std::max(step_max[s.ops[i].step], t);
    out.all += t;
    if (s.ops[i].name.find("shared_") != std::string::npos) out.shared += t;
  }
  for (const auto& [step, t] : step_max) out.steps += t;
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

TEST_CASE("the branch beside the routed experts: DeepSeek's shared experts, none in Qwen3, none when two values leave") {
  const auto ds = moe_workload("deepseek-v2-lite", workload::Phase::decode, 1);
  const auto& l = first_moe(ds);
  const std::size_t dispatch = op_named(l, "moe_dispatch"), combine = op_named(l, "moe_combine");
  const auto branch = meshir::beside_routed(l, dispatch, combine);
  REQUIRE(branch.size() == 3);
  CHECK(l.ops[branch[0]].name == "shared_gate_up");
  CHECK(l.ops[branch[1]].name == "shared_act");
  CHECK(l.ops[branch[2]].name == "shared_down");
  CHECK(meshir::has_concurrent_branch(l));
  const auto qwen = moe_workload("qwen3-30b-a3b", workload::Phase::decode, 1);
  CHECK_FALSE(meshir::has_concurrent_branch(first_moe(qwen)));
  // If the residual also read shared_act, two of the branch's values would leave it: no branch.
  auto two = l;
  two.ops.back().inputs.push_back(static_cast<int>(branch[1]));
  CHECK(meshir::beside_routed(two, dispatch, combine).empty());
  // Dense blocks have no MoE section.
  CHECK_FALSE(meshir::has_concurrent_branch(ds.layers.front()));
}

TEST_CASE("concurrent branches: the shared experts run in the routed experts' steps on a strip of their own") {
  const auto w = moe_workload("deepseek-v2-lite", workload::Phase::decode, 4);
  meshir::Tune seq;
  seq.expert_groups = 4;
  meshir::Tune par = seq;
  par.concurrent_branches = true;
  const auto a = place_moe(w, 64, 48, seq);
  const auto b = place_moe(w, 64, 48, par);
  // Three shared ops, each in the step of a routed op, on a strip beside the four expert strips;
  // every token is dispatched to it and its output comes back in the combines' step.
  std::map<int, int> routed_in_step;
  for (const auto& op : b.s.ops) {
    if (op.name.find(".g") != std::string::npos) ++routed_in_step[op.step];
  }
  int beside_ops = 0;
  meshir::Rect strip{};
  for (const auto& op : b.s.ops) {
    if (op.name.find(".beside") == std::string::npos) continue;
    ++beside_ops;
    CHECK(routed_in_step[op.step] == 4);
    if (op.name.find("shared_") != std::string::npos) strip = op.used;
  }
  CHECK(beside_ops == 5);  // dispatch, gate_up, act, down, combine
  // The strip's width is its share of the FLOPs against the four groups' (routed rows at capacity
  // 1.25: 4 tokens x 6 of 64 experts over 4 groups -> min(4 x 6, ceil(1.25 x 24 / 4)) = 8 rows a group).
  const auto& l = first_moe(w);
  double shared = 0, group = 0;
  for (const char* n : {"shared_gate_up", "shared_act", "shared_down"}) shared += static_cast<double>(l.ops[op_named(l, n)].flops);
  const auto routed = static_cast<double>(l.ops[op_named(l, "moe_dispatch")].m);
  CHECK(routed == 24.0);
  for (const char* n : {"expert_gate_up", "expert_act", "expert_down"}) {
    group += std::ceil(static_cast<double>(l.ops[op_named(l, n)].flops) * 8.0 / routed);
  }
  CHECK(strip.h == 48);
  CHECK(strip.w == std::llround(64.0 * shared / (shared + 4.0 * group)));
  CHECK(strip.x == (64 - strip.w) * 2 / 4);  // in the middle: after two of the four expert strips
  // Three steps fewer: the shared ops no longer run after the combine.
  const auto steps = [](const meshir::Schedule& s) { return s.ops.back().step + 1; };
  CHECK(steps(b.s) == steps(a.s) - 3);
  // Here (decode, 4 requests) the block is faster: the shared experts' steps leave the pass.
  CHECK(b.c.pass_cycles < a.c.pass_cycles);
  // A narrower strip: the FLOPs-balanced width over branch_narrowing.
  meshir::Tune narrow = par;
  narrow.branch_narrowing = 4;
  const auto n = place_moe(w, 64, 48, narrow);
  for (const auto& op : n.s.ops) {
    if (op.name.find("shared_gate_up.beside") != std::string::npos) {
      CHECK(op.used.w == std::llround(64.0 * shared / (shared + 4.0 * group) / 4.0));
    }
  }
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(b.s, "branches", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  CHECK(d.empty());
  // The text form round-trips.
  CHECK(meshir::print(meshir::parse(meshir::print(b.s), "t")) == meshir::print(b.s));
}

TEST_CASE("concurrent branches are costed as overlapping, in the model and in the simulator") {
  const auto w = moe_workload("deepseek-v2-lite", workload::Phase::decode, 4);
  const auto b = place_moe(w, 64, 48, with_branches(4));
  // The model: a step takes its slowest op, so the pass is the sum of the steps' maxima, below the
  // sum over ops by at least every shared op's time (a sequential costing would equal the sum).
  const auto model = sums_of(b.s, [&](std::size_t i) { return b.c.ops[i].total_cycles; });
  CHECK(model.shared > 0);
  CHECK(b.c.pass_cycles == doctest::Approx(model.steps));
  CHECK(b.c.pass_cycles <= model.all - model.shared + 1e-6);
  // The simulator, from its own timing: the same rule holds for its op times.
  const auto r = sim::simulate(b.s, wse3(), true, 512, round_options());
  const auto simulated = sums_of(b.s, [&](std::size_t i) { return r.ops[i].total_cycles; });
  CHECK(simulated.shared > 0);
  CHECK(r.pass_cycles == doctest::Approx(simulated.steps));
  CHECK(r.pass_cycles <= simulated.all - simulated.shared + 1e-6);
}

TEST_CASE("concurrent branches in prefill: the shared GEMMs on their strip, every token dispatched to it") {
  const auto w = moe_workload("deepseek-v2-lite", workload::Phase::prefill, 1);
  const auto b = place_moe(w, 64, 48, with_branches(2));
  const auto& l = first_moe(w);
  const auto norm_bytes = l.ops[op_named(l, "mlp_norm")].output_bytes;
  bool dispatched = false, gemm = false;
  for (const auto& op : b.s.ops) {
    if (ends_with(op.name, "moe_dispatch.beside")) {
      dispatched = true;
      CHECK(op.kernel == meshir::Kernel::moe_dispatch);
      CHECK(op.work.input_bytes == norm_bytes);  // all 512 tokens, not a routed share
      CHECK(meshir::exchange_of(b.s, op).has_value());
    }
    if (ends_with(op.name, "shared_gate_up.beside")) gemm = op.kernel == meshir::Kernel::meshgemm;
  }
  CHECK(dispatched);
  CHECK(gemm);
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(b.s, "prefill", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  CHECK(d.empty());
}

TEST_CASE("concurrent branches are a TUNE choice: the search's best with them is never slower than without") {
  const auto w = moe_workload("deepseek-v2-lite", workload::Phase::decode, 4);
  auto wafer = wse3();
  wafer.grid_w_pes = wafer.grid_h_pes = 96;
  wafer.sram_per_pe_bytes = std::int64_t{1} << 22;  // two layers of DeepSeek on a 96 x 96 corner
  const auto params = cost::default_params(wafer);
  auto o = wavel::test::one_level_options();
  o.expert_groups = {1, 4};
  const auto with = search::search_setting(w, wafer, params, o, {});
  o.concurrent_branches = false;
  const auto without = search::search_setting(w, wafer, params, o, {});
  REQUIRE(!with.front.empty());
  REQUIRE(!without.front.empty());
  CHECK(with.front.front().objectives.tokens_per_s >= without.front.front().objectives.tokens_per_s);
  for (const auto& op : without.front.front().schedule.ops) CHECK(op.name.find(".beside") == std::string::npos);
}
