// Deployments beyond one wafer (the systems around a wafer are wafer/cluster.hpp's): the exact split of decoder layers into contiguous stages (pipeline.hpp uses it), and weight streaming's
// step. A pipeline's timing is the cost model's, on its joined MeshIR schedule.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/cluster.hpp"

namespace wavel::deploy {

/// Seconds one wafer takes per micro-batch for `layers` decoder layers, with the embedding (the
/// first wafer) and/or the LM head (the last). Decoder layers are alike, so only the count matters.
using StageTime = std::function<double(std::int64_t layers, bool embedding, bool head)>;

/// Decoder layers per wafer, in pipeline order, and the stage times they give.
struct LayerSplit {
  std::vector<std::int64_t> layers;
  std::vector<double> stage_s;
  double bottleneck_s = 0;  ///< the slowest stage
  double sum_s = 0;         ///< all stages, one after another
};

/// Splits `decoder_layers` into `wafers` contiguous stages of at least one layer each, minimising
/// the slowest stage and then the sum (exact: dynamic programming over the counts, each count's time
/// asked once). Throws wavel::InputDataError if there are fewer layers than wafers.
LayerSplit split_layers(std::int64_t decoder_layers, std::int64_t wafers, const StageTime& stage_time);

/// One layer streamed in: its weights and the compute it runs on resident activations.
struct StreamedLayer {
  double weight_bytes = 0;
  double compute_s = 0;
};

/// Weight streaming (Lie et al., "Cerebras Architecture Deep Dive", Hot Chips 34, 2022): the layers'
/// weights arrive from external memory one layer after another into a double buffer while the
/// activations stay on the wafer, so each layer's compute overlaps the next layer's weights. One
/// step: the first layer's weights, then per layer the longer of its compute and the next one's
/// weights, then the last layer's compute.
double weight_streaming_step_s(const std::vector<StreamedLayer>& layers, double ingress_bytes_per_s);

/// SRAM weight streaming needs on the wafer: resident activations and KV cache plus two of the
/// largest layer's weights (the double buffer).
double weight_streaming_sram_bytes(const std::vector<StreamedLayer>& layers, double resident_bytes);

}  // namespace wavel::deploy
