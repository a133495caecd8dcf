// Model-versus-simulator agreement statistics and the named physical differences behind a miss.
#include "wavel/compare/sim_agreement.hpp"

#include "wavel/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>

namespace wavel::driver {

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (n < 2) return std::nan("");
  auto ranks = [n](const std::vector<double>& v) {
    std::vector<std::size_t> order(n);
    for (std::size_t i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return v[i] < v[j]; });
    std::vector<double> r(n);
    for (std::size_t i = 0; i < n;) {
      std::size_t j = i;
      while (j + 1 < n && v[order[j + 1]] == v[order[i]]) ++j;
      for (std::size_t k = i; k <= j; ++k) r[order[k]] = (static_cast<double>(i + j) / 2.0) + 1.0;
      i = j + 1;
    }
    return r;
  };
  const auto ra = ranks(a), rb = ranks(b);
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    ma += ra[i];
    mb += rb[i];
  }
  ma /= static_cast<double>(n);
  mb /= static_cast<double>(n);
  double cov = 0, va = 0, vb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  return va > 0 && vb > 0 ? cov / std::sqrt(va * vb) : std::nan("");
}

double mape_pct(const std::vector<double>& model, const std::vector<double>& sim) {
  std::vector<double> predicted, reference;
  for (std::size_t i = 0; i < std::min(model.size(), sim.size()); ++i) {
    if (!(sim[i] > 0)) continue;
    predicted.push_back(model[i]);
    reference.push_back(sim[i]);
  }
  return calibrate::mape_pct(predicted, reference);
}

Agreement agreement(const std::string& scope, const std::string& kernel, const std::vector<double>& model,
                    const std::vector<double>& sim) {
  Agreement a;
  a.scope = scope;
  a.kernel = kernel;
  a.pairs = std::min(model.size(), sim.size());
  a.mape_pct = mape_pct(model, sim);
  a.spearman = spearman(model, sim);
  const bool rank_ok = std::isnan(a.spearman) || a.spearman >= kTargetSpearman;
  a.meets_targets = !std::isnan(a.mape_pct) && a.mape_pct <= kTargetMapePct && rank_ok;
  if (!a.meets_targets) a.differs = physics_that_differ(kernel);
  return a;
}

std::string physics_that_differ(const std::string& kernel) {
  if (kernel == "meshgemv") {
    return "local GEMV: the simulator times k vector FMACs over the tile's outputs with its own setup per vector "
           "op, the model WaferLLM's loop with the kernel-fitted issue cost; allreduce: the simulator's streamed K-tree serialises two streams "
           "on each root's ramp and pays a stream latency per stage, the model beta per stage and one fan-in factor; "
           "attention: the simulator multicasts K/V and reduces each head segment as its own tree";
  }
  if (kernel == "allreduce") {
    return "scalar reductions: the simulator splits the local work over the rounds and wakes a task per round, "
           "streams FP32 sums with ramp serialisation at the roots; the model adds beta per stage per round";
  }
  if (kernel == "meshgemm" || kernel == "gemm_t") {
    return "Cannon steps: the simulator wakes a task per step (task_launch) and overlaps the two-hop shifts of both "
           "tiles with the vector loops, serialising both tiles on each PE's ramps and contending on folded links; "
           "both run WaferLLM's loop (vectors along the tokens), the model with the per-step and per-k-iteration "
           "costs measured on hardware, the simulator with its own, lower task and scalar-instruction constants";
  }
  if (kernel == "elementwise") {
    return "elementwise: both run the op's vector instruction mix at each form's width or SRAM ports; the simulator "
           "rounds each instruction up to whole issues and adds a setup per row, the model has neither; both add "
           "the op's scalar loop";
  }
  if (kernel == "kv_shift") {
    return "KV shift: the simulator queues every row's message on the ramps and links it shares; the model pays "
           "the measured store-and-forward shift (a task and DSD set-up per hop, one cycle per FP16 element)";
  }
  if (kernel == "relayout") {
    return "relayout: the simulator sends every PE's tile to its mirror in the row, so half the data crosses the "
           "middle links; the model moves half the bytes over min(w, h) lanes";
  }
  if (kernel == "allgather") {
    return "allgather: both chain each line's pieces into its centre and multicast the slice back; the model "
           "adds one stage and a collective's call (gemv_fixed_cycles) and carries two FP16 elements per "
           "wavelet, the simulator launches the kernel and queues one wavelet per element on the centre's ramp";
  }
  if (kernel == "lookup") return "lookup: per-lane messages over half the region's perimeter, not the full perimeter";
  if (kernel == "moe_dispatch" || kernel == "moe_combine") {
    return "movers: under an expert CUT both run an all-to-all along the rectangle's lines; the simulator streams "
           "each piece outside the strip to the strip's edge PE as one wavelet per FP16 element and queues the "
           "pieces on the edge PE's ramp, the model takes the bytes over the strip's edges at two FP16 elements "
           "per wavelet; between separate regions as for transfers";
  }
  if (kernel == "transfer") {
    return "movers: the simulator's lanes are the rows or columns both regions span along the way they move, and "
           "movers of one step contend only when they leave or enter a region the same way; the model uses the "
           "narrowest side of either region and sums the bytes of all movers sharing a region";
  }
  return "schedule: the simulator runs micro-batches through the stages as a pipeline with first-come stage "
         "allocation and its own colour-switch rule (any K-tree kernel changing axis), the model a closed form; "
         "per-op differences above add up";
}

}  // namespace wavel::driver
