// Deployments beyond one wafer: the systems around a wafer (links, external weight memory), the
// exact split of decoder layers into contiguous stages (pipeline.hpp uses it), and weight streaming's
// step. A pipeline's timing is the cost model's, on its joined MeshIR schedule.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"

namespace wavel::deploy {

/// What joins the systems of a cluster and feeds them weights.
struct ClusterParams {
  std::string preset;                    ///< "cs2", "cs3" or "" (given by hand)
  double link_bytes_per_s = 0;           ///< one system's I/O, each direction
  double link_latency_s = 0;             ///< one crossing between systems (no vendor figure: a bounded parameter)
  double external_memory_bytes = 0;      ///< weight store outside the wafer (MemoryX-like)
  double ingress_bytes_per_s = 0;        ///< weights from that store into one wafer
  std::vector<std::int64_t> wafers{1};   ///< systems per deployment: a sweep axis (1: one wafer)
  /// >0: the wafer count is searched, every count from 1 to this (each model up to its decoder
  /// layers), and each problem's fewest, fastest and most efficient count is reported.
  std::int64_t max_wafers = 0;
  double target_tpr_tokens_per_s = 0;    ///< >0: decode tokens/s per user (1 / TPOT) a deployment must reach
  double target_ttft_s = 0;              ///< >0: the TTFT a prefill deployment must stay within
  meshir::Edge io_edge = meshir::Edge::west;  ///< where each wafer's I/O enters its mesh (unpublished: a parameter)
};

/// The most systems one pipeline may span.
constexpr std::int64_t kMaxWafers = 64;

/// Bounds of the link latency a config may give (s).
constexpr double kMinLinkLatencyS = 1e-7;
constexpr double kMaxLinkLatencyS = 1e-3;

/// The presets (docs/config.md, cluster): 12 x 100 GbE per system (1.2 Tb/s = 150 GB/s) for CS-2 and CS-3,
/// weights streamed in through the same I/O; latency 5 us by default. Throws wavel::InputDataError
/// for an unknown name.
ClusterParams cluster_preset(const std::string& name);
/// Names of the cluster presets, in a stable order.
std::vector<std::string> cluster_preset_names();

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
