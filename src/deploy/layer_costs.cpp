// Per-layer Full-Chip costs of a whole model; see layer_costs.hpp.
#include "wavel/deploy/layer_costs.hpp"

#include <algorithm>

#include "wavel/baselines/baselines.hpp"
#include "wavel/common/checked.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"

namespace wavel::deploy {

ModelLayerCosts layer_costs(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                            const workload::MoeRouting& moe, const wafer::WaferParams& wafer, const cost::CostParams& params) {
  ModelLayerCosts out;
  const workload::Workload whole = workload::build_workload(model, shape);
  workload::ModelSpec costed = model;
  costed.num_layers = std::min(model.num_layers, (model.moe ? model.moe->first_dense_layers : 0) + 1);
  workload::Workload w1 = workload::build_workload(costed, shape);
  w1.moe = moe;
  const bool decode = shape.phase == workload::Phase::decode;
  const meshir::Schedule schedule = baselines::build_fullchip(w1, wafer);
  const cost::ScheduleCost cost = cost::evaluate(schedule, wafer, params, decode, shape.input_tokens);

  std::vector<double> compute_s;  // per layer of w1
  for (const auto& layer : w1.layers) {
    double cycles = 0;
    const std::string prefix = layer.name + ".";
    for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
      if (schedule.ops[i].name.rfind(prefix, 0) == 0) cycles += cost.ops[i].total_cycles;
    }
    compute_s.push_back(cycles / wafer.clock_hz);
    for (const auto& op : layer.ops) out.activation_peak_bytes = std::max(out.activation_peak_bytes, op.input_bytes + op.output_bytes);
  }
  for (const auto& layer : whole.layers) {
    const auto kind = std::find_if(w1.layers.begin(), w1.layers.end(), [&](const workload::Layer& l) {
      return l.decoder == layer.decoder && (layer.decoder ? l.is_moe == layer.is_moe : l.name == layer.name);
    });
    if (kind == w1.layers.end()) throw InternalError("layer costs: no costed layer like '" + layer.name + "'");
    out.layers.push_back(LayerCost{layer.name, layer.decoder, compute_s[static_cast<std::size_t>(kind - w1.layers.begin())],
                                   layer.param_bytes, layer.kv_cache_bytes});
  }
  if (model.tie_embeddings) out.tied_head_bytes = checked::mul(model.vocab, model.hidden, model.dtype_bytes);
  return out;
}

}  // namespace wavel::deploy
