// Cost of the per-setting front end: config validation and op-graph construction.
#include <benchmark/benchmark.h>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/workload/workload.hpp"

namespace {

void BM_BuildWorkload(benchmark::State& state, const char* model_name, wavel::workload::Phase phase) {
  const auto model = *wavel::workload::find_model_preset(model_name);
  const wavel::workload::WorkloadShape shape{phase, 16, 2048, 128};
  std::int64_t ops = 0;
  for (auto _ : state) {
    auto w = wavel::workload::build_workload(model, shape);
    for (const auto& layer : w.layers) ops += static_cast<std::int64_t>(layer.ops.size());
    benchmark::DoNotOptimize(w.flops);
  }
  state.counters["ops_per_s"] = benchmark::Counter(static_cast<double>(ops), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_BuildWorkload, llama3_8b_decode, "llama3-8b", wavel::workload::Phase::decode);
BENCHMARK_CAPTURE(BM_BuildWorkload, qwen2_72b_prefill, "qwen2-72b", wavel::workload::Phase::prefill);
BENCHMARK_CAPTURE(BM_BuildWorkload, qwen3_30b_a3b_decode, "qwen3-30b-a3b", wavel::workload::Phase::decode);

void BM_ParseConfig(benchmark::State& state) {
  const std::string text =
      "wafer: {preset: wse3}\n"
      "workloads:\n"
      "  models: [llama3-8b, llama2-13b, mixtral-8x7b]\n"
      "  phases: [prefill, decode]\n"
      "  concurrent_requests: [1, 4, 16, 64]\n"
      "  input_tokens: [2048, 4096]\n"
      "  output_tokens: [128, 2048]\n";
  for (auto _ : state) {
    auto config = wavel::config::parse_config(text, "bench.yaml", {"search.seed=7"});
    benchmark::DoNotOptimize(wavel::config::expand_sweep(config).size());
  }
}
BENCHMARK(BM_ParseConfig);

}  // namespace

BENCHMARK_MAIN();
