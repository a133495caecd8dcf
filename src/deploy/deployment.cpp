// Deployments beyond one wafer; see deployment.hpp.
#include "wavel/deploy/deployment.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "wavel/common/error.hpp"

namespace wavel::deploy {

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
