// Sibling branches (issue 37): a merged matmul's products (Q/K/V, gate/up) on strips of the leaf in
// one step; the strips by hand, the placement, the model's and the simulator's step times (the
// slowest product, not their sum), MeshIR, and the search's choice.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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

workload::Workload llama(workload::Phase phase, std::int64_t requests, std::int64_t layers = 32) {
  auto model = *workload::find_model_preset("llama3-8b");
  model.num_layers = layers;
  return workload::build_workload(model, {phase, requests, 512, 64});
}

const workload::Layer& first_decoder(const workload::Workload& w) {
  const auto it = std::find_if(w.layers.begin(), w.layers.end(), [](const workload::Layer& l) { return l.decoder; });
  REQUIRE(it != w.layers.end());
  return *it;
}

// `block` on a w x h region, with or without sibling branches (SRAM unbounded: the layout is tested).
meshir::Schedule place(const workload::Layer& block, bool decode, std::int64_t w, std::int64_t h, bool siblings) {
  meshir::Schedule s = one_region(w, h);
  s.sram_per_pe_bytes = std::int64_t{1} << 30;
  meshir::Tune tune;
  tune.sibling_branches = siblings;
  meshir::Placer placer(s, decode);
  placer.place(block, 0, s.regions[0], 0, tune);
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Per-op times summed over each step's slowest op, over every op, and what the sibling steps save
// against running their ops one after another (sum minus slowest, over steps holding siblings).
struct Sums {
  double steps = 0, all = 0, overlapped = 0;
};
Sums sums_of(const meshir::Schedule& s, const std::function<double(std::size_t)>& time) {
  std::map<int, double> step_max, step_sum;
  std::map<int, bool> sibling_step;
  Sums out;
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    const double t = time(i);
    const int step = s.ops[i].step;
    step_max[step] = std::max(step_max[step], t);
    step_sum[step] += t;
    out.all += t;
    if (s.ops[i].name.find(".sibling") != std::string::npos) sibling_step[step] = true;
  }
  for (const auto& [step, t] : step_max) {
    out.steps += t;
    if (sibling_step[step]) out.overlapped += step_sum[step] - t;
  }
  return out;
}

}  // namespace

TEST_CASE("sibling strips: the side cut in proportion to the products' widths") {
  const std::vector<workload::Op::Part> qkv{{"q", 4096}, {"k", 1024}, {"v", 1024}};
  // 60 columns: 40, 10, 10.
  const auto x = meshir::sibling_strips({5, 7, 60, 30}, qkv, meshir::Axis::x);
  REQUIRE(x.size() == 3);
  CHECK(x[0] == meshir::Rect{5, 7, 40, 30});
  CHECK(x[1] == meshir::Rect{45, 7, 10, 30});
  CHECK(x[2] == meshir::Rect{55, 7, 10, 30});
  // 30 rows: 20, 5, 5.
  const auto y = meshir::sibling_strips({0, 0, 60, 30}, qkv, meshir::Axis::y);
  REQUIRE(y.size() == 3);
  CHECK(y[0] == meshir::Rect{0, 0, 60, 20});
  CHECK(y[1] == meshir::Rect{0, 20, 60, 5});
  CHECK(y[2] == meshir::Rect{0, 25, 60, 5});
  // Rounding down the cumulative share (64 x 4096 / 6144 = 42.7, 64 x 5120 / 6144 = 53.3).
  const auto r = meshir::sibling_strips({0, 0, 64, 8}, qkv, meshir::Axis::x);
  REQUIRE(r.size() == 3);
  CHECK(r[0].w == 42);
  CHECK(r[1].w == 11);
  CHECK(r[2].w == 11);
  // Every strip at least one PE, however small its product.
  const auto thin = meshir::sibling_strips({0, 0, 3, 8}, {{"a", 1000000}, {"b", 1}, {"c", 1}}, meshir::Axis::x);
  REQUIRE(thin.size() == 3);
  for (const auto& s : thin) CHECK(s.w == 1);
  CHECK(meshir::sibling_strips({0, 0, 2, 8}, qkv, meshir::Axis::x).empty());  // fewer columns than products
  CHECK(meshir::sibling_strips({0, 0, 8, 8}, {{"a", 4}}, meshir::Axis::x).empty());  // nothing to split
  // Widths near the int64 range neither overflow nor wrap: halves stay halves, and a sum past the
  // range gives no strips.
  const std::int64_t big = std::int64_t{1} << 61;
  const auto halves = meshir::sibling_strips({0, 0, 1000, 8}, {{"a", big}, {"b", big}}, meshir::Axis::x);
  REQUIRE(halves.size() == 2);
  CHECK(halves[0].w == 500);
  CHECK(meshir::sibling_strips({0, 0, 1000, 8}, {{"a", big * 3}, {"b", big * 3}}, meshir::Axis::x).empty());
}

TEST_CASE("sibling branches in decode: Q/K/V and gate/up on strips along the reduction, in three steps each") {
  const auto w = llama(workload::Phase::decode, 4, 2);
  const auto& block = first_decoder(w);
  REQUIRE(meshir::has_sibling_branches(block));  // WaferLLM's fused reductions are merged ops
  const auto plain = place(block, true, 64, 48, false);
  const auto s = place(block, true, 64, 48, true);
  const meshir::PlacedOp* qkv = nullptr;
  for (const auto& op : plain.ops) {
    if (ends_with(op.name, "qkv_proj")) qkv = &op;
  }
  REQUIRE(qkv != nullptr);
  REQUIRE(qkv->reduce_axis == meshir::Axis::x);
  std::map<std::string, const meshir::PlacedOp*> by_name;
  for (const auto& op : s.ops) {
    if (op.name.rfind(block.name + ".", 0) == 0) by_name[op.name.substr(block.name.size() + 1)] = &op;
  }
  for (const char* n : {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj"}) {
    const std::string name = n;
    REQUIRE(by_name.count(name + ".sibling") == 1);
    const auto& in = *by_name[name + ".sibling_in"];
    const auto& product = *by_name[name + ".sibling"];
    const auto& out = *by_name[name + ".sibling_out"];
    CHECK(in.kernel == meshir::Kernel::transfer);
    CHECK(out.kernel == meshir::Kernel::transfer);
    CHECK(product.kernel == meshir::Kernel::meshgemv);
    CHECK(product.work.fused == 1);
    // Each product reduces along the merged one's axis, over its strip's share of it.
    CHECK(product.reduce_axis == qkv->reduce_axis);
    CHECK(product.used.h == 48);
    CHECK(in.step + 1 == product.step);
    CHECK(product.step + 1 == out.step);
  }
  // The siblings of one merged op share their steps; the strips tile the leaf's width.
  CHECK(by_name["q_proj.sibling"]->step == by_name["v_proj.sibling"]->step);
  CHECK(by_name["gate_proj.sibling"]->step == by_name["up_proj.sibling"]->step);
  CHECK(by_name["q_proj.sibling"]->used.w == 42);
  CHECK(by_name["k_proj.sibling"]->used.w == 11);
  CHECK(by_name["gate_proj.sibling"]->used.w == 32);
  // The products' work adds up to the merged op's.
  CHECK(by_name["q_proj.sibling"]->work.flops + by_name["k_proj.sibling"]->work.flops +
            by_name["v_proj.sibling"]->work.flops == qkv->work.flops);
  // Two merged ops, three steps each instead of one.
  CHECK(s.ops.back().step == plain.ops.back().step + 4);
  // Weights per PE as before (each strip as wide as its share of the weights), up to rounding.
  const auto sram_plain = meshir::region_sram_per_pe(plain, 0).resident_bytes;
  const auto sram = meshir::region_sram_per_pe(s, 0).resident_bytes;
  CHECK(static_cast<double>(sram) == doctest::Approx(static_cast<double>(sram_plain)).epsilon(0.03));
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(s, "siblings", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  CHECK(d.empty());
  CHECK(meshir::print(meshir::parse(meshir::print(s), "t")) == meshir::print(s));
}

TEST_CASE("sibling branches are costed as overlapping, in the model and in the simulator") {
  const auto w = llama(workload::Phase::decode, 4, 2);
  const auto s = place(first_decoder(w), true, 64, 48, true);
  const auto c = cost::evaluate(s, wse3(), cost::default_params(wse3()), true, 512);
  // The model: a step takes its slowest op; a sequential costing would add the siblings' times.
  const auto model = sums_of(s, [&](std::size_t i) { return c.ops[i].total_cycles; });
  CHECK(model.overlapped > 0);
  CHECK(c.pass_cycles == doctest::Approx(model.steps));
  CHECK(c.pass_cycles <= model.all - model.overlapped + 1e-6);
  // The simulator, from its own timing.
  const auto r = sim::simulate(s, wse3(), true, 512, round_options());
  const auto simulated = sums_of(s, [&](std::size_t i) { return r.ops[i].total_cycles; });
  CHECK(simulated.overlapped > 0);
  CHECK(r.pass_cycles == doctest::Approx(simulated.steps));
  CHECK(r.pass_cycles <= simulated.all - simulated.overlapped + 1e-6);
  // A product alone on its strip: the strip's K-tree line is the strip's width, not the leaf's.
  for (std::size_t i = 0; i < s.ops.size(); ++i) {
    if (!ends_with(s.ops[i].name, "gate_proj.sibling")) continue;
    meshir::Schedule alone = one_region(s.ops[i].used.w, s.ops[i].used.h);
    meshir::PlacedOp op = s.ops[i];
    op.region = 0;
    op.used = alone.regions[0];
    op.inputs.clear();
    op.step = 0;
    alone.ops = {op};
    const auto a = cost::evaluate(alone, wse3(), cost::default_params(wse3()), true, 512);
    CHECK(c.ops[i].total_cycles == doctest::Approx(a.ops[0].total_cycles));
  }
}

TEST_CASE("sibling branches in prefill: the fused Q/K/V and gate/up MeshGEMMs on strips of the longer side") {
  const auto w = llama(workload::Phase::prefill, 1, 2);
  const auto fused = workload::fuse_shared_inputs(first_decoder(w), workload::Phase::prefill);
  CHECK_FALSE(meshir::has_sibling_branches(first_decoder(w)));  // unfused: nothing merged
  REQUIRE(meshir::has_sibling_branches(fused));
  const auto s = place(fused, false, 48, 64, true);
  int products = 0;
  for (const auto& op : s.ops) {
    if (!ends_with(op.name, ".sibling")) continue;
    ++products;
    CHECK(op.kernel == meshir::Kernel::meshgemm);
    CHECK(op.used.w == 48);  // cut along Y, the longer side
  }
  CHECK(products == 5);
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(s, "prefill", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  CHECK(d.empty());
}

TEST_CASE("sibling branches are a choice of the search: its best with them is never slower than without") {
  const auto w = llama(workload::Phase::decode, 4, 2);
  auto wafer = wse3();
  wafer.grid_w_pes = wafer.grid_h_pes = 96;
  wafer.sram_per_pe_bytes = std::int64_t{1} << 22;
  const auto params = cost::default_params(wafer);
  auto o = wavel::test::one_level_options();
  const auto with = search::search_setting(w, wafer, params, o, {});
  o.sibling_branches = false;
  const auto without = search::search_setting(w, wafer, params, o, {});
  REQUIRE(!with.front.empty());
  REQUIRE(!without.front.empty());
  CHECK(with.front.front().objectives.tokens_per_s >= without.front.front().objectives.tokens_per_s);
  for (const auto& op : without.front.front().schedule.ops) CHECK(op.name.find(".sibling") == std::string::npos);
  // Every front point's schedule verifies.
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  for (const auto& p : with.front) CHECK(meshir::verify(p.schedule, "front", {}, colours).empty());
}

TEST_CASE("sibling branches: the model's and the simulator's gain agree within 10 % on LLaMA-3-8B blocks") {
  // What the strips change (shorter K-tree lines or rings against the multicast and the return), as
  // the ratio of the block's pass without to with; the two sides price it from their own physics.
  struct Case {
    workload::Phase phase;
    std::int64_t requests, w, h;
  };
  for (const Case& k : {Case{workload::Phase::decode, 1, 120, 120}, Case{workload::Phase::decode, 8, 220, 189},
                        Case{workload::Phase::prefill, 1, 120, 120}}) {
    const bool decode = k.phase == workload::Phase::decode;
    const auto w = llama(k.phase, k.requests, 2);
    const auto block = decode ? first_decoder(w) : workload::fuse_shared_inputs(first_decoder(w), k.phase);
    const auto a = place(block, decode, k.w, k.h, false);
    const auto b = place(block, decode, k.w, k.h, true);
    const auto p = cost::default_params(wse3());
    const double model = cost::evaluate(a, wse3(), p, decode, 512).pass_cycles / cost::evaluate(b, wse3(), p, decode, 512).pass_cycles;
    const double simulated = sim::simulate(a, wse3(), decode, 512, round_options()).pass_cycles /
                             sim::simulate(b, wse3(), decode, 512, round_options()).pass_cycles;
    const std::string what = std::string(decode ? "decode " : "prefill ") + std::to_string(k.requests) + " requests on " +
                             std::to_string(k.w) + "x" + std::to_string(k.h) + ": gain model " + std::to_string(model) +
                             ", simulator " + std::to_string(simulated);
    MESSAGE(what);
    CHECK(model == doctest::Approx(simulated).epsilon(0.10));
  }
}
