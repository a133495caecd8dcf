// Deployments beyond one wafer (issue 23 groundwork): the layer split, the link crossing, the
// pipeline over wafers and weight streaming, each against a value derived by hand.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/deploy/deployment.hpp"
#include "wavel/deploy/weight_streaming.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/model.hpp"
#include "wavel/workload/workload.hpp"

using namespace wavel;

namespace {

// 1 ms per decoder layer; the embedding adds 0.5 ms to the first wafer, the LM head 2 ms to the last.
double hand_stage_s(std::int64_t layers, bool embedding, bool head) {
  return 1e-3 * static_cast<double>(layers) + (embedding ? 0.5e-3 : 0.0) + (head ? 2e-3 : 0.0);
}

}  // namespace

TEST_CASE("the layer split balances the slowest stage, not the layer counts") {
  // Splits of 4 layers: (1,3) 1.5 | 5 ms; (2,2) 2.5 | 4 ms; (3,1) 3.5 | 3 ms. The last is the most
  // balanced (slowest stage 3.5 ms), though the layer counts are not equal.
  const deploy::LayerSplit split = deploy::split_layers(4, 2, hand_stage_s);
  REQUIRE(split.layers == std::vector<std::int64_t>{3, 1});
  CHECK(split.stage_s[0] == doctest::Approx(3.5e-3));
  CHECK(split.stage_s[1] == doctest::Approx(3e-3));
  CHECK(split.bottleneck_s == doctest::Approx(3.5e-3));
  CHECK(split.sum_s == doctest::Approx(6.5e-3));

  // One wafer: no link at all, whatever the link costs.
  const deploy::LayerSplit whole = deploy::split_layers(4, 1, hand_stage_s);
  CHECK(whole.layers == std::vector<std::int64_t>{4});
  CHECK(whole.bottleneck_s == doctest::Approx(6.5e-3));
}

TEST_CASE("the layer split is the exhaustive optimum, and asks each stage time once") {
  // Stage times that are not monotone in the layers (a schedule may fit 6 layers better than 5).
  std::int64_t calls = 0;
  const deploy::StageTime odd = [&](std::int64_t layers, bool embedding, bool head) {
    ++calls;
    const double wobble = static_cast<double>((layers * 7919 + (embedding ? 13 : 0) + (head ? 29 : 0)) % 11);
    return static_cast<double>(layers) + 0.37 * wobble;
  };
  for (const std::int64_t wafers : {1, 2, 3, 4}) {
    const std::int64_t L = 10;
    calls = 0;
    const auto split = deploy::split_layers(L, wafers, odd);
    // Each (layers, embedding, head) at most once.
    CHECK(calls <= 3 * L + L);
    // Exhaustive: every composition of L into `wafers` positive parts.
    std::pair<double, double> best{std::numeric_limits<double>::infinity(), 0};
    std::vector<std::int64_t> parts(static_cast<std::size_t>(wafers), 1);
    const std::function<void(std::size_t, std::int64_t)> walk = [&](std::size_t w, std::int64_t left) {
      if (w + 1 == parts.size()) {
        parts[w] = left;
        double worst = 0, sum = 0;
        for (std::size_t i = 0; i < parts.size(); ++i) {
          const double t = odd(parts[i], i == 0, i + 1 == parts.size());
          worst = std::max(worst, t);
          sum += t;
        }
        best = std::min(best, std::make_pair(worst, sum));
        return;
      }
      for (std::int64_t k = 1; k <= left - static_cast<std::int64_t>(parts.size() - w - 1); ++k) {
        parts[w] = k;
        walk(w + 1, left - k);
      }
    };
    walk(0, L);
    CHECK(split.bottleneck_s == doctest::Approx(best.first));
    CHECK(split.sum_s == doctest::Approx(best.second));
    std::int64_t total = 0;
    for (const auto k : split.layers) {
      CHECK(k >= 1);
      total += k;
    }
    CHECK(total == L);
  }
  CHECK_THROWS_AS(deploy::split_layers(3, 4, hand_stage_s), InputDataError);
}

TEST_CASE("weight streaming overlaps each layer's compute with the next layer's weights") {
  // Loads at 150 GB/s: 1, 2 and 1 ms; compute 1.5, 0.5 and 3 ms.
  // Step = 1 + max(1.5, 2) + max(0.5, 1) + 3 = 7 ms.
  const std::vector<deploy::StreamedLayer> layers{{150e6, 1.5e-3}, {300e6, 0.5e-3}, {150e6, 3e-3}};
  CHECK(deploy::weight_streaming_step_s(layers, 150e9) == doctest::Approx(7e-3));
  // Twice the ingress: 0.5 + 1.5 + 0.5 + 3 = 5.5 ms (now compute-bound but for the first load).
  CHECK(deploy::weight_streaming_step_s(layers, 300e9) == doctest::Approx(5.5e-3));
  // On the wafer: resident bytes and two buffers of the largest layer.
  CHECK(deploy::weight_streaming_sram_bytes(layers, 1e9) == doctest::Approx(1.6e9));
  CHECK(deploy::weight_streaming_step_s({}, 150e9) == 0.0);
}

TEST_CASE("cluster presets carry the systems' I/O; unknown names are refused") {
  const auto cs3 = wafer::cluster_preset("cs3");
  CHECK(cs3.link_bytes_per_s == 150e9);  // 12 x 100 GbE
  CHECK(cs3.link_latency_s >= wafer::kMinLinkLatencyS);
  CHECK(cs3.link_latency_s <= wafer::kMaxLinkLatencyS);
  CHECK(wafer::cluster_preset("cs2").ingress_bytes_per_s == 150e9);
  CHECK_THROWS_AS(wafer::cluster_preset("cs9"), InputDataError);
}

TEST_CASE("weight streaming of a whole model: load-bound decode, compute-bound prefill, refusals with reasons") {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  const auto model = *workload::find_model_preset("llama3-8b");
  const auto cs3 = wafer::cluster_preset("cs3");
  const workload::WorkloadShape decode{workload::Phase::decode, 1, 2048, 128};
  const double weights_bytes = static_cast<double>(workload::build_workload(model, decode).param_bytes);

  // Decode streams all 16 GB of weights per token; its compute hides under the loads but for the
  // LM head's, after the last load: the step is the weights over 150 GB/s, within 1 %.
  const auto d = deploy::weight_streaming(model, decode, workload::MoeRouting{}, wafer, params, cs3);
  REQUIRE(d.placed);
  CHECK(d.latency_s >= weights_bytes / 150e9);
  CHECK(d.latency_s <= 1.01 * weights_bytes / 150e9);
  CHECK(d.tokens_per_s == doctest::Approx(1.0 / d.latency_s));
  // Twice the ingress halves a load-bound step.
  auto fast = cs3;
  fast.ingress_bytes_per_s *= 2;
  CHECK(deploy::weight_streaming(model, decode, workload::MoeRouting{}, wafer, params, fast).latency_s ==
        doctest::Approx(d.latency_s / 2).epsilon(0.01));

  // A long prompt batch is compute-bound per layer: twice the ingress saves only the first load.
  const workload::WorkloadShape prefill{workload::Phase::prefill, 2, 4096, 128};
  const auto p = deploy::weight_streaming(model, prefill, workload::MoeRouting{}, wafer, params, cs3);
  REQUIRE(p.placed);
  const auto p_fast = deploy::weight_streaming(model, prefill, workload::MoeRouting{}, wafer, params, fast);
  const double first_load_s = static_cast<double>(workload::build_workload(model, prefill).layers.front().param_bytes) / 150e9;
  CHECK(p.latency_s - p_fast.latency_s == doctest::Approx(first_load_s / 2).epsilon(0.01));
  CHECK(p.tokens_per_s == doctest::Approx(2.0 * 4096 / p.latency_s));

  // Weights beyond the external memory, and a KV cache beyond the wafer's SRAM, are refused.
  auto small = cs3;
  small.external_memory_bytes = 1e9;
  const auto no_memory = deploy::weight_streaming(model, decode, workload::MoeRouting{}, wafer, params, small);
  CHECK_FALSE(no_memory.placed);
  CHECK(no_memory.na_reason.find("external memory") != std::string::npos);
  const workload::WorkloadShape huge{workload::Phase::decode, 4096, 8192, 128};
  const auto no_sram = deploy::weight_streaming(model, huge, workload::MoeRouting{}, wafer, params, cs3);
  CHECK_FALSE(no_sram.placed);
  CHECK(no_sram.na_reason.find("SRAM") != std::string::npos);
  CHECK(no_sram.sram_required_bytes > static_cast<double>(wafer.total_sram_bytes()));
  // An MoE model with a leading dense layer streams every layer's own weights: its load-bound
  // decode step is all its weights over the ingress, not its dense layer's repeated.
  const auto moe = *workload::find_model_preset("deepseek-v2-lite");
  REQUIRE(moe.moe.has_value());
  REQUIRE(moe.moe->first_dense_layers == 1);
  const auto moe_step = deploy::weight_streaming(moe, decode, workload::MoeRouting{}, wafer, params, cs3);
  REQUIRE(moe_step.placed);
  const double moe_weights_bytes = static_cast<double>(workload::build_workload(moe, decode).param_bytes);
  CHECK(moe_step.latency_s >= moe_weights_bytes / 150e9);
  CHECK(moe_step.latency_s <= 1.01 * moe_weights_bytes / 150e9);
  // A shape no schedule can be built for makes this deployment n/a, with the reason, not the run fail.
  const auto unbuildable = deploy::weight_streaming(model, {workload::Phase::prefill, 1, 0, 128}, workload::MoeRouting{}, wafer, params, cs3);
  CHECK_FALSE(unbuildable.placed);
  CHECK(unbuildable.na_reason.rfind("cannot be built: ", 0) == 0);
}
