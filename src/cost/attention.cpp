// Decode attention costed per head segment (scores, softmax, values) with the GQA K/V multicast.
#include "wavel/cost/detail/attention.hpp"

#include <algorithm>

#include "wavel/common/error.hpp"
#include "wavel/cost/detail/collectives.hpp"

namespace wavel::cost::detail {

namespace {

constexpr double kFp16Bytes = 2.0;
constexpr double kFp32Bytes = 4.0;  // partial scores and sums accumulate in FP32

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// The op's tree groups where they fit the line it reduces over; otherwise sqrt(line) (0).
std::int64_t tree_group(const meshir::PlacedOp& op, std::int64_t line) { return op.group > 0 && op.group < line ? op.group : 0; }

}  // namespace

OpCost decode_attention(const meshir::PlacedOp& op, const wafer::WaferParams& wafer, const CostParams& p) {
  using meshir::AttentionRole;
  using meshir::Axis;
  const meshir::OpWork& w = op.work;
  if (w.heads < 1 || op.attention == AttentionRole::none) {
    throw InternalError("decode_attention: op '" + op.name + "' is not an attention op");
  }
  const std::int64_t a = std::max<std::int64_t>(1, op.reduce_axis == Axis::x ? op.used.w : op.used.h);
  const std::int64_t b = std::max<std::int64_t>(1, op.reduce_axis == Axis::x ? op.used.h : op.used.w);
  const std::int64_t heads = w.heads;
  const std::int64_t kv_heads = w.kv_heads > 0 ? std::min(w.kv_heads, heads) : heads;
  const std::int64_t group_heads = std::max<std::int64_t>(1, heads / kv_heads);  // query heads per KV head
  const std::int64_t requests = std::max<std::int64_t>(1, w.batch * std::max<std::int64_t>(1, w.m) / heads);
  const std::int64_t segment = std::max<std::int64_t>(1, a / heads);   // PEs holding one head
  const std::int64_t heads_per_pe = ceil_div(heads, a);                // > 1 only when a < heads
  const bool scores = op.attention == AttentionRole::scores;
  const std::int64_t context = scores || op.attention == AttentionRole::softmax ? w.n : w.k;
  const std::int64_t head_dim = scores ? w.k : w.n;
  const std::int64_t context_pe = ceil_div(context, b);
  const std::int64_t features_pe = ceil_div(heads * head_dim, a);
  const auto r = static_cast<double>(requests);

  OpCost c;
  if (op.attention == AttentionRole::softmax) {
    const double local_elements = r * static_cast<double>(heads_per_pe * context_pe);
    c.compute_cycles = vector_cycles_per_element(w, wafer) * local_elements + local_elements * scalar_element_cycles(w, wafer, p);
    const double bytes = r * static_cast<double>(heads_per_pe) * kFp32Bytes;
    for (std::int64_t round = 0; round < std::max<std::int64_t>(1, op.rounds); ++round) {
      add_to(c, streamed_allreduce(b, tree_group(op, b), bytes, wafer, p));
      c.overhead_cycles += p.gemv_fixed_cycles;  // the same tree call as a MeshGEMV's
    }
    finish(c);
    return c;
  }
  // K or V slice of this PE's features over its context entries, multicast over the KV group's span.
  if (group_heads > 1) {
    const double kv_bytes = static_cast<double>(context_pe * features_pe) * kFp16Bytes;
    add_to(c, multicast(std::min(a, group_heads * segment), kv_bytes, wafer, p));
  }
  // WaferLLM's decode loops: scores issue one FMAC per feature along the PE's context entries, values
  // one per context entry along its features.
  const std::int64_t vector_length = scores ? context_pe : features_pe;
  const std::int64_t vectors = scores ? features_pe : context_pe;
  c.compute_cycles = fmac_loop_cycles(r * static_cast<double>(vectors), vector_length, p.gemv_fmac_issue_cycles, wafer);
  c.overhead_cycles = p.gemv_fixed_cycles;
  if (scores) {
    add_to(c, streamed_allreduce(segment, tree_group(op, segment), r * static_cast<double>(heads_per_pe * context_pe) * kFp32Bytes, wafer, p));
  } else {
    add_to(c, streamed_allreduce(b, tree_group(op, b), r * static_cast<double>(features_pe) * kFp32Bytes, wafer, p));
  }
  finish(c);
  return c;
}

}  // namespace wavel::cost::detail
