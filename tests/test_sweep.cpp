// Sweep expansion: size, numbering and axis order.
#include <doctest/doctest.h>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"

TEST_CASE("the sweep is the cartesian product, last axis fastest") {
  const auto c = wavel::config::parse_config(
      "workloads:\n"
      "  models: [llama3-8b, llama2-13b]\n"
      "  phases: [prefill, decode]\n"
      "  concurrent_requests: [1, 4, 16]\n"
      "  input_tokens: 2048\n"
      "  output_tokens: [128, 2048]\n",
      "s.yaml", {});
  const auto settings = wavel::config::expand_sweep(c);
  // Per model: prefill ignores the output length (3 requests x 1 input), decode does not (3 x 1 x 2).
  REQUIRE(settings.size() == 2 * (3 + 3 * 2));
  for (std::size_t i = 0; i < settings.size(); ++i) CHECK(settings[i].id == static_cast<std::int64_t>(i));
  CHECK(settings[0].model_index == 0);
  CHECK(settings[0].shape.phase == wavel::workload::Phase::prefill);
  CHECK(settings[0].shape.output_tokens == 0);
  CHECK(settings[1].shape.concurrent_requests == 4);
  CHECK(settings[3].shape.phase == wavel::workload::Phase::decode);
  CHECK(settings[4].shape.output_tokens == 2048);
  CHECK(settings[5].shape.concurrent_requests == 4);
  CHECK(settings[9].model_index == 1);
  CHECK(wavel::config::setting_label(c, settings[9]) == "llama2-13b prefill r1 in2048 out0");
  CHECK(wavel::config::setting_label(c, settings[15]) == "llama2-13b decode r4 in2048 out2048");
}

TEST_CASE("a single-valued sweep has one setting") {
  const auto c = wavel::config::parse_config("workloads: {models: llama3-8b, phases: decode}\n", "s.yaml", {});
  CHECK(wavel::config::expand_sweep(c).size() == 1);
}
