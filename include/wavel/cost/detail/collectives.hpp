// Streamed collectives on a line of PEs (K-tree allreduce, multicast) and local vector FMAC loops.
#pragma once

#include <cstdint>

#include "wavel/cost/model.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::cost::detail {

/// Critical path of a collective, by cause.
struct Collective {
  std::int64_t hops = 0;       ///< hops on the critical path (reduce and broadcast)
  std::int64_t stages = 0;     ///< software routing stages on the critical path
  std::int64_t wavelets = 0;   ///< wavelets through the busiest port (link or ramp)
  double hop_cycles = 0;       ///< alpha x hops
  double stage_cycles = 0;     ///< beta x stages
  double link_cycles = 0;      ///< wavelets through the busiest port, one per cycle
  [[nodiscard]] double total_cycles() const { return hop_cycles + stage_cycles + link_cycles; }
};

/// Wavelets (one per link per cycle) that carry `bytes`.
std::int64_t wavelets_for(double bytes, const wafer::WaferParams& wafer);

/// Streamed two-level K-tree allreduce of `bytes` over a line of `pes` PEs with groups of `group`
/// (0: round(sqrt(pes))), then a multicast of the result from the root back over the line.
/// Each PE adds wavelets as they arrive and forwards them, so the message is not re-serialised per
/// stage: T = alpha x (reduce hops + broadcast hops) + beta x stages + fan-in x wavelets, where the
/// fan-in counts the streams the final root's ramp takes in (2 per level with a centred root).
/// This is the shape of Luczynski et al., "Near-Optimal Wafer-Scale Reduce" (HPDC 2024):
/// T = max(C, E/N + L) + (2 T_R + 1) D with C the busiest port's wavelets, L the longest path and
/// D the depth of dependent reductions (beta here stands for 2 T_R + 1 plus the add).
Collective streamed_allreduce(std::int64_t pes, std::int64_t group, double bytes, const wafer::WaferParams& wafer,
                              const CostParams& params);

/// Hardware multicast of `bytes` from one PE to `pes` PEs of a line, root at the centre: the router
/// copies wavelets, so the message is serialised once and travels pes / 2 hops; no software stage.
Collective multicast(std::int64_t pes, double bytes, const wafer::WaferParams& wafer, const CostParams& params);

/// FP16 elements a vector FMAC (acc += x * scalar) retires per cycle: the SIMD width, or what the
/// SRAM ports carry (each element reads 4 bytes and writes 2), whichever is less: 2 on WSE-2 (32-bit
/// ports), 4 on WSE-3 (64-bit ports). @faddh and @fmulh read and write as much, so they share it.
std::int64_t fmac_elements_per_cycle(const wafer::WaferParams& wafer);

/// Cycles per element of an op's vector work: each instruction of its mix at its form's rate; an op
/// without a mix runs `flops` per element as two-vector fp16 ops (MeshIR files written before mixes).
double vector_cycles_per_element(const meshir::OpWork& work, const wafer::WaferParams& wafer);

/// Cycles of `instructions` vector FMAC instructions of `length` elements each, as WaferLLM's loops
/// issue them: instructions x (ceil(length / fmac_elements_per_cycle) + issue_cycles).
double fmac_loop_cycles(double instructions, std::int64_t length, double issue_cycles, const wafer::WaferParams& wafer);

/// A tile of `elements` FP16 values shifted `hops` PEs along a line of `tiles` tiles all shifting, one
/// store-and-forward hop at a time (WaferLLM's shift): shift_fixed + hops x (shift_hop + elements x
/// shift_element) + min(hops, tiles) x shift_queue cycles. The last tile of the row waits on each hop
/// while the tiles ahead of it are still in flight (one-tile buffers); past the row's width the route
/// is clear (WSE-3 shift runs: 77 cycles a hop within the width, 65 beyond, every P).
OpCost neighbour_shift(std::int64_t hops, std::int64_t elements, std::int64_t tiles, const CostParams& params);

/// Cycles of one element of a work's scalar loop: scalar_instructions x scalar_op_cycles +
/// scalar_divisions x the wafer's scalar_division_cycles.
double scalar_element_cycles(const meshir::OpWork& work, const wafer::WaferParams& wafer, const CostParams& params);

/// Elements a PE holds of an op's rows x `per_row` tensor: the token rows split over the in-layout's
/// token axes times each row's `per_row` split over its feature axes (a replicated axis splits nothing).
double pe_share(const meshir::PlacedOp& op, std::int64_t per_row);

/// A PE's scalar loop in `op`: the token rows it holds (the rows split over the in-layout's token
/// axes) x its share of each row's scalar_elements (split over the feature axes) x one element's cycles.
double scalar_loop_cycles(const meshir::PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& params);

/// Adds a collective's critical path to an op's cost (sequentially).
void add_to(OpCost& cost, const Collective& collective);

/// total_cycles = the sum of the parts.
void finish(OpCost& cost);

/// Dense FP16 FLOPs one PE issues per cycle at peak: 2 x SIMD lanes.
double peak_flops_per_cycle(const wafer::WaferParams& wafer);

}  // namespace wavel::cost::detail
