// Physical cost model: per-op cycles (compute, hops, routing stages, link serialisation, overheads),
// SRAM per PE, and per-schedule latency and throughput with step concurrency and request pipelining.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

/// Cost of one op, in cycles, split by cause. total = max-or-sum of the parts as the kernel overlaps them.
struct OpCost {
  double compute_cycles = 0;     ///< local FLOPs / (2 x SIMD x efficiency)
  double hop_cycles = 0;         ///< alpha x hops on the critical path
  double stage_cycles = 0;       ///< beta x routing stages on the critical path
  double link_cycles = 0;        ///< bytes / link bandwidth on the busiest link (contention)
  double overhead_cycles = 0;    ///< fixed per-kernel and per-step costs
  double total_cycles = 0;
  std::int64_t hops = 0;         ///< hops on the critical path
  std::int64_t stages = 0;       ///< routing stages on the critical path
};

/// Cost of a whole schedule for its setting.
struct ScheduleCost {
  std::vector<OpCost> ops;             ///< parallel to Schedule::ops
  double pass_cycles = 0;              ///< one pass of one request group through all steps (scaled)
  double bottleneck_stage_cycles = 0;  ///< slowest pipeline stage (scaled)
  double latency_s = 0;                ///< TPOT (decode) or mean TTFT over the requests (prefill)
  double tokens_per_s = 0;             ///< throughput over all concurrent requests
  double tpr_tokens_per_s = 0;         ///< throughput per request (1/TPOT in decode; prompt tokens/s in prefill)
  std::int64_t pes_used = 0;           ///< PEs in the union of the schedule's regions
  std::int64_t sram_bytes_per_pe_max = 0;
  double sram_headroom = 0;            ///< 1 - max SRAM per PE / SRAM per PE (negative: does not fit)
};

/// Schedule-level figures composed from per-op times.
struct Composition {
  double pass_cycles = 0;
  double bottleneck_stage_cycles = 0;
  double latency_s = 0;
  double tokens_per_s = 0;
  double tpr_tokens_per_s = 0;
};

/// The composition rules, shared by the cost model and the simulator: steps in sequence and the
/// ops of a step overlapped; stages timed on their own ops (transfers excluded: they run on the
/// links while the stages work on other micro-batches); layer_scale; micro-batches pipelined
/// (decode: a round is max(pass, microbatches x slowest stage); prefill: with n = mb x prompt_chunks
/// units, the last ends after pass + (n - 1) x slowest stage and TTFT is the mean over micro-batches
/// of their last chunk's end, pass + (chunks (mb + 1) / 2 - 1) x slowest stage).
Composition compose(const meshir::Schedule& schedule, const std::vector<double>& op_total_cycles, double clock_hz,
                    bool decode, std::int64_t prompt_tokens);

/// The pipelining rule of compose() alone: latency and throughput of `microbatches` micro-batches of
/// `concurrent_requests` requests, each prompt in `prompt_chunks` chunks (prefill), through a schedule
/// whose pass and slowest stage (both scaled, one chunk's) are given: the mb x chunks units stream
/// through the stages in order, a micro-batch's TTFT is its last chunk's end. pass_cycles and
/// bottleneck_stage_cycles are copied into the result.
Composition pipeline(double pass_cycles, double bottleneck_stage_cycles, std::int64_t microbatches,
                     std::int64_t prompt_chunks, std::int64_t concurrent_requests, double clock_hz, bool decode,
                     std::int64_t prompt_tokens);

/// `params.route_switch_cycles` for each MeshGEMV whose allreduce axis differs from the previous
/// MeshGEMV's in its region; 0 elsewhere.
std::vector<double> route_switch_cycles(const meshir::Schedule& schedule, const CostParams& params);

/// Cost of one op of `schedule` (which supplies regions and the requests each op sees).
OpCost op_cost(const meshir::Schedule& schedule, const meshir::PlacedOp& op, const wafer::WaferParams& wafer,
               const CostParams& params);

/// Evaluates a schedule. `decode` selects TPOT (one token per request per round) or TTFT (every
/// request's `prompt_tokens` processed, micro-batches pipelined through the stages).
ScheduleCost evaluate(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const CostParams& params,
                      bool decode, std::int64_t prompt_tokens);

/// evaluate()'s pass_cycles alone: one pass of one request group through all steps (scaled),
/// without the SRAM and PE figures (the search's per-block costs, which take the SRAM apart).
double pass_cycles(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const CostParams& params);

/// Cost of moving `bytes` from rectangle `from` to rectangle `to` (transfers, MoE dispatch and
/// combine between separate rectangles: the mover's used rectangle and the destination region's meshir::used_part): alpha x
/// centre-to-centre hops + bytes over as many links as the narrowest side of either rectangle + launch.
OpCost transfer_cost(const meshir::Rect& from, const meshir::Rect& to, double bytes, const wafer::WaferParams& wafer,
                     const CostParams& params);

/// Cost of one strip's flow of an expert CUT's all-to-all (meshir::exchange_of), alone: the bytes
/// that start (end) on either side of the strip cross its edge over the rectangle's lines, the larger
/// side paces it; alpha x the longest path; a transfer's set-up. The flows of one step also share the
/// boundaries between strips (charged in evaluate: every flow waits for the busiest boundary).
OpCost exchange_cost(const meshir::Exchange& exchange, double bytes, const wafer::WaferParams& wafer,
                     const CostParams& params);

/// What one leg adds to a crossing beyond the link's own time: its hops and set-up, and its
/// bandwidth term where that is slower than the link's (`link_cycles`). A crossing costs the link's
/// own time plus its two legs' leg_cycles, exactly unless both legs are slower than the link.
double leg_cycles(const OpCost& leg, double link_cycles);

/// Cost of a transfer to a region on another wafer (meshir::crosses_wafers): from the mover's used
/// rectangle to the I/O edge (meshir::io_rect), over the schedule's link, and from the far edge to
/// the destination's used part. Latencies add; the slowest bandwidth of the three paces the bytes.
OpCost link_crossing_cost(const meshir::Schedule& schedule, const meshir::PlacedOp& op, const wafer::WaferParams& wafer,
                          const CostParams& params);

/// Routing colours a kernel occupies per PE (checked against the wafer's budget).
int colours_needed(const meshir::PlacedOp& op);

}  // namespace wavel::cost
