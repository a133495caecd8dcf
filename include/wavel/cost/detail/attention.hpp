// Decode attention by head: reductions over the PEs that hold a head, with the GQA K/V multicast.
#pragma once

#include "wavel/cost/model.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::cost::detail {

/// Cost of one decode attention op (PlacedOp::attention is scores, softmax or values; work.heads > 0;
/// one query row per request). The layout is WaferLLM's decode layout: the heads' features are split
/// along `reduce_axis` (a PEs), so one head occupies a segment of max(1, a / heads) PEs, and the
/// context is split across the other axis (b PEs).
/// - scores: each PE dots its query slice with its K slice (vector over its context entries), then a
///   streamed allreduce over the head's segment; with GQA, each KV head's K slice is first multicast
///   to the segments of its heads / kv_heads query heads (K/V are stored once per KV head).
/// - softmax: max and sum allreduces over the context axis, one value per (request, head) per PE.
/// - values: each PE scales its V slice by its probabilities (vector over its features), then a
///   streamed allreduce over the context axis; with GQA, V is multicast as K was.
OpCost decode_attention(const meshir::PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& params);

}  // namespace wavel::cost::detail
