// The layer WaferLLM's measured runs timed (MeshInfra/WaferLLM, Decode/WSE-2 and Prefill/WSE-2), as a
// MeshIR schedule that the cost model and the simulator both cost: WaferLLM's shapes, fusions,
// scalar loops and op order, not the tool's own op graph.
#pragma once

#include <cstdint>

#include "wavel/calibrate/reference.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"

namespace wavel::calibrate {

/// One WaferLLM run's configuration (its model_config JSON and run script).
struct WaferllmRun {
  workload::Phase phase = workload::Phase::decode;
  std::int64_t grid = 0;       ///< P: the layer runs on P x P PEs
  std::int64_t dim = 0;        ///< hidden size, padded to a multiple of P; one head of this width
  std::int64_t ffn_dim = 0;    ///< FFN width, padded to a multiple of P
  std::int64_t seq_len = 0;    ///< decode: KV length; prefill: prompt; padded to a multiple of P
  std::int64_t group_num = 0;  ///< decode: groups of the two-level allreduce tree along a side
  std::int64_t layers = 0;     ///< the model's depth: the one timed layer is scaled by it
};

/// The configuration WaferLLM's scripts set for `point` on `model`: each size rounded up to a multiple
/// of P (Decode/WSE-2/model_config/llama8B_4k_1_420.json: dim 4200, ffn 14700, seq_len 4200), and
/// group_num the divisor of P nearest sqrt(P), the smaller on a tie (420 -> 20, 540 -> 20, 660 -> 22).
/// The point's dim, ffn_dim, seq_len and group_num keys override what is derived.
WaferllmRun waferllm_run(const ReferencePoint& point, const workload::ModelSpec& model);

/// The timed layer of `run` on one P x P region, `layer_scale` = layers, one op per step.
/// Decode (Decode/WSE-2/src/decode.csl, decode_struct): RMSNorm, Q/K/V GEMVs with one fused
/// reduction, RoPE of Q and K, scores against the K cache, softmax (max and sum reductions, a scalar
/// fast_exp per entry), values, O, residual, RMSNorm, gate/up with one fused reduction, SiLU as a
/// scalar loop over dim / P elements (the loop's bound), times up, down, residual. No KV append and
/// no route reconfiguration (WSE-2 keeps a colour per axis); both trees take group_num groups.
/// Prefill (Prefill/WSE-2/src/prefill.csl, prefill_struct): RMSNorm, separate Q, K and V MeshGEMMs
/// (K and V reuse Q's aligned input), RoPE of Q and K, GEMM-T scores, softmax (a scalar exp per
/// score), P.V, O, RMSNorm, up and gate MeshGEMMs (gate reuses up's alignment), SiLU as a scalar
/// loop, times up, down, one residual add (the attention residual's branch is never taken).
meshir::Schedule waferllm_layer_schedule(const WaferllmRun& run, const wafer::WaferParams& wafer);

}  // namespace wavel::calibrate
