// Skewed MoE routing (issue 38): experts' rows, experts over groups, a grouped GEMM of unequal
// experts by hand in the model and in the simulator, and the expert CUT's strips each on its own rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "cost_fixtures.hpp"
#include "sim_fixtures.hpp"
#include "test_support.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/routing.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::round_params;
using wavel::test::wse3;

namespace {

std::int64_t sum(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); }

std::vector<Diagnostic> problems(const meshir::Schedule& s) {
  const auto colours = [](const meshir::PlacedOp& op) { return cost::colours_needed(op); };
  const auto d = meshir::verify(s, "routing", {}, colours);
  for (const auto& x : d) MESSAGE(x.format());
  return d;
}

// A 4 x 4 MeshGEMM, k = n = 8, of two experts with `rows`.
meshir::Schedule grouped(std::vector<std::int64_t> rows) {
  auto s = one_region(4, 4);
  auto op = test::op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.m = sum(rows);
  op.work.k = op.work.n = 8;
  op.work.flops = 2 * op.work.m * 8 * 8;
  op.work.products = static_cast<std::int64_t>(rows.size());
  op.work.product_rows = std::move(rows);
  s.ops = {op};
  return s;
}

}  // namespace

TEST_CASE("experts' rows under skewed routing, by hand") {
  const workload::MoeRouting uniform{1.25, 0.0}, zipf1{1.25, 1.0}, zipf2{1.25, 2.0};
  // Uniform: 10 rows over 4 experts, the first two one more.
  CHECK(workload::expert_rows(uniform, 4, 10, 5) == std::vector<std::int64_t>{3, 3, 2, 2});
  // Zipf 1 over 2 experts: shares 1 : 1/2 of 300 rows.
  CHECK(workload::expert_rows(zipf1, 2, 300, 200) == std::vector<std::int64_t>{200, 100});
  // Zipf 2: 1 : 1/4 would give the first 240 of 300, more than the 200 tokens; it keeps 200.
  CHECK(workload::expert_rows(zipf2, 2, 300, 200) == std::vector<std::int64_t>{200, 100});
  // Zipf 1 over 3 experts, 110 rows of 100 tokens: 60, 30, 20 (exact shares 1 : 1/2 : 1/3 of 110).
  CHECK(workload::expert_rows(zipf1, 3, 110, 100) == std::vector<std::int64_t>{60, 30, 20});
  // Every count sums to the routed rows and none exceeds the tokens.
  for (double skew : {0.0, 0.5, 1.0, 3.0}) {
    const auto rows = workload::expert_rows({1.25, skew}, 64, 2048 * 6, 2048);
    CHECK(sum(rows) == 2048 * 6);
    CHECK(*std::max_element(rows.begin(), rows.end()) <= 2048);
    CHECK(std::is_sorted(rows.rbegin(), rows.rend()));
  }
  // Split in proportion: 10 over 3 : 1 is 7.5 : 2.5, the tie of remainders to the first.
  CHECK(workload::split_in_proportion(10, {3, 1}) == std::vector<std::int64_t>{8, 2});
  CHECK(workload::split_in_proportion(7, {2, 2, 3}) == std::vector<std::int64_t>{2, 2, 3});
}

TEST_CASE("experts go to groups busiest first, each to the least loaded with room") {
  // 50 -> g0, 30 -> g1, 20 -> g1 (30 < 50), 10 -> g0 (g1 is full): 60 and 50.
  const auto groups = workload::balance_groups({50, 30, 20, 10}, 2);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0] == std::vector<std::int64_t>{0, 3});
  CHECK(groups[1] == std::vector<std::int64_t>{1, 2});
  // Contiguous ranges would give 80 and 30.
}

TEST_CASE("a grouped GEMM of two experts with unequal rows, by hand (issue 38)") {
  // 28 and 4 rows, k = n = 8, on 4 x 4 (WSE-3: 4 FMAC elements a cycle; round_params). Each expert
  // runs 4 steps with Kt = Nt = 2 and 2 alignment shifts; 6 steps' fixed costs (120).
  // Expert 1, Mt = 7: a step is 2 k-iterations (20) + 4 FMACs of ceil(7/4) + 1 = 3 cycles (12) = 32,
  //   above its shift (2 hops + 36 B = 9 wavelets); alignment 2 x (2 hops, 28 B = 7 wavelets).
  //   128 + 4 + 14 + 120 = 266.
  // Expert 2, Mt = 1: 20 + 4 x 2 = 28 a step; alignment 2 x (2 hops, 4 B = 1 wavelet). 112 + 4 + 2 + 120 = 238.
  const auto s = grouped({28, 4});
  const auto c = cost::op_cost(s, s.ops[0], wse3(), round_params());
  CHECK(c.compute_cycles == doctest::Approx(128.0 + 112.0));
  CHECK(c.hop_cycles == doctest::Approx(8.0));
  CHECK(c.link_cycles == doctest::Approx(14.0 + 2.0));
  CHECK(c.overhead_cycles == doctest::Approx(240.0));
  CHECK(c.total_cycles == doctest::Approx(504.0));
  // The same 32 rows split evenly (Mt = 4 each): 2 x (112 + 4 + 8 + 120) = 488; as one GEMM against
  // one expert's tile (Mt = 8): 128 + 4 + 16 + 120 = 268.
  auto even = s;
  even.ops[0].work.product_rows.clear();
  CHECK(cost::op_cost(even, even.ops[0], wse3(), round_params()).total_cycles == doctest::Approx(488.0));
  auto one_tile = even;
  one_tile.ops[0].work.products = 1;
  CHECK(cost::op_cost(one_tile, one_tile.ops[0], wse3(), round_params()).total_cycles == doctest::Approx(268.0));
  // An expert without rows is skipped.
  const auto idle = grouped({32, 0});
  const auto alone = grouped({32});
  CHECK(cost::op_cost(idle, idle.ops[0], wse3(), round_params()).total_cycles ==
        doctest::Approx(cost::op_cost(alone, alone.ops[0], wse3(), round_params()).total_cycles));
}

TEST_CASE("the simulator runs each expert of a grouped GEMM on its own rows") {
  // 48 and 16 rows on 8 x 8 against an even split of 64 and one tile of 64: the uneven experts cost
  // their two MeshGEMMs, more than the even split (the busy expert's longer FMAC vectors are not paid
  // back by the idle one's), far more than one tile.
  auto s = one_region(8, 8);
  auto op = test::op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.k = op.work.n = 64;
  const auto with_rows = [&](std::int64_t m, std::int64_t products, std::vector<std::int64_t> rows) {
    auto one = s;
    auto o = op;
    o.work.m = m;
    o.work.flops = 2 * m * 64 * 64;
    o.work.products = products;
    o.work.product_rows = std::move(rows);
    one.ops = {o};
    return one;
  };
  const auto wafer = test::wse3();
  sim::SimOptions options;
  options.max_simulated_steps = 64;  // every step simulated
  const auto cycles = [&](const meshir::Schedule& x) { return sim::simulate_op(x, 0, wafer, options).cycles; };
  const double uneven = cycles(with_rows(64, 2, {48, 16}));
  const double first = cycles(with_rows(48, 1, {})), second = cycles(with_rows(16, 1, {}));
  CHECK(uneven == doctest::Approx(first + second));
  const double even = cycles(with_rows(64, 2, {}));
  CHECK(uneven > even);
  CHECK(uneven > 1.5 * cycles(with_rows(64, 1, {})));
  // The model orders them the same way.
  const auto model = [&](const meshir::Schedule& x) {
    return cost::op_cost(x, x.ops[0], wafer, cost::default_params(wafer)).total_cycles;
  };
  CHECK(model(with_rows(64, 2, {48, 16})) > model(with_rows(64, 2, {})));
  // Identical ops with other product rows are not one memo entry.
  auto both = with_rows(64, 2, {48, 16});
  both.ops.push_back(with_rows(64, 2, {32, 32}).ops[0]);
  both.ops.back().name = "other";
  both.ops.back().step = 1;
  const auto r = sim::simulate(both, wafer, false, 64, options);
  CHECK(r.ops[1].reused_from == -1);
  CHECK(r.ops[1].cycles < r.ops[0].cycles);
}

TEST_CASE("product rows: the verifier's rules and the text form") {
  auto s = grouped({28, 4});
  CHECK(problems(s).empty());
  const auto text = meshir::print(s);
  CHECK(text.find("product_rows:28/4") != std::string::npos);
  CHECK(meshir::print(meshir::parse(text, "t")) == text);
  auto wrong = s;
  wrong.ops[0].work.product_rows = {28, 5};
  CHECK_FALSE(problems(wrong).empty());
  wrong.ops[0].work.product_rows = {28, 4, 0};
  CHECK_FALSE(problems(wrong).empty());
  wrong.ops[0].work.product_rows = {40, -8};
  CHECK_FALSE(problems(wrong).empty());
}

TEST_CASE("an expert CUT under skewed routing: experts balanced over strips, each strip on its own rows") {
  auto model = *workload::find_model_preset("deepseek-v2-lite");
  model.num_layers = 2;
  const auto w = workload::build_workload(model, {workload::Phase::prefill, 1, 512, 64});
  const workload::Layer* moe = nullptr;
  for (const auto& l : w.layers) {
    if (l.is_moe) moe = &l;
  }
  REQUIRE(moe != nullptr);
  const auto place = [&](double skew, std::int64_t groups) {
    auto s = one_region(64, 48);
    s.sram_per_pe_bytes = std::int64_t{1} << 30;
    meshir::Placer placer(s, false, workload::MoeRouting{1.25, skew});
    meshir::Tune t;
    t.expert_groups = groups;
    placer.place(*moe, 0, s.regions[0], 0, t);
    return s;
  };
  const std::int64_t routed = 512 * model.moe->experts_per_token;
  // Uniform: every strip's grouped GEMM on the same rows, split evenly; skewed: each strip's experts
  // on their own rows (summing to the strip's), the strips' rows unequal but within the capacity
  // factor of their expected share.
  for (const double skew : {0.0, 1.0}) {
    const auto s = place(skew, 4);
    CHECK(problems(s).empty());
    std::vector<std::int64_t> strip_rows;
    for (const auto& op : s.ops) {
      if (op.name.find("expert_gate_up.g") == std::string::npos) continue;
      strip_rows.push_back(op.work.m);
      CHECK(op.work.products == model.moe->num_experts / 4);
      if (skew == 0.0) {
        CHECK(op.work.product_rows.empty());
      } else {
        REQUIRE(op.work.product_rows.size() == static_cast<std::size_t>(op.work.products));
        CHECK(sum(op.work.product_rows) == op.work.m);
      }
    }
    REQUIRE(strip_rows.size() == 4);
    const auto [lo, hi] = std::minmax_element(strip_rows.begin(), strip_rows.end());
    if (skew == 0.0) {
      CHECK(*lo == *hi);
    } else {
      CHECK(*lo < *hi);
      CHECK(sum(strip_rows) <= static_cast<std::int64_t>(1.25 * static_cast<double>(routed)) + 4);
    }
  }
  // Without a CUT the one grouped GEMM runs every expert on its own Zipf rows, busiest first.
  const auto whole = place(1.0, 1);
  bool seen = false;
  for (const auto& op : whole.ops) {
    if (op.name.find("expert_gate_up") == std::string::npos) continue;
    seen = true;
    CHECK(op.work.product_rows == workload::expert_rows({1.25, 1.0}, model.moe->num_experts, routed, 512));
  }
  CHECK(seen);
  // Skew costs time: the same schedule shape is slower under Zipf 1 than under uniform routing.
  const auto time = [&](const meshir::Schedule& s) {
    return cost::evaluate(s, wse3(), cost::default_params(wse3()), false, 512).pass_cycles;
  };
  CHECK(time(place(1.0, 1)) > time(place(0.0, 1)));
  CHECK(time(place(1.0, 4)) > time(place(0.0, 4)));
}
