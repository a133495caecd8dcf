// What each layer of a whole model costs on one wafer when it runs alone over the whole grid (as
// Full-Chip places it): the compute weight streaming overlaps with the next layer's weights, and the
// stage times a pipeline's split balances.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::deploy {

/// One layer of the model (embedding, a decoder layer, or the head), predicted.
struct LayerCost {
  std::string name;
  bool decoder = false;
  double compute_s = 0;            ///< its ops on the whole grid, one after another
  std::int64_t param_bytes = 0;    ///< as the whole model counts them (a tied head holds no matrix)
  std::int64_t kv_cache_bytes = 0;
};

struct ModelLayerCosts {
  std::vector<LayerCost> layers;          ///< every layer of the model, in order
  std::int64_t activation_peak_bytes = 0; ///< the largest op's input + output
  std::int64_t tied_head_bytes = 0;       ///< the matrix a tied head must copy when it sits away from the embedding
};

/// Decoder layers of one kind are alike: the embedding, the leading dense layers of an MoE model and
/// one layer more (one of each kind) and the head are costed under `params` on a Full-Chip schedule;
/// every layer of the model takes its kind's compute. Throws what build_workload throws.
ModelLayerCosts layer_costs(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                            const workload::MoeRouting& moe, const wafer::WaferParams& wafer, const cost::CostParams& params);

}  // namespace wavel::deploy
