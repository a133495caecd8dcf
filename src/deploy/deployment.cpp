// Deployments beyond one wafer; see deployment.hpp.
#include "wavel/deploy/deployment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "wavel/common/error.hpp"

namespace wavel::deploy {

ClusterParams cluster_preset(const std::string& name) {
  ClusterParams c;
  c.preset = name;
  // CS-2 and CS-3 systems each carry 12 x 100 GbE (1.2 Tb/s = 150e9 B/s); MemoryX feeds weights
  // through the same I/O. Latency: no vendor figure; 5 us is a switched-Ethernet hop, bounded above.
  c.link_bytes_per_s = 150e9;
  c.ingress_bytes_per_s = 150e9;
  c.link_latency_s = 5e-6;
  if (name == "cs3") {
    c.external_memory_bytes = 1.2e15;  // largest MemoryX option offered with CS-3
  } else if (name == "cs2") {
    c.external_memory_bytes = 2.4e15;  // MemoryX for CS-2, up to 2.4 PB
  } else {
    throw InputDataError("unknown cluster preset '" + name + "' (known: cs2, cs3)");
  }
  return c;
}

std::vector<std::string> cluster_preset_names() { return {"cs2", "cs3"}; }

LayerSplit split_layers(std::int64_t decoder_layers, std::int64_t wafers, const StageTime& stage_time) {
  if (wafers < 1 || decoder_layers < wafers) {
    throw InputDataError("cannot split " + std::to_string(decoder_layers) + " decoder layers over " +
                         std::to_string(wafers) + " wafers (each needs at least one)");
  }
  // Each (count, embedding, head) is costed once: a stage time may be a search.
  std::map<std::tuple<std::int64_t, bool, bool>, double> asked;
  const auto time = [&](std::int64_t layers, bool embedding, bool head) {
    const auto key = std::make_tuple(layers, embedding, head);
    const auto found = asked.find(key);
    if (found != asked.end()) return found->second;
    return asked[key] = stage_time(layers, embedding, head);
  };
  // best[w][n]: the first w stages holding n layers, as (slowest stage, sum); choice[w][n] the
  // layers of stage w-1.
  using Score = std::pair<double, double>;
  const Score none{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  const auto W = static_cast<std::size_t>(wafers);
  const auto L = static_cast<std::size_t>(decoder_layers);
  std::vector<std::vector<Score>> best(W + 1, std::vector<Score>(L + 1, none));
  std::vector<std::vector<std::int64_t>> choice(W + 1, std::vector<std::int64_t>(L + 1, 0));
  best[0][0] = {0.0, 0.0};
  for (std::size_t w = 1; w <= W; ++w) {
    const bool embedding = w == 1;
    const bool head = w == W;
    // The later stages need one layer each; the last stage takes all that is left.
    const std::size_t lo = w, hi = L - (W - w);
    for (std::size_t n = lo; n <= hi; ++n) {
      if (head && n != L) continue;
      for (std::size_t k = 1; k + (w - 1) <= n; ++k) {
        const Score& before = best[w - 1][n - k];
        if (!std::isfinite(before.first)) continue;
        const double t = time(static_cast<std::int64_t>(k), embedding, head);
        const Score s{std::max(before.first, t), before.second + t};
        if (s < best[w][n]) {
          best[w][n] = s;
          choice[w][n] = static_cast<std::int64_t>(k);
        }
      }
    }
  }
  LayerSplit out;
  out.layers.resize(W);
  for (std::size_t w = W, n = L; w >= 1; --w) {
    out.layers[w - 1] = choice[w][n];
    n -= static_cast<std::size_t>(choice[w][n]);
  }
  for (std::size_t w = 0; w < W; ++w) out.stage_s.push_back(time(out.layers[w], w == 0, w + 1 == W));
  out.bottleneck_s = best[W][L].first;
  out.sum_s = best[W][L].second;
  return out;
}

double weight_streaming_step_s(const std::vector<StreamedLayer>& layers, double ingress_bytes_per_s) {
  if (layers.empty()) return 0.0;
  if (!(ingress_bytes_per_s > 0)) throw InternalError("weight streaming with no ingress bandwidth");
  const auto load = [&](std::size_t i) { return layers[i].weight_bytes / ingress_bytes_per_s; };
  double step = load(0);
  for (std::size_t i = 0; i + 1 < layers.size(); ++i) step += std::max(layers[i].compute_s, load(i + 1));
  return step + layers.back().compute_s;
}

double weight_streaming_sram_bytes(const std::vector<StreamedLayer>& layers, double resident_bytes) {
  double largest = 0;
  for (const auto& l : layers) largest = std::max(largest, l.weight_bytes);
  return resident_bytes + 2.0 * largest;
}

}  // namespace wavel::deploy
