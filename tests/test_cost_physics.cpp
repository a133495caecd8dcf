// Cost-model physics by hand: streamed collectives, tile-shape efficiency, decode attention by head
// group with GQA, the attention working set in SRAM, mover contention and transfers inside a stage.
#include <doctest/doctest.h>

#include "cost_fixtures.hpp"
#include "wavel/cost/detail/collectives.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/verify.hpp"

using namespace wavel;
using wavel::test::one_region;
using wavel::test::op_on;
using wavel::test::round_params;
using wavel::test::wse3;

TEST_CASE("streamed K-tree allreduce over 16 PEs with groups of 4, by hand") {
  const auto t = cost::detail::streamed_allreduce(16, 4, 64.0, wse3(), round_params());
  // Level 1: centre of a group of 4 is 2 one-hop stages from its far end; level 2: 4 roots, the
  // centre one 2 stages of 4 hops from the far root; then the multicast crosses 8 hops.
  CHECK(t.stages == 4);
  CHECK(t.hops == 2 + 2 * 4 + 8);
  // 64 bytes = 16 wavelets, streamed: the final root's ramp takes 2 level-1 and 2 level-2 streams,
  // 4 x 16 = 64 wavelets. Store-and-forward would re-send the message per stage: (4 + 1) x 16 = 80.
  CHECK(t.wavelets == 64);
  CHECK(t.total_cycles() == doctest::Approx(18.0 + 4 * 30.0 + 64.0));
  // The message is counted once, so doubling it adds its wavelets once per stream, not per stage.
  const auto twice = cost::detail::streamed_allreduce(16, 4, 128.0, wse3(), round_params());
  CHECK(twice.total_cycles() - t.total_cycles() == doctest::Approx(64.0));
  CHECK(cost::detail::streamed_allreduce(1, 0, 64.0, wse3(), round_params()).total_cycles() == 0.0);
}

TEST_CASE("multicast and vector FMAC loops, by hand") {
  const auto m = cost::detail::multicast(9, 40.0, wse3(), round_params());
  CHECK(m.hops == 4);       // centre to either end of 9 PEs
  CHECK(m.wavelets == 10);  // 40 bytes, serialised once: the routers copy
  CHECK(m.stages == 0);
  CHECK(m.total_cycles() == doctest::Approx(14.0));
  // FMACs read 4 bytes and write 2 per element: WSE-3's 2 x 64-bit reads and 64-bit write feed 4 a
  // cycle (its 8 lanes wait on the ports); WSE-2's "two 32-bit reads and one 32-bit write" feed 2.
  CHECK(cost::detail::fmac_elements_per_cycle(wse3()) == 4);
  CHECK(cost::detail::fmac_elements_per_cycle(*wafer::find_wafer_preset("wse2")) == 2);
  auto narrow = wse3();
  narrow.sram_read_bytes_per_cycle = 8;
  narrow.sram_write_bytes_per_cycle = 4;
  CHECK(cost::detail::fmac_elements_per_cycle(narrow) == 2);
  // 3 FMACs of 20 elements with 2 cycles of issue: 3 x (5 + 2) = 21; at 2 a cycle 3 x (10 + 2) = 36.
  CHECK(cost::detail::fmac_loop_cycles(3.0, 20, 2.0, wse3()) == doctest::Approx(21.0));
  CHECK(cost::detail::fmac_loop_cycles(3.0, 20, 2.0, narrow) == doctest::Approx(36.0));
  CHECK(cost::detail::fmac_loop_cycles(0.0, 20, 2.0, wse3()) == 0.0);
}

namespace {

// Decode attention on a 16 x 4 region: 4 heads of 32 features (2 KV heads: GQA groups of 2),
// 2 requests, 40 context tokens; features along X (a = 16 PEs), context along Y (b = 4 PEs).
meshir::PlacedOp attention_op(meshir::AttentionRole role) {
  auto op = op_on(meshir::Rect{0, 0, 16, 4}, role == meshir::AttentionRole::softmax ? meshir::Kernel::allreduce
                                                                                     : meshir::Kernel::meshgemv);
  op.reduce_axis = meshir::Axis::x;
  op.attention = role;
  op.work.batch = 2 * 4;
  op.work.m = 1;
  op.work.heads = 4;
  op.work.kv_heads = 2;
  if (role == meshir::AttentionRole::scores) {
    op.work.k = 32;
    op.work.n = 40;
  } else if (role == meshir::AttentionRole::values) {
    op.work.k = 40;
    op.work.n = 32;
  } else {
    op.work.n = 40;
    op.work.flops = 5 * 8 * 40;
    op.rounds = 2;
  }
  return op;
}

}  // namespace

TEST_CASE("decode attention by head group with the GQA multicast, by hand") {
  const auto s = one_region(16, 4);
  // Each head holds a segment of 16 / 4 = 4 PEs; a PE holds 128 / 16 = 8 features and 40 / 4 = 10
  // context entries.
  SUBCASE("scores") {
    const auto c = cost::op_cost(s, attention_op(meshir::AttentionRole::scores), wse3(), round_params());
    // K multicast over a KV group (2 heads x 4 PEs = 8 PEs): 10 x 8 x 2 B = 160 B = 40 wavelets, 4 hops.
    // Dot products as WaferLLM loops them: per request and feature, one FMAC along the PE's 10 context
    // entries: 2 x 8 x (ceil(10 / 4) + 1) = 64 cycles.
    // Segment allreduce over 4 PEs (groups of 2) of 2 x 10 scores x 4 B = 80 B = 20 wavelets:
    // 2 stages, 1 + 2 + 2 hops, fan-in 2: 5 + 60 + 40 = 105.
    CHECK(c.compute_cycles == doctest::Approx(64.0));
    CHECK(c.hops == 4 + 5);
    CHECK(c.stages == 2);
    CHECK(c.total_cycles == doctest::Approx(44.0 + 64.0 + 105.0 + 40.0));  // + gemv_fixed
    // Head-blind, the same op reduced over all 16 PEs with one vector per head and request.
    auto blind = attention_op(meshir::AttentionRole::scores);
    blind.attention = meshir::AttentionRole::none;
    CHECK(cost::op_cost(s, blind, wse3(), round_params()).stages > c.stages);
  }
  SUBCASE("values") {
    const auto c = cost::op_cost(s, attention_op(meshir::AttentionRole::values), wse3(), round_params());
    // V multicast 44 cycles as K; per request and context entry one FMAC along the 8 features:
    // 2 x 10 x (2 + 1) = 60 cycles; allreduce over the 4 context PEs of 2 x 8 x 4 B = 64 B = 16
    // wavelets: 5 + 60 + 2 x 16 = 97.
    CHECK(c.total_cycles == doctest::Approx(44.0 + 60.0 + 97.0 + 40.0));
  }
  SUBCASE("softmax") {
    const auto c = cost::op_cost(s, attention_op(meshir::AttentionRole::softmax), wse3(), round_params());
    // 5 element operations x 2 requests x 10 entries = 100 at 4 a cycle = 25 cycles; two allreduces
    // over the 4 context PEs of 2 x 4 B = 2 wavelets: 5 + 60 + 4 = 69 each, each a call (gemv_fixed 40).
    CHECK(c.total_cycles == doctest::Approx(25.0 + 2 * (69.0 + 40.0)));
    // With WaferLLM's scalar fast_exp per entry (5 instructions of 6 cycles): + 20 entries x 30.
    auto exp = attention_op(meshir::AttentionRole::softmax);
    exp.work.scalar_elements = 10;
    exp.work.scalar_instructions = 5;
    CHECK(cost::op_cost(s, exp, wse3(), round_params()).total_cycles == doctest::Approx(25.0 + 2 * 109.0 + 600.0));
  }
  SUBCASE("without GQA there is nothing to multicast") {
    auto op = attention_op(meshir::AttentionRole::scores);
    op.work.kv_heads = 4;
    CHECK(cost::op_cost(s, op, wse3(), round_params()).total_cycles == doctest::Approx(64.0 + 105.0 + 40.0));
  }
}

TEST_CASE("attention buffers hold one head at a time") {
  meshir::OpWork w;
  w.input_bytes = 1000;
  w.output_bytes = 600;
  CHECK(meshir::op_sram_per_pe(w, 1, 10).buffer_bytes == 2 * 160);
  w.heads = 4;  // (1000 + 600) / 4 heads over 10 PEs, double-buffered
  CHECK(meshir::op_sram_per_pe(w, 1, 10).buffer_bytes == 2 * 40);
}

TEST_CASE("movers of one step share their region's links the way they leave, by hand") {
  auto s = one_region(4, 4);
  s.regions.push_back(meshir::Rect{10, 0, 4, 4});  // east, 10 hops centre to centre
  s.regions.push_back(meshir::Rect{10, 4, 4, 4});  // east too (dx 20 > dy 8 in half-PEs), 14 hops
  s.regions.push_back(meshir::Rect{0, 10, 4, 4});  // south, 10 hops
  for (int to : {1, 2}) {
    auto op = op_on(s.regions[0], meshir::Kernel::transfer);
    op.name = "xfer" + std::to_string(to);
    op.to_region = to;
    op.work.input_bytes = 1600;
    s.ops.push_back(op);
  }
  // Alone, the first is 10 hops + 1600 B over 4 links (100 cycles) + 50 set-up = 160. In one step
  // both leave region 0 eastward through the same 4 links: 200 link cycles each.
  const auto c = cost::evaluate(s, wse3(), round_params(), true, 1);
  CHECK(c.ops[0].total_cycles == doctest::Approx(260.0));
  CHECK(c.ops[1].total_cycles == doctest::Approx(264.0));
  s.ops[1].step = 1;  // in sequence, no contention
  const auto seq = cost::evaluate(s, wse3(), round_params(), true, 1);
  CHECK(seq.ops[1].total_cycles == doctest::Approx(164.0));
  // One east and one south leave through different edges: neither waits for the other.
  s.ops[1].step = 0;
  s.ops[1].to_region = 3;
  s.ops[1].name = "xfer3";
  const auto apart = cost::evaluate(s, wse3(), round_params(), true, 1);
  CHECK(apart.ops[0].total_cycles == doctest::Approx(160.0));
  CHECK(apart.ops[1].total_cycles == doctest::Approx(160.0));
}

TEST_CASE("a transfer inside a stage is on the stage's path; one between stages is not") {
  auto s = one_region(4, 4);
  s.regions.push_back(meshir::Rect{10, 0, 4, 4});
  auto a = op_on(s.regions[0], meshir::Kernel::elementwise);
  a.name = "a";
  auto inside = op_on(s.regions[0], meshir::Kernel::transfer);
  inside.name = "inside";
  inside.to_region = 1;
  inside.step = 1;
  inside.inputs = {0};
  auto between = inside;
  between.name = "between";
  between.step = 2;
  between.stage = 1;
  s.ops = {a, inside, between};
  const auto c = cost::compose(s, {10.0, 20.0, 30.0}, 1.0, true, 1);
  CHECK(c.pass_cycles == doctest::Approx(60.0));
  CHECK(c.bottleneck_stage_cycles == doctest::Approx(30.0));  // stage 0: 10 + 20
}

TEST_CASE("a batched MeshGEMV loops over tokens with vectors along its outputs, by hand") {
  // 32 x 8 region reducing along X (32 PEs), output features across Y (8 PEs): n = 32 -> 4 outputs
  // per PE, k = 64 -> 2 inputs per PE. WaferLLM's decode loop: per token and input, one FMAC along
  // the 4 outputs: 1 issue cycle + ceil(4 / 4) = 2 cycles each.
  auto s = one_region(32, 8);
  auto op = op_on(meshir::Rect{0, 0, 32, 8}, meshir::Kernel::meshgemv);
  op.reduce_axis = meshir::Axis::x;
  op.work.k = 64;
  op.work.n = 32;
  op.work.batch = 1;
  for (const std::int64_t tokens : {1, 64}) {
    op.work.m = tokens;
    s.ops = {op};
    const auto c = cost::op_cost(s, s.ops[0], wse3(), round_params());
    CHECK(c.compute_cycles == doctest::Approx(static_cast<double>(tokens) * 2.0 * 2.0));
  }
}

TEST_CASE("the neighbour shift and the KV shift, by hand") {
  // 3 hops of a 16-element tile in a row of 8: 50 + 3 x (70 + 16 x 1) + 3 x 15 queued = 353.
  const auto p = round_params();
  const auto t = cost::detail::neighbour_shift(3, 16, 8, p);
  CHECK(t.stages == 3);
  CHECK(t.total_cycles == doctest::Approx(353.0));
  // 10 hops in a row of 4: the first 4 wait behind the row's tiles, the other 6 are clear.
  CHECK(cost::detail::neighbour_shift(10, 16, 4, p).total_cycles == doctest::Approx(50 + 10 * 86.0 + 4 * 15.0));
  CHECK(cost::detail::neighbour_shift(0, 16, 8, p).total_cycles == 0.0);
  // KV shift on 4 x 4: 512 bytes over 16 PEs = 32 B = 16 FP16 elements, one hop behind the rows
  // above: 50 + 70 + 16 + 15.
  const auto s = one_region(4, 4);
  auto op = op_on(s.regions[0], meshir::Kernel::kv_shift);
  op.work.output_bytes = 512;
  CHECK(cost::op_cost(s, op, wse3(), round_params()).total_cycles == doctest::Approx(151.0));
}

TEST_CASE("a grouped GEMM runs a MeshGEMM per expert on its own rows, by hand (issue 38)") {
  // Two experts of 8 rows each, k = n = 8, on 4 x 4 (WSE-3: 4 FMAC elements a cycle). Per expert:
  // 4 steps, tiles Mt = Kt = Nt = 2; a step computes 2 k-iterations (20) and 4 FMACs of 2 elements
  // (1 + 1 issue each: 8) = 28, above its shift (2 hops + 16 B = 4 wavelets); 2 alignment shifts of
  // 2 hops and 8 B (2 wavelets) each; 6 steps' fixed costs (120). 112 + 4 + 4 + 120 = 240 an expert.
  auto s = one_region(4, 4);
  auto op = op_on(s.regions[0], meshir::Kernel::meshgemm);
  op.work.m = 16;
  op.work.k = 8;
  op.work.n = 8;
  op.work.flops = 2 * 16 * 8 * 8;
  op.work.products = 2;
  const auto grouped = cost::op_cost(s, op, wse3(), round_params());
  CHECK(grouped.compute_cycles == doctest::Approx(2 * 112.0));
  CHECK(grouped.hop_cycles == doctest::Approx(2 * 4.0));
  CHECK(grouped.link_cycles == doctest::Approx(2 * 4.0));
  CHECK(grouped.overhead_cycles == doctest::Approx(2 * 120.0));
  CHECK(grouped.total_cycles == doctest::Approx(480.0));
  // Costed as one GEMM of all 16 rows against one expert's tile it would be 112 + 4 + 8 + 120 = 244:
  // the routed rows need their own experts' tiles.
  op.work.products = 1;
  CHECK(cost::op_cost(s, op, wse3(), round_params()).total_cycles == doctest::Approx(244.0));
}
