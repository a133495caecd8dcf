// Weight streaming of a whole model; see weight_streaming.hpp.
#include "wavel/deploy/weight_streaming.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"

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
                       double moe_capacity_factor, const wafer::WaferParams& wafer, const cost::CostParams& params,
                       const ClusterParams& cluster) {
  WeightStreaming out;
  const workload::Workload whole = workload::build_workload(model, shape);
  // Decoder layers of one kind are alike: the leading dense layers of an MoE model and one more
  // layer (so one of each kind), with the embedding and the head, are costed; every layer of the
  // model takes its kind's compute and streams its own weights.
  workload::ModelSpec costed = model;
  costed.num_layers = std::min(model.num_layers, (model.moe ? model.moe->first_dense_layers : 0) + 1);
  workload::Workload w1 = workload::build_workload(costed, shape);
  w1.moe_capacity_factor = moe_capacity_factor;
  const bool decode = shape.phase == workload::Phase::decode;
  const meshir::Schedule schedule = baselines::build_fullchip(w1, wafer);
  const cost::ScheduleCost cost = cost::evaluate(schedule, wafer, params, decode, shape.input_tokens);

  std::vector<double> compute_s;  // per layer of w1
  std::int64_t activation_peak_bytes = 0;
  for (const auto& layer : w1.layers) {
    double cycles = 0;
    const std::string prefix = layer.name + ".";
    for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
      if (schedule.ops[i].name.rfind(prefix, 0) == 0) cycles += cost.ops[i].total_cycles;
    }
    compute_s.push_back(cycles / wafer.clock_hz);
    for (const auto& op : layer.ops) activation_peak_bytes = std::max(activation_peak_bytes, op.input_bytes + op.output_bytes);
  }
  std::vector<StreamedLayer> layers;
  for (const auto& layer : whole.layers) {
    const auto kind = std::find_if(w1.layers.begin(), w1.layers.end(), [&](const workload::Layer& l) {
      return l.decoder == layer.decoder && (layer.decoder ? l.is_moe == layer.is_moe : l.name == layer.name);
    });
    if (kind == w1.layers.end()) throw InternalError("weight streaming: no costed layer like '" + layer.name + "'");
    layers.push_back({static_cast<double>(layer.param_bytes), compute_s[static_cast<std::size_t>(kind - w1.layers.begin())]});
  }

  out.sram_required_bytes =
      weight_streaming_sram_bytes(layers, static_cast<double>(whole.kv_cache_bytes + activation_peak_bytes));
  const double sram_bytes = static_cast<double>(wafer.total_sram_bytes());
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
                                 double moe_capacity_factor, const wafer::WaferParams& wafer,
                                 const cost::CostParams& params, const ClusterParams& cluster) {
  try {
    return stream(model, shape, moe_capacity_factor, wafer, params, cluster);
  } catch (const Error& e) {
    // A shape the per-layer schedule cannot be built for makes this deployment n/a, not the setting.
    if (e.code() == ExitCode::internal) throw;
    WeightStreaming out;
    out.na_reason = std::string("cannot be built: ") + e.what();
    return out;
  }
}

}  // namespace wavel::deploy
