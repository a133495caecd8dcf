// Reference predictions through the same baseline builder and cost model that the sweep uses.
#include "wavel/calibrate/predict.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "wavel/calibrate/waferllm_layer.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"

namespace wavel::calibrate {

meshir::Schedule waferllm_reference_schedule(const ReferencePoint& p, const wafer::WaferParams& wafer) {
  const auto model = workload::find_model_preset(p.model);
  if (!model) throw DataError({Diagnostic{"", p.line, p.column, "model", "unknown model '" + p.model + "'"}});
  return waferllm_layer_schedule(waferllm_run(p, *model), wafer);
}

Predictor waferllm_predictor(const wafer::WaferParams& wafer) {
  using Key = std::tuple<std::string, int, std::int64_t, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                         std::int64_t>;
  // Schedules depend only on the point, not on the parameters: build each once.
  auto cache = std::make_shared<std::map<Key, meshir::Schedule>>();
  return [wafer, cache](const ReferencePoint& p, const cost::CostParams& params) {
    const bool decode = p.phase == workload::Phase::decode;
    const Key key{p.model, decode ? 1 : 0, p.tokens(), p.grid_pes, p.dim, p.ffn_dim, p.seq_len, p.group_num};
    auto it = cache->find(key);
    if (it == cache->end()) it = cache->emplace(key, waferllm_reference_schedule(p, wafer)).first;
    return cost::evaluate(it->second, wafer, params, decode, p.tokens()).tpr_tokens_per_s;
  };
}

}  // namespace wavel::calibrate
