// Weight streaming of a whole model; see weight_streaming.hpp.
#include "wavel/deploy/weight_streaming.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "wavel/deploy/layer_costs.hpp"
#include "wavel/common/error.hpp"

namespace wavel::deploy {

namespace {

std::string gigabytes(double bytes) {
  std::ostringstream out;
  out.precision(3);
  out << bytes / 1e9 << " GB";
  return out.str();
}

}  // namespace

namespace {

WeightStreaming stream(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                       const workload::MoeRouting& moe, const wafer::WaferParams& wafer, const cost::CostParams& params,
                       const wafer::ClusterParams& cluster) {
  WeightStreaming out;
  const workload::Workload whole = workload::build_workload(model, shape);
  const ModelLayerCosts costs = layer_costs(model, shape, moe, wafer, params);
  const bool decode = shape.phase == workload::Phase::decode;
  std::vector<StreamedLayer> layers;
  for (const auto& l : costs.layers) layers.push_back({static_cast<double>(l.param_bytes), l.compute_s});
  const std::int64_t activation_peak_bytes = costs.activation_peak_bytes;

  out.sram_required_bytes =
      weight_streaming_sram_bytes(layers, static_cast<double>(whole.kv_cache_bytes + activation_peak_bytes));
  const double sram_bytes = static_cast<double>(wafer.total_sram_data_bytes());
  if (static_cast<double>(whole.param_bytes) > cluster.external_memory_bytes) {
    out.na_reason = "the weights (" + gigabytes(static_cast<double>(whole.param_bytes)) +
                    ") exceed the external memory (" + gigabytes(cluster.external_memory_bytes) + ")";
    return out;
  }
  if (out.sram_required_bytes > sram_bytes) {
    out.na_reason = "KV cache, activations and two layers' weights need " + gigabytes(out.sram_required_bytes) +
                    " of the wafer's " + gigabytes(sram_bytes) + " SRAM";
    return out;
  }
  const double step_s = weight_streaming_step_s(layers, cluster.ingress_bytes_per_s);
  const double requests = static_cast<double>(shape.concurrent_requests);
  out.placed = true;
  out.latency_s = step_s;
  if (decode) {
    out.tokens_per_s = requests / step_s;
    out.tpr_tokens_per_s = 1.0 / step_s;
  } else {
    out.tokens_per_s = requests * static_cast<double>(shape.input_tokens) / step_s;
    out.tpr_tokens_per_s = static_cast<double>(shape.input_tokens) / step_s;
  }
  return out;
}

}  // namespace

WeightStreaming weight_streaming(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                                 const workload::MoeRouting& moe, const wafer::WaferParams& wafer,
                                 const cost::CostParams& params, const wafer::ClusterParams& cluster) {
  try {
    return stream(model, shape, moe, wafer, params, cluster);
  } catch (const Error& e) {
    // A shape the per-layer schedule cannot be built for makes this deployment n/a, not the setting.
    if (e.code() == ExitCode::internal) throw;
    WeightStreaming out;
    out.na_reason = std::string("cannot be built: ") + e.what();
    return out;
  }
}

}  // namespace wavel::deploy
