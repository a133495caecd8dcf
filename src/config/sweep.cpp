// Sweep expansion: a fixed axis order keeps setting ids stable for a given config.
#include "wavel/config/sweep.hpp"

#include <algorithm>

#include "wavel/common/error.hpp"

namespace wavel::config {

std::vector<Setting> expand_sweep(const Config& config) {
  const auto& a = config.workloads;
  std::vector<Setting> settings;
  // (input, output) pairs: the listed ones, or the product of the two axes.
  std::vector<std::pair<std::int64_t, std::int64_t>> lengths = a.lengths;
  if (lengths.empty()) {
    for (auto input : a.input_tokens) {
      for (auto output : a.output_tokens) lengths.emplace_back(input, output);
    }
  }
  // Prefill never reads the output length: one setting per distinct input length, output 0.
  std::vector<std::pair<std::int64_t, std::int64_t>> prefill_lengths;
  for (const auto& [input, output] : lengths) {
    const std::pair<std::int64_t, std::int64_t> p{input, 0};
    if (std::find(prefill_lengths.begin(), prefill_lengths.end(), p) == prefill_lengths.end()) {
      prefill_lengths.push_back(p);
    }
  }
  settings.reserve(a.models.size() * a.phases.size() * a.concurrent_requests.size() * lengths.size());
  const std::size_t points = std::max<std::size_t>(1, config.hardware.size());
  const auto add = [&](std::size_t model, const workload::WorkloadShape& shape, std::int64_t wafers, std::size_t hw) {
    Setting s;
    s.id = static_cast<std::int64_t>(settings.size());
    s.model_index = model;
    s.shape = shape;
    s.wafers = wafers;
    s.hardware = hw;
    settings.push_back(s);
  };
  if (!a.cases.empty()) {
    // Listed settings, on every hardware point.
    for (std::size_t hw = 0; hw < points; ++hw) {
      for (const auto& c : a.cases) add(c.model_index, c.shape, c.wafers, hw);
    }
    return settings;
  }
  for (std::size_t m = 0; m < a.models.size(); ++m) {
    for (std::size_t hw = 0; hw < points; ++hw) {
      for (const std::int64_t wafers : config.cluster.wafers) {
        // cluster.max_wafers searches each model up to one decoder layer per wafer.
        if (config.cluster.max_wafers > 0 && wafers > a.models[m].spec.num_layers) continue;
        for (auto phase : a.phases) {
          for (auto requests : a.concurrent_requests) {
            for (const auto& [input, output] : phase == workload::Phase::prefill ? prefill_lengths : lengths) {
              add(m, workload::WorkloadShape{phase, requests, input, output}, wafers, hw);
            }
          }
        }
      }
    }
  }
  return settings;
}

std::vector<Setting> sweep_slice(const std::vector<Setting>& settings, std::int64_t index, std::int64_t count) {
  if (count < 1 || index < 0 || index >= count) {
    throw UsageError("--sweep-index " + std::to_string(index) + " is not in [0, " + std::to_string(count) + ")");
  }
  const auto n = static_cast<std::int64_t>(settings.size());
  return std::vector<Setting>(settings.begin() + index * n / count, settings.begin() + (index + 1) * n / count);
}

std::string setting_label(const Config& config, const Setting& s) {
  return config.workloads.models.at(s.model_index).spec.name + " " + std::string(workload::to_string(s.shape.phase)) +
         " r" + std::to_string(s.shape.concurrent_requests) + " in" + std::to_string(s.shape.input_tokens) + " out" +
         std::to_string(s.shape.output_tokens) + (s.wafers > 1 ? " w" + std::to_string(s.wafers) : "") +
         (config.hardware.size() > 1 ? " [" + config.hardware.at(s.hardware).label + "]" : "");
}

}  // namespace wavel::config
