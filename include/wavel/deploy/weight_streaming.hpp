// Weight streaming of a whole model on one system: each layer runs over the whole wafer (as
// Full-Chip places it) on resident activations and KV cache while the next layer's weights stream
// in from external memory. A deployment for models that do not fit the wafer's SRAM.
#pragma once

#include <cstdint>
#include <string>

#include "wavel/cost/params.hpp"
#include "wavel/deploy/deployment.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::deploy {

/// Predicted figures of a weight-streaming deployment (placed = false with a reason when it cannot run).
struct WeightStreaming {
  bool placed = false;
  double latency_s = 0;            ///< TPOT (decode) or TTFT (prefill): one pass streams every layer
  double tokens_per_s = 0;         ///< over all concurrent requests
  double tpr_tokens_per_s = 0;
  double sram_required_bytes = 0;  ///< resident KV cache and activations plus the double buffer
  std::string na_reason;

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("placed", "bool", r.placed);
    v("latency_s", "s", r.latency_s);
    v("tokens_per_s", "tokens/s", r.tokens_per_s);
    v("tpr_tokens_per_s", "tokens/s", r.tpr_tokens_per_s);
    v("sram_required_bytes", "bytes", r.sram_required_bytes);
    v("na_reason", "", r.na_reason);
  }
};

/// Weight streaming of `model` (all its layers) for `shape` on one wafer fed by `cluster`'s
/// external memory: each layer's compute is its Full-Chip ops' cost under `params`; the step
/// follows weight_streaming_step_s. Not placed when the weights exceed the external memory or the
/// resident bytes (weight_streaming_sram_bytes) exceed the wafer's SRAM.
WeightStreaming weight_streaming(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                                 const workload::MoeRouting& moe, const wafer::WaferParams& wafer,
                                 const cost::CostParams& params, const wafer::ClusterParams& cluster);

}  // namespace wavel::deploy
