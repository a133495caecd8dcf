// Simulator throughput at message granularity: events and wavelet-hops per second (one core) on a
// 64x64 nearest-neighbour shift and on a 256x256 K-tree allreduce, whole regions simulated; and the
// time to simulate one sampled LLaMA-3-8B decode layer on the whole WSE-3 grid.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "wavel/baselines/baselines.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/workload/workload.hpp"
#include "wavel/sim/simulate.hpp"
#include "wavel/wafer/wafer.hpp"

namespace {

using wavel::meshir::Kernel;

wavel::meshir::Schedule one_op(std::int64_t side, Kernel kernel) {
  wavel::meshir::Schedule s;
  s.name = "bench";
  s.grid_w_pes = side;
  s.grid_h_pes = side;
  s.sram_per_pe_bytes = 49152;
  s.colours = 24;
  s.regions = {wavel::meshir::Rect{0, 0, side, side}};
  wavel::meshir::PlacedOp op;
  op.name = "op";
  op.kernel = kernel;
  op.used = s.regions[0];
  s.ops = {op};
  return s;
}

// Simulates op 0 of `s` over its whole region, once per iteration (network build included).
void run(benchmark::State& state, const wavel::meshir::Schedule& s) {
  const auto wafer = *wavel::wafer::find_wafer_preset("wse3");
  wavel::sim::SimOptions options;
  options.full_region_when_small = true;
  options.full_region_max_pes = s.regions[0].pes();
  double events = 0, hops = 0, messages = 0, cycles = 0;
  for (auto _ : state) {
    const auto r = wavel::sim::simulate_op(s, 0, wafer, options);
    events += static_cast<double>(r.events);
    hops += static_cast<double>(r.wavelet_hops);
    messages += static_cast<double>(r.messages);
    cycles = r.cycles;
  }
  using benchmark::Counter;
  state.counters["events_per_s"] = Counter(events, Counter::kIsRate);
  state.counters["wavelet_hops_per_s"] = Counter(hops, Counter::kIsRate);
  state.counters["messages_per_s"] = Counter(messages, Counter::kIsRate);
  state.counters["events"] = Counter(events, Counter::kAvgIterations);
  state.counters["wavelet_hops"] = Counter(hops, Counter::kAvgIterations);
  state.counters["simulated_cycles"] = cycles;
}

// Every PE of a 64x64 region passes state.range(0) bytes one hop up (the shift-based KV cache).
void BM_NeighbourShift64(benchmark::State& state) {
  auto s = one_op(64, Kernel::kv_shift);
  s.ops[0].work.output_bytes = state.range(0) * 64 * 64;
  run(state, s);
}
BENCHMARK(BM_NeighbourShift64)->Arg(4)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// Op 0's two phases apart, in ns per PE of its region: building the network (the plan, each PE's
// tasks and messages, their edges) and running it.
void run_phases(benchmark::State& state, const wavel::meshir::Schedule& s) {
  const auto wafer = *wavel::wafer::find_wafer_preset("wse3");
  const auto micro = wavel::sim::microarch_for(wafer);
  wavel::sim::PlanOptions plan_options;
  plan_options.full_region = true;
  const wavel::sim::SimOptions options;
  using Clock = std::chrono::steady_clock;
  double build_s = 0, run_s = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    const auto plan = wavel::sim::plan_kernel(s, s.ops[0], micro, plan_options);
    wavel::sim::Network net(wavel::sim::network_config(plan, micro, options));
    const auto build = wavel::sim::build_kernel(net, plan);
    const auto t1 = Clock::now();
    net.run();
    benchmark::DoNotOptimize(net.finish_cycles(build.done));
    build_s += std::chrono::duration<double>(t1 - t0).count();
    run_s += std::chrono::duration<double>(Clock::now() - t1).count();
  }
  const double per_pe = 1e9 / (static_cast<double>(s.regions[0].pes()) * static_cast<double>(state.iterations()));
  state.counters["build_ns_per_pe"] = build_s * per_pe;
  state.counters["run_ns_per_pe"] = run_s * per_pe;
}

// The 4-byte shift: a 4-byte message is one wavelet-hop, so the two phases add up to the cost of one
// wavelet-hop in BM_NeighbourShift64/4.
void BM_NeighbourShift64Phases(benchmark::State& state) {
  auto s = one_op(64, Kernel::kv_shift);
  s.ops[0].work.output_bytes = 4 * 64 * 64;
  run_phases(state, s);
}
BENCHMARK(BM_NeighbourShift64Phases)->Unit(benchmark::kMillisecond);

// Scalar allreduce along x on 256x256 (256 K-tree lines of 256 PEs, groups of 16, broadcast back):
// messages of state.range(0) bytes (FP32 partial sums of range / 4 rows per PE).
wavel::meshir::Schedule allreduce256(std::int64_t bytes) {
  auto s = one_op(256, Kernel::allreduce);
  auto& op = s.ops[0];
  op.reduce_axis = wavel::meshir::Axis::x;
  op.group = 16;
  op.work.m = 256 * (bytes / 4);
  op.work.flops = 256 * 256;
  return s;
}
void BM_Allreduce256(benchmark::State& state) { run(state, allreduce256(state.range(0))); }
BENCHMARK(BM_Allreduce256)->Arg(4)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

// The 4-byte allreduce's build and run apart, in ns per PE.
void BM_Allreduce256Phases(benchmark::State& state) { run_phases(state, allreduce256(4)); }
BENCHMARK(BM_Allreduce256Phases)->Unit(benchmark::kMillisecond);

// One LLaMA-3-8B decode layer (WaferLLM's op sequence) on the largest square of the WSE-3 grid,
// every op simulated on its sampled lines (no memo), composed into TPOT.
void BM_Llama3DecodeLayerWse3(benchmark::State& state) {
  const auto wafer = *wavel::wafer::find_wafer_preset("wse3");
  const auto w = wavel::workload::build_workload(*wavel::workload::find_model_preset("llama3-8b"),
                                                 {wavel::workload::Phase::decode, 1, 512, 128});
  const std::int64_t side = std::min(wafer.grid_w_pes, wafer.grid_h_pes);
  const auto s = wavel::baselines::build_waferllm_layer_sample(w, wafer, side);
  wavel::sim::SimOptions options;
  options.memoize = false;
  double hops = 0, latency = 0;
  for (auto _ : state) {
    const auto r = wavel::sim::simulate(s, wafer, true, 512, options);
    hops += static_cast<double>(r.wavelet_hops);
    latency = r.latency_s;
  }
  state.counters["ops"] = static_cast<double>(s.ops.size());
  state.counters["side_pes"] = static_cast<double>(side);
  state.counters["wavelet_hops_per_s"] = benchmark::Counter(hops, benchmark::Counter::kIsRate);
  state.counters["tpot_s"] = latency;
}
BENCHMARK(BM_Llama3DecodeLayerWse3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
