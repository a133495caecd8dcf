// Cost model: golden values computed by hand for small cases, and physical sanity properties.
#include <doctest/doctest.h>

#include <string>

#include "cost_fixtures.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/cost/params.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_params;
using wavel::test::wse3;

TEST_CASE("K-tree allreduce of a GEMV on 8x8, by hand") {
  const auto s = one_region(8, 8);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemv);
  op.reduce_axis = meshir::Axis::x;
  op.group = 4;
  op.work = {1, 1, 64, 64, 0, 0, 0, 0, 0};
  const auto c = cost::op_cost(s, op, wse3(), round_params());
  // WaferLLM's loop: one FMAC per input element (Kt = 64 / 8 = 8) along the Nt = 8 outputs, at 4
  // elements a cycle (SRAM ports): 8 x (ceil(8 / 4) + 1 issue) = 24 cycles.
  CHECK(c.compute_cycles == doctest::Approx(24.0));
  // 8 PEs, groups of 4: level 1 takes 2 stages of 1 hop, level 2 (2 roots) 1 stage of 4 hops,
  // then the multicast crosses 4 hops: 3 stages, 10 hops.
  CHECK(c.stages == 3);
  CHECK(c.hops == 10);
  CHECK(c.stage_cycles == doctest::Approx(90.0));
  CHECK(c.hop_cycles == doctest::Approx(10.0));
  // Streamed: message 8 outputs x 2 bytes = 16 bytes = 4 wavelets, each carried once per link; the
  // final root's ramp takes 2 level-1 streams and 1 level-2 stream: 3 x 4 = 12 cycles.
  // (Store-and-forward would have charged (3 stages + 1) x 4 = 16.)
  CHECK(c.link_cycles == doctest::Approx(12.0));
  CHECK(c.overhead_cycles == doctest::Approx(40.0));  // gemv_fixed; no launch: the layer is straight-line code
  CHECK(c.total_cycles == doctest::Approx(24.0 + 90.0 + 10.0 + 12.0 + 40.0));
}

TEST_CASE("MeshGEMM steps on 4x4, by hand") {
  const auto s = one_region(4, 4);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work = {1, 64, 64, 64, 2 * 64 * 64 * 64, 0, 0, 0, 0};
  const auto c = cost::op_cost(s, op, wse3(), round_params());
  // 4 steps of 16x16 by 16x16 tiles. As WaferLLM's loop runs: Kt = 16 k-iterations of 10 cycles,
  // each issuing Nt = 16 FMACs along the Mt = 16 tokens at 4 elements a cycle: 16 x (10 + 16 x
  // (4 + 1)) = 1440 cycles, longer than the two 512-byte tiles through the ramp two hops away
  // (2 + 256): compute-bound.
  CHECK(c.compute_cycles == doctest::Approx(4 * 1440.0));
  // Alignment: 2 shifts of 2 hops and 128 link cycles each, not overlapped.
  CHECK(c.hop_cycles == doctest::Approx(4.0));
  CHECK(c.link_cycles == doctest::Approx(256.0));
  // 4 steps and 2 alignment shifts of 20 cycles.
  CHECK(c.overhead_cycles == doctest::Approx(6 * 20.0));
  CHECK(c.total_cycles == doctest::Approx(5760.0 + 4.0 + 256.0 + 120.0));

  // A narrow N: 16x16 by 16x1 tiles: 16 x (10 + 1 x 5) = 240 per step, still longer than both tiles
  // on the ramp, 2 + (512 + 32) / 4 = 138. The vector runs along the tokens, so Nt never widens it.
  op.work = {1, 64, 64, 4, 0, 0, 0, 0, 0};
  const auto narrow = cost::op_cost(s, op, wse3(), round_params());
  CHECK(narrow.compute_cycles == doctest::Approx(4 * 240.0));
  CHECK(narrow.total_cycles == doctest::Approx(960.0 + 4.0 + 256.0 + 120.0));
  // An input already skewed (WaferLLM's K and V reuse Q's alignment): no alignment shifts.
  op.input_skewed = true;
  const auto skewed = cost::op_cost(s, op, wse3(), round_params());
  CHECK(skewed.total_cycles == doctest::Approx(960.0 + 4 * 20.0));
  op.input_skewed = false;
  // One token per PE: 16 x (10 + 1 x (1 + 1)) = 192 a step, the same as two tokens (one vector issue).
  op.work = {1, 4, 64, 4, 0, 0, 0, 0, 0};
  const auto thin = cost::op_cost(s, op, wse3(), round_params());
  CHECK(thin.compute_cycles == doctest::Approx(4 * 192.0));
  op.work = {1, 8, 64, 4, 0, 0, 0, 0, 0};
  CHECK(cost::op_cost(s, op, wse3(), round_params()).compute_cycles == doctest::Approx(4 * 192.0));
  // Tiles round up: the PE with the largest tile sets the step (m = 65 gives a 17-token tile: 5 issues).
  op.work = {1, 65, 64, 64, 0, 0, 0, 0, 0};
  CHECK(cost::op_cost(s, op, wse3(), round_params()).compute_cycles ==
        doctest::Approx(4 * 16.0 * (10.0 + 16.0 * (5.0 + 1.0))));
}

TEST_CASE("MeshGEMM: both moving tiles serialise on the ramp, by hand") {
  const auto s = one_region(4, 4);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work = {1, 64, 64, 4, 0, 0, 0, 0, 0};
  auto p = round_params();
  p.gemm_k_cycles = 0.0;
  p.gemm_fmac_issue_cycles = 0.0;
  const auto c = cost::op_cost(s, op, wse3(), p);
  // 16 x 16 by 16 x 1 tiles: 16 FMACs of 16 tokens = 64 cycles a step. The A tile (512 B) and the
  // B tile (32 B) both enter through the PE's ramp: 136 wavelets + 2 hops = 138 cycles per step, so
  // the step is communication-bound (max(A, B) alone would be 130). Alignment: 2 shifts of 2 hops
  // and 128 wavelets of A.
  CHECK(c.compute_cycles == doctest::Approx(0.0));
  CHECK(c.hop_cycles == doctest::Approx(4 * 2.0 + 2 * 2.0));
  CHECK(c.link_cycles == doctest::Approx(4 * 136.0 + 2 * 128.0));
  CHECK(c.total_cycles == doctest::Approx(12.0 + 800.0 + 120.0));
}

TEST_CASE("N bytes over H hops between regions, by hand") {
  auto s = one_region(4, 4);
  s.regions.push_back(meshir::Rect{10, 0, 4, 4});
  auto op = op_on(s.regions[0], meshir::Kernel::transfer);
  op.to_region = 1;
  op.work.input_bytes = 1600;
  const auto c = cost::op_cost(s, op, wse3(), round_params());
  // Centres 10 hops apart; 4 parallel links across; 1600 B / (4 B/cycle x 4 links) = 100 cycles;
  // the transfer's set-up as the shift kernel's (shift_fixed_cycles, 50).
  CHECK(c.hops == 10);
  CHECK(c.total_cycles == doctest::Approx(10.0 + 100.0 + 50.0));
}

TEST_CASE("an expert CUT's all-to-all over four strips, by hand") {
  // Region 0 is 8 x 4; strips 1..4 are its 2-wide columns. Each dispatch moves 1600 B of tokens
  // spread evenly along the 8-PE rows into one strip, over the 4 rows (4 B/cycle per link).
  auto s = wavel::test::strip_dispatches(8, 4, 2, 1600);
  const auto e = meshir::exchange_of(s, s.ops[1]);
  REQUIRE(e.has_value());
  CHECK(e->axis == meshir::Axis::x);
  CHECK((e->lo() == 2 && e->hi() == 4 && e->side() == 8 && e->lines() == 4));
  // Alone, strip [2, 4): 2/8 of the bytes enter from below, 4/8 from above: 800 B / 16 B per cycle
  // = 50; the farthest path is from PE 7 to PE 2, 5 hops; set-up 50. Strip [0, 2): 6/8, 75, 7 hops.
  CHECK(cost::op_cost(s, s.ops[1], wse3(), round_params()).total_cycles == doctest::Approx(5.0 + 50.0 + 50.0));
  CHECK(cost::op_cost(s, s.ops[0], wse3(), round_params()).total_cycles == doctest::Approx(7.0 + 75.0 + 50.0));
  // Together: at the middle boundary the two upper strips each draw half their bytes from below
  // (2 x 800 B) and the two lower ones half from above; at x = 2 and 6, 3 x 400 or 1200 B. Every
  // flow waits for 1600 B / 16 = 100 cycles (summing the flows' own link times would give 250).
  const auto together = cost::evaluate(s, wse3(), round_params(), false, 1);
  CHECK(together.ops[0].total_cycles == doctest::Approx(7.0 + 100.0 + 50.0));
  CHECK(together.ops[1].total_cycles == doctest::Approx(5.0 + 100.0 + 50.0));
  CHECK(together.ops[2].total_cycles == doctest::Approx(5.0 + 100.0 + 50.0));
  CHECK(together.ops[3].total_cycles == doctest::Approx(7.0 + 100.0 + 50.0));
  // Combine: each strip sends its 1600 B back spread over the rows, the same boundaries the other way.
  meshir::Schedule back = s;
  for (int k = 0; k < 4; ++k) {
    auto& op = back.ops[static_cast<std::size_t>(k)];
    op.kernel = meshir::Kernel::moe_combine;
    op.region = k + 1;
    op.used = s.regions[static_cast<std::size_t>(k + 1)];
    op.to_region = 0;
  }
  REQUIRE(meshir::exchange_of(back, back.ops[2]).has_value());
  CHECK(!meshir::exchange_of(back, back.ops[2])->into_strip);
  const auto combined = cost::evaluate(back, wse3(), round_params(), false, 1);
  for (int k = 0; k < 4; ++k) {
    CHECK(combined.ops[static_cast<std::size_t>(k)].total_cycles ==
          doctest::Approx(together.ops[static_cast<std::size_t>(k)].total_cycles));
  }
  // Two strips: each flow's own edge is the busiest boundary, so sharing adds nothing.
  const auto two = wavel::test::strip_dispatches(8, 4, 4, 1600);
  const auto pair = cost::evaluate(two, wse3(), round_params(), false, 1);
  CHECK(pair.ops[0].total_cycles == doctest::Approx(7.0 + 800.0 / 16.0 + 50.0));
  CHECK(pair.ops[1].total_cycles == doctest::Approx(pair.ops[0].total_cycles));
}

TEST_CASE("more hops never cost less") {
  auto params = round_params();
  double previous = 0.0;
  for (std::int64_t gap = 0; gap < 40; gap += 3) {
    auto s = one_region(4, 4);
    s.regions.push_back(meshir::Rect{4 + gap, 0, 4, 4});
    auto op = op_on(s.regions[0], meshir::Kernel::transfer);
    op.to_region = 1;
    op.work.input_bytes = 4096;
    const double cycles = cost::op_cost(s, op, wse3(), params).total_cycles;
    CHECK(cycles >= previous);
    previous = cycles;
  }
  // Allreduces over longer lines cost at least as much.
  previous = 0.0;
  for (std::int64_t side = 2; side <= 64; side += 2) {
    const auto s = one_region(side, side);
    auto op = op_on(s.regions[0], meshir::Kernel::allreduce);
    op.work = {1, 1, 0, 4096, 4096 * 4, 0, 0, 0, 0};
    const auto c = cost::op_cost(s, op, wse3(), params);
    CHECK(c.hop_cycles + c.stage_cycles >= previous);
    previous = c.hop_cycles + c.stage_cycles;
  }
}

TEST_CASE("a smaller region never holds more") {
  // The same weights on fewer PEs need at least as much SRAM per PE.
  std::int64_t previous = 0;
  for (std::int64_t side = 64; side >= 4; side -= 4) {
    auto s = one_region(side, side);
    auto op = op_on(s.regions[0], meshir::Kernel::meshgemv);
    op.work = {1, 1, 1024, 1024, 2 * 1024 * 1024, 2 * 1024 * 1024, 2048, 2048, 0};
    s.ops.push_back(op);
    const auto cost = cost::evaluate(s, wse3(), round_params(), true, 1);
    CHECK(cost.sram_bytes_per_pe_max >= previous);
    previous = cost.sram_bytes_per_pe_max;
  }
}

TEST_CASE("steps, stages and micro-batches compose as documented") {
  auto s = one_region(8, 8);
  s.regions.push_back(meshir::Rect{8, 0, 8, 8});
  auto a = op_on(s.regions[0], meshir::Kernel::elementwise);
  // 8 tokens along X and 8 features along Y, one of each per PE, 400 element operations each: at the
  // FMAC's 4 elements a cycle (WSE-3's ports), 100 cycles. No launch.
  a.in_layout = {meshir::Dim::tokens, meshir::Dim::features, 8, 8, 1, 1, 0, 0};
  a.work.m = 8;
  a.work.n = 8;
  a.work.flops = 8 * 8 * 400;
  auto b = a;
  b.name = "b";
  b.region = 1;
  b.used = s.regions[1];
  b.stage = 1;
  b.step = 1;
  auto c = a;
  c.name = "c";
  c.step = 1;  // runs beside b
  s.ops = {a, b, c};
  s.concurrent_requests = 4;
  s.microbatches = 2;
  const auto cost = cost::evaluate(s, wse3(), round_params(), true, 1);
  CHECK(cost.ops[0].total_cycles == doctest::Approx(100.0));
  CHECK(cost.pass_cycles == doctest::Approx(200.0));             // step 0, then step 1 (b and c overlap)
  CHECK(cost.bottleneck_stage_cycles == doctest::Approx(200.0));  // stage 0 runs a and c
  // Round = max(pass, 2 micro-batches x slowest stage) = 400 cycles at 1.1 GHz; 4 requests per round.
  CHECK(cost.latency_s == doctest::Approx(400.0 / 1.1e9));
  CHECK(cost.tokens_per_s == doctest::Approx(4.0 / (400.0 / 1.1e9)));
  CHECK(cost.pes_used == 128);
  // The search's per-block pass (no SRAM, no PEs) is evaluate's, exactly.
  CHECK(cost::pass_cycles(s, wse3(), round_params()) == cost.pass_cycles);
  s.layer_scale = 3;  // a step repeats unless all its ops are marked `once`
  s.ops[1].once = true;
  s.ops[2].once = true;
  CHECK(cost::pass_cycles(s, wse3(), round_params()) == doctest::Approx(100.0 * 3 + 100.0));
}

TEST_CASE("a GEMV that switches its allreduce axis pays the route switch") {
  auto s = one_region(8, 8);
  auto a = op_on(s.regions[0], meshir::Kernel::meshgemv);
  a.work = {1, 1, 64, 64, 0, 0, 0, 0, 0};
  auto b = a;
  b.name = "b";
  b.step = 1;
  b.reduce_axis = meshir::Axis::y;
  s.ops = {a, b};
  const auto params = round_params();
  const auto cost = cost::evaluate(s, wse3(), params, true, 1);
  CHECK(cost.ops[1].total_cycles == doctest::Approx(cost::op_cost(s, b, wse3(), params).total_cycles + 50.0));
  CHECK(cost::pass_cycles(s, wse3(), params) == cost.pass_cycles);
}
