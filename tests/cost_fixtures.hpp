// Small hand-checkable fixtures shared by the cost-model and simulator tests.
#pragma once

#include <cstdint>
#include <string>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::test {

inline wafer::WaferParams wse3() { return *wafer::find_wafer_preset("wse3"); }

/// Round numbers for hand computation: alpha 1, beta 30, efficiencies 0.5, overheads 20 and 100.
inline cost::CostParams round_params() {
  cost::CostParams p;
  p.alpha_cycles_per_hop = 1.0;
  p.beta_cycles_per_stage = 30.0;
  p.gemm_step_cycles = 20.0;
  p.gemm_k_cycles = 10.0;
  p.gemm_fmac_issue_cycles = 1.0;
  p.gemv_fixed_cycles = 40.0;
  p.gemv_fmac_issue_cycles = 1.0;
  p.shift_fixed_cycles = 50.0;
  p.shift_hop_cycles = 70.0;
  p.shift_element_cycles = 1.0;
  p.shift_queue_cycles = 15.0;
  p.scalar_op_cycles = 6.0;
  p.route_switch_cycles = 50.0;
  return p;
}

/// A 64 x 64 grid with one w x h region at the origin and no ops.
inline meshir::Schedule one_region(std::int64_t w, std::int64_t h) {
  meshir::Schedule s;
  s.name = "t";
  s.grid_w_pes = 64;
  s.grid_h_pes = 64;
  s.sram_per_pe_bytes = 49152;
  s.colours = 24;
  s.regions = {meshir::Rect{0, 0, w, h}};
  return s;
}

/// An op of `kernel` using all of `r`, with no work yet.
inline meshir::PlacedOp op_on(const meshir::Rect& r, meshir::Kernel kernel) {
  meshir::PlacedOp op;
  op.name = "op";
  op.kernel = kernel;
  op.used = r;
  return op;
}

/// one_region(w, h) cut into columns `strip_w` wide (regions 1, 2, ...), and an expert CUT's dispatch of
/// `bytes` from region 0 into each, all in step 0.
inline meshir::Schedule strip_dispatches(std::int64_t w, std::int64_t h, std::int64_t strip_w, std::int64_t bytes) {
  auto s = one_region(w, h);
  for (std::int64_t x = 0; x < w; x += strip_w) {
    s.regions.push_back(meshir::Rect{x, 0, strip_w, h});
    auto op = op_on(s.regions[0], meshir::Kernel::moe_dispatch);
    op.name = "d" + std::to_string(s.regions.size() - 2);
    op.to_region = static_cast<int>(s.regions.size()) - 1;
    op.work.input_bytes = bytes;
    s.ops.push_back(op);
  }
  return s;
}

/// A two-stage pipeline on one 4 x 4 region: op 0 on stage 0, a transfer fed from it into stage 1
/// (links only), op 2 on stage 1; one step each.
inline meshir::Schedule two_stages() {
  auto s = one_region(4, 4);
  auto a = op_on(s.regions[0], meshir::Kernel::elementwise);
  auto t = op_on(s.regions[0], meshir::Kernel::transfer);
  auto b = op_on(s.regions[0], meshir::Kernel::elementwise);
  t.step = 1;
  t.stage = 1;
  t.inputs = {0};
  b.step = 2;
  b.stage = 1;
  s.ops = {a, t, b};
  return s;
}

}  // namespace wavel::test
