// Streamed K-tree allreduce and multicast critical paths, and the cycles of a vector FMAC loop.
#include "wavel/cost/detail/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace wavel::cost::detail {

std::int64_t wavelets_for(double bytes, const wafer::WaferParams& wafer) {
  if (!(bytes > 0.0)) return 0;
  const double per_wavelet = static_cast<double>(std::max<std::int64_t>(1, wafer.link_bytes_per_cycle));
  return static_cast<std::int64_t>(std::ceil(bytes / per_wavelet));
}

Collective streamed_allreduce(std::int64_t pes, std::int64_t group, double bytes, const wafer::WaferParams& wafer,
                              const CostParams& p) {
  Collective c;
  if (pes <= 1) return c;
  const std::int64_t g = group > 0 ? std::min(group, pes)
                                   : std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(pes))));
  const std::int64_t groups = (pes + g - 1) / g;
  // A centred root is g / 2 one-hop stages from the far end of its group; group roots are g apart.
  const std::int64_t level1 = g / 2;
  const std::int64_t level2 = groups / 2;
  c.stages = level1 + level2;
  c.hops = level1 + level2 * g + pes / 2;  // reduce to the centre, then multicast to both ends
  const std::int64_t fan_in = std::min<std::int64_t>(2, g - 1) + std::min<std::int64_t>(2, groups - 1);
  c.wavelets = std::max<std::int64_t>(1, fan_in) * wavelets_for(bytes, wafer);
  c.hop_cycles = p.alpha_cycles_per_hop * static_cast<double>(c.hops);
  c.stage_cycles = p.beta_cycles_per_stage * static_cast<double>(c.stages);
  c.link_cycles = static_cast<double>(c.wavelets);
  return c;
}

Collective multicast(std::int64_t pes, double bytes, const wafer::WaferParams& wafer, const CostParams& p) {
  Collective c;
  if (pes <= 1) return c;
  c.hops = pes / 2;
  c.wavelets = wavelets_for(bytes, wafer);
  c.hop_cycles = p.alpha_cycles_per_hop * static_cast<double>(c.hops);
  c.link_cycles = static_cast<double>(c.wavelets);
  return c;
}

std::int64_t fmac_elements_per_cycle(const wafer::WaferParams& wafer) { return wafer.vector_rate(wafer::VectorForm::fmach); }

double vector_cycles_per_element(const meshir::OpWork& work, const wafer::WaferParams& wafer) {
  double cycles = 0.0;
  for (const auto& f : wafer::vector_forms()) {
    const auto count = work.vector[static_cast<std::size_t>(f.form)];
    if (count > 0) cycles += static_cast<double>(count) / static_cast<double>(wafer.vector_rate(f.form));
  }
  if (cycles > 0.0) return cycles;
  const double elements = static_cast<double>(std::max<std::int64_t>(1, work.batch)) *
                          static_cast<double>(std::max<std::int64_t>(1, work.m)) *
                          static_cast<double>(std::max<std::int64_t>(1, work.n));
  return static_cast<double>(std::max<std::int64_t>(0, work.flops)) / elements /
         static_cast<double>(wafer.vector_rate(wafer::VectorForm::fp16_vv));
}

double fmac_loop_cycles(double instructions, std::int64_t length, double issue_cycles,
                        const wafer::WaferParams& wafer) {
  if (!(instructions > 0.0) || length < 1) return 0.0;
  const std::int64_t rate = fmac_elements_per_cycle(wafer);
  const double element_cycles = static_cast<double>(length / rate + (length % rate != 0 ? 1 : 0));
  return instructions * (element_cycles + issue_cycles);
}

double scalar_element_cycles(const meshir::OpWork& work, const wafer::WaferParams& wafer, const CostParams& p) {
  return static_cast<double>(std::max<std::int64_t>(0, work.scalar_instructions)) * p.scalar_op_cycles +
         static_cast<double>(std::max<std::int64_t>(0, work.scalar_divisions)) * wafer.scalar_division_cycles;
}

double pe_share(const meshir::PlacedOp& op, std::int64_t per_row) {
  if (per_row < 1) return 0.0;
  const meshir::Layout& l = op.in_layout;
  std::int64_t token_parts = 1, feature_parts = 1;
  for (const auto& [dim, part] : {std::pair{l.on_x, l.part_x}, std::pair{l.on_y, l.part_y}}) {
    if (dim == meshir::Dim::tokens) token_parts *= std::max<std::int64_t>(1, part);
    if (dim == meshir::Dim::features) feature_parts *= std::max<std::int64_t>(1, part);
  }
  const auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const std::int64_t rows = std::max<std::int64_t>(1, op.work.batch) * std::max<std::int64_t>(1, op.work.m);
  return static_cast<double>(ceil_div(rows, token_parts)) * static_cast<double>(ceil_div(per_row, feature_parts));
}

double scalar_loop_cycles(const meshir::PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  return pe_share(op, op.work.scalar_elements) * scalar_element_cycles(op.work, wafer, p);
}

OpCost neighbour_shift(std::int64_t hops, std::int64_t elements, std::int64_t tiles, const CostParams& p) {
  OpCost c;
  if (hops < 1) return c;
  const double l = static_cast<double>(hops);
  c.hops = hops;
  c.stages = hops;  // each hop is received whole before it is sent on
  c.stage_cycles = l * p.shift_hop_cycles +
                   static_cast<double>(std::min(hops, std::max<std::int64_t>(1, tiles))) * p.shift_queue_cycles;
  c.link_cycles = l * static_cast<double>(std::max<std::int64_t>(0, elements)) * p.shift_element_cycles;
  c.overhead_cycles = p.shift_fixed_cycles;
  finish(c);
  return c;
}

void add_to(OpCost& c, const Collective& t) {
  c.hops += t.hops;
  c.stages += t.stages;
  c.hop_cycles += t.hop_cycles;
  c.stage_cycles += t.stage_cycles;
  c.link_cycles += t.link_cycles;
}

void finish(OpCost& c) {
  c.total_cycles = c.compute_cycles + c.hop_cycles + c.stage_cycles + c.link_cycles + c.overhead_cycles;
}

double peak_flops_per_cycle(const wafer::WaferParams& wafer) { return 2.0 * static_cast<double>(wafer.fmac_lanes()); }

}  // namespace wavel::cost::detail
