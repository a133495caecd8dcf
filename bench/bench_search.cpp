// The search's inner loop and a whole search: full-schedule evaluations per second on LLaMA-3-8B
// decode plans (memoized per-block costs, incremental sums), and search wall time on the quickstart.
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

#include "wavel/baselines/baselines.hpp"
#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/search/search.hpp"

namespace {

using namespace wavel;

// Random pipelines of vertical strips over the whole grid, each strip a leaf with random TUNE.
std::vector<std::vector<search::Leaf>> random_plans(const search::PlanEvaluator& ev, const wafer::WaferParams& wafer,
                                                    int count) {
  std::mt19937_64 rng(42);
  std::vector<std::vector<search::Leaf>> plans;
  const int blocks = ev.blocks();
  const int tunes = static_cast<int>(ev.tunes().size());
  for (int p = 0; p < count; ++p) {
    const int leaves = 6 + static_cast<int>(rng() % 15);
    std::vector<search::Leaf> plan;
    const std::int64_t width = wafer.grid_w_pes / leaves;
    for (int l = 0; l < leaves; ++l) {
      search::Leaf leaf;
      leaf.region = meshir::Rect{l * width, 0, l + 1 == leaves ? wafer.grid_w_pes - l * width : width, wafer.grid_h_pes};
      leaf.used_w = leaf.region.w;
      leaf.used_h = rng() % 2 ? leaf.region.h : (leaf.region.h + 1) / 2;
      leaf.tune = static_cast<int>(rng() % static_cast<std::uint64_t>(tunes));
      leaf.first_block = blocks * l / leaves;
      leaf.end_block = blocks * (l + 1) / leaves;
      plan.push_back(leaf);
    }
    plans.push_back(plan);
  }
  return plans;
}

void BM_FullScheduleEvaluation(benchmark::State& state) {
  const auto wafer = *wafer::find_wafer_preset("wse3");
  const auto params = cost::default_params(wafer);
  const auto w = workload::build_workload(*workload::find_model_preset("llama3-8b"),
                                          {workload::Phase::decode, 16, 2048, 128});
  search::PlanEvaluator ev(w, wafer, params, 8);
  const auto plans = random_plans(ev, wafer, 256);
  for (const auto& p : plans) ev.prepare(p);  // memoize per-block costs outside the timed loop
  std::size_t i = 0;
  double sink = 0;
  for (auto _ : state) {
    const auto o = ev.evaluate(plans[i++ % plans.size()]);
    sink += o.tokens_per_s;
  }
  benchmark::DoNotOptimize(sink);
  state.counters["evaluations_per_s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["blocks_per_plan"] = static_cast<double>(ev.blocks());
}
BENCHMARK(BM_FullScheduleEvaluation);

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every setting of configs/quickstart.yaml, one after another on this process (a 2-rank run splits
// them over ranks), baselines included.
void BM_QuickstartSearch(benchmark::State& state) {
  const std::string path = std::string(WAVEL_SOURCE_DIR) + "/configs/quickstart.yaml";
  const auto config = config::parse_config(read(path), path, {});
  const auto settings = config::expand_sweep(config);
  const search::SearchOptions options = config.search.options();
  std::int64_t candidates = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    for (const auto& s : settings) {
      const auto w = workload::build_workload(config.workloads.models[s.model_index].spec, s.shape);
      std::vector<std::pair<std::string, meshir::Schedule>> seeds{{"fullchip", baselines::build_fullchip(w, config.wafer)}};
      if (auto wl = baselines::build_waferllm_tuned(w, config.wafer, config.cost.params)) seeds.emplace_back("waferllm", *wl);
      candidates += search::search_setting(w, config.wafer, config.cost.params, options, seeds).stats.nodes_visited;
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.counters["settings"] = static_cast<double>(settings.size());
  state.counters["partial_schedules_per_s"] = benchmark::Counter(static_cast<double>(candidates), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_QuickstartSearch)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    Kokkos::ScopeGuard guard(argc, argv);
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
      status = 1;
    } else {
      benchmark::RunSpecifiedBenchmarks();
      benchmark::Shutdown();
    }
  }
  MPI_Finalize();
  return status;
}
