// Layer-subset method: which settings run as a subset, how many layers, how costs scale, and the
// (input, output) length pairs of a sweep.
#include <doctest/doctest.h>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/baselines/baselines.hpp"

using namespace wavel;

namespace {

config::Config paper_like(const std::string& extra = "") {
  return config::parse_config("wafer:\n  preset: wse3\nworkloads:\n  models: [llama3-8b, qwen2-72b]\n"
                              "  phases: [decode]\n  concurrent_requests: [1, 64]\n"
                              "  lengths: [[2048, 128], [4096, 4096]]\n" + extra,
                              "subset.yaml", {});
}

}  // namespace

TEST_CASE("lengths pairs replace the product of input and output tokens") {
  const auto c = paper_like();
  const auto settings = config::expand_sweep(c);
  REQUIRE(settings.size() == 2 * 2 * 2);
  CHECK(settings[0].shape.input_tokens == 2048);
  CHECK(settings[0].shape.output_tokens == 128);
  CHECK(settings[1].shape.input_tokens == 4096);
  CHECK(settings[1].shape.output_tokens == 4096);
  CHECK_THROWS_AS(config::parse_config("wafer:\n  preset: wse3\nworkloads:\n  models: [llama3-8b]\n"
                                       "  input_tokens: [128]\n  lengths: [[1, 2]]\n",
                                       "x.yaml", {}),
                  ConfigError);
}

TEST_CASE("a setting that does not fit runs as the largest dividing layer subset that does") {
  const auto c = paper_like();
  const auto settings = config::expand_sweep(c);
  const double budget = 0.9 * static_cast<double>(c.wafer.total_sram_data_bytes());
  for (const auto& s : settings) {
    const auto& model = c.workloads.models.at(s.model_index).spec;
    const auto whole = workload::build_workload(model, s.shape);
    const auto subset = driver::choose_layer_subset(c, s);
    const auto w = driver::setting_workload(c, s);
    const double resident = static_cast<double>(whole.param_bytes + whole.kv_cache_bytes);
    if (resident <= budget) {
      CHECK(subset.layers == 0);
      CHECK(w.layer_scale == 1);
      CHECK(w.model.num_layers == model.num_layers);
      continue;
    }
    REQUIRE(subset.layers > 0);
    CHECK(model.num_layers % subset.layers == 0);
    CHECK(subset.scale * subset.layers == model.num_layers);
    CHECK(w.model.num_layers == subset.layers);
    CHECK(w.layer_scale == subset.scale);
    CHECK(static_cast<double>(w.param_bytes + w.kv_cache_bytes) <= budget);
    // The next larger divisor would not fit: the subset is as large as it can be.
    for (std::int64_t k = subset.layers + 1; k < model.num_layers; ++k) {
      if (model.num_layers % k != 0) continue;
      auto bigger = model;
      bigger.num_layers = k;
      const auto b = workload::build_workload(bigger, s.shape);
      CHECK(static_cast<double>(b.param_bytes + b.kv_cache_bytes) > budget);
      break;
    }
    const auto described = driver::describe_setting(c, s, subset);
    CHECK(described.layer_subset_layers == subset.layers);
    CHECK(described.model_layers == model.num_layers);
    CHECK(described.param_bytes == whole.param_bytes);  // figures of the whole model
  }
  // Qwen2-72B (145 GB of weights) never fits whole; LLaMA-3-8B with one request does.
  CHECK(driver::choose_layer_subset(c, settings[4]).layers > 0);
  CHECK(driver::choose_layer_subset(c, settings[0]).layers == 0);
  // Turned off, every setting runs whole.
  const auto off = paper_like("  layer_subset: false\n");
  for (const auto& s : config::expand_sweep(off)) CHECK(driver::choose_layer_subset(off, s).layers == 0);
}

TEST_CASE("a layer subset scales its decoder layers by the layer ratio and charges embedding and head once") {
  const auto c = paper_like();
  const auto settings = config::expand_sweep(c);
  const auto& s = settings[4];  // qwen2-72b, one request
  const auto w = driver::setting_workload(c, s);
  REQUIRE(w.layer_scale > 1);
  auto schedule = baselines::build_fullchip(w, c.wafer);
  CHECK(schedule.layer_scale == w.layer_scale);
  CHECK(schedule.layers_total == 80);
  const auto scaled = cost::evaluate(schedule, c.wafer, c.cost.params, true, s.shape.input_tokens);
  schedule.layer_scale = 1;
  const auto unscaled = cost::evaluate(schedule, c.wafer, c.cost.params, true, s.shape.input_tokens);
  // Full-Chip runs one op per step on one stage, so a pass is the sum of its ops.
  double once_cycles = 0, repeated_cycles = 0;
  int once_ops = 0;
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    (schedule.ops[i].once ? once_cycles : repeated_cycles) += unscaled.ops[i].total_cycles;
    once_ops += schedule.ops[i].once ? 1 : 0;
  }
  CHECK(once_ops >= 3);  // embedding lookup, final norm, LM head
  CHECK(once_cycles > 0.0);
  const double expected_s = (once_cycles + repeated_cycles * static_cast<double>(w.layer_scale)) / c.wafer.clock_hz;
  CHECK(scaled.latency_s == doctest::Approx(expected_s).epsilon(1e-12));
  CHECK(scaled.latency_s < unscaled.latency_s * static_cast<double>(w.layer_scale));
}
