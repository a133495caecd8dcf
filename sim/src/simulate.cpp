// Runs one op's sample on a fresh Network, memoises identical ops, and composes the schedule like the cost model.
#include "wavel/sim/simulate.hpp"

#include <algorithm>
#include <map>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/verify.hpp"

namespace wavel::sim {

namespace {

using meshir::Axis;
using meshir::Kernel;
using meshir::PlacedOp;

// Everything the simulated time of an op depends on, as text (movers add their distance and lanes).
std::string memo_key(const meshir::Schedule& schedule, const PlacedOp& op) {
  std::string key;
  auto add = [&](std::int64_t v) {
    key += std::to_string(v);
    key += ',';
  };
  auto add_layout = [&](const meshir::Layout& l) {
    add(static_cast<int>(l.on_x));
    add(static_cast<int>(l.on_y));
    add(l.part_x);
    add(l.part_y);
    add(l.repl_x);
    add(l.repl_y);
    add(l.tile_rows);
    add(l.tile_cols);
  };
  add(static_cast<int>(op.kernel));
  add(op.used.w);
  add(op.used.h);
  add_layout(op.in_layout);
  add_layout(op.out_layout);
  add(static_cast<int>(op.reduce_axis));
  add(op.group);
  add(op.rounds);
  const meshir::OpWork& w = op.work;
  for (std::int64_t v : {w.batch, w.m, w.k, w.n, w.flops, w.weight_bytes, w.input_bytes, w.output_bytes, w.kv_cache_bytes}) {
    add(v);
  }
  if (meshir::moves_between_regions(op.kernel) && op.to_region >= 0 &&
      op.to_region < static_cast<int>(schedule.regions.size())) {
    const meshir::Rect& r = op.used;
    const meshir::Rect& to = schedule.regions[static_cast<std::size_t>(op.to_region)];
    add(std::llabs((2 * r.x + r.w) - (2 * to.x + to.w)));
    add(std::llabs((2 * r.y + r.h) - (2 * to.y + to.h)));
    add(to.w);
    add(to.h);
  } else if (meshir::moves_between_regions(op.kernel)) {
    key += "bad-region";
  }
  return key;
}

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

OpSimResult simulate_op(const meshir::Schedule& schedule, int op_index, const wafer::WaferParams& wafer,
                        const cost::CostParams& params, const SimOptions& options) {
  if (op_index < 0 || op_index >= static_cast<int>(schedule.ops.size())) {
    throw InternalError("sim::simulate_op: op index " + std::to_string(op_index) + " is not an op of the schedule");
  }
  const PlacedOp& op = schedule.ops[static_cast<std::size_t>(op_index)];
  PlanOptions plan_options;
  plan_options.full_region = options.full_region_when_small && op.used.pes() <= options.full_region_max_pes;
  plan_options.max_simulated_steps = options.max_simulated_steps;
  const KernelPlan plan = plan_kernel(schedule, op, wafer, params, plan_options);

  NetworkConfig config;
  config.width_pes = plan.mesh_w_pes;
  config.height_pes = plan.mesh_h_pes;
  config.alpha_cycles_per_hop = params.alpha_cycles_per_hop;
  config.beta_cycles_per_stage = params.beta_cycles_per_stage;
  config.link_bytes_per_cycle = wafer.link_bytes_per_cycle;
  config.routable_colours = wafer.routable_colours;
  config.fidelity = options.fidelity;
  config.packet_wavelets = options.packet_wavelets;
  config.model_ramps = options.model_ramps;
  config.record_spans = options.record_trace;
  Network net(config);
  KernelBuild build;
  try {
    build = build_kernel(net, plan);
  } catch (const DataError& e) {
    std::vector<Diagnostic> named = e.diagnostics();
    for (auto& d : named) {
      d.key_path = "ops." + op.name + "." + d.key_path;
      d.message = "op '" + op.name + "' (" + std::string(meshir::to_string(op.kernel)) + "): " + d.message;
    }
    throw DataError(std::move(named));
  }
  net.run();

  OpSimResult r;
  r.cycles = kernel_cycles(net, build);
  r.total_cycles = r.cycles;
  const NetworkStats& stats = net.stats();
  r.events = stats.events;
  r.messages = stats.messages;
  r.wavelet_hops = stats.wavelet_hops;
  const double steps_factor = static_cast<double>(plan.sample.steps_total) / static_cast<double>(plan.sample.steps_simulated);
  r.represented_messages = static_cast<double>(r.messages) * plan.sample.scale_factor * steps_factor;
  r.represented_wavelet_hops = static_cast<double>(r.wavelet_hops) * plan.sample.scale_factor * steps_factor;
  r.colours_max = net.colours_max();
  r.sample = plan.sample;
  r.mesh_w_pes = plan.mesh_w_pes;
  r.mesh_h_pes = plan.mesh_h_pes;
  if (options.record_trace) {
    for (const Span& s : net.spans()) {
      if (static_cast<std::int64_t>(r.spans.size()) >= options.trace_max_spans) break;
      if (s.pe < options.trace_max_pes) r.spans.push_back(s);
    }
  }
  return r;
}

SimResult simulate(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const cost::CostParams& params,
                   bool decode, std::int64_t prompt_tokens, const SimOptions& options) {
  SimResult out;
  out.ops.reserve(schedule.ops.size());
  std::map<std::string, int> memo;
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const PlacedOp& op = schedule.ops[i];
    const std::string key = options.memoize ? memo_key(schedule, op) : std::string();
    const auto found = options.memoize ? memo.find(key) : memo.end();
    if (found != memo.end()) {
      OpSimResult reused = out.ops[static_cast<std::size_t>(found->second)];
      reused.reused_from = found->second;
      reused.events = 0;
      reused.messages = 0;
      reused.wavelet_hops = 0;
      reused.spans.clear();  // the trace shows them once, on the op simulated
      out.ops.push_back(std::move(reused));
      ++out.ops_reused;
      continue;
    }
    out.ops.push_back(simulate_op(schedule, static_cast<int>(i), wafer, params, options));
    const OpSimResult& r = out.ops.back();
    out.events += r.events;
    out.messages += r.messages;
    out.wavelet_hops += r.wavelet_hops;
    ++out.ops_simulated;
    if (options.memoize) memo.emplace(key, static_cast<int>(i));
  }
  const std::vector<double> switches = cost::route_switch_cycles(schedule, params);
  std::vector<double> totals(schedule.ops.size());
  for (std::size_t i = 0; i < out.ops.size(); ++i) {
    out.ops[i].route_switch_cycles = switches[i];
    out.ops[i].total_cycles = out.ops[i].cycles + switches[i];
    totals[i] = out.ops[i].total_cycles;
  }
  // Timeline of one unscaled pass, for traces: each step starts when the slowest op of the last ends.
  out.op_start_cycles.assign(schedule.ops.size(), 0.0);
  double step_start = 0.0;
  for (std::size_t i = 0; i < schedule.ops.size();) {
    const int step = schedule.ops[i].step;
    double longest = 0.0;
    for (; i < schedule.ops.size() && schedule.ops[i].step == step; ++i) {
      out.op_start_cycles[i] = step_start;
      longest = std::max(longest, totals[i]);
    }
    step_start += longest;
  }
  const cost::Composition c = cost::compose(schedule, totals, wafer.clock_hz, decode, prompt_tokens);
  out.pass_cycles = c.pass_cycles;
  out.bottleneck_stage_cycles = c.bottleneck_stage_cycles;
  out.latency_s = c.latency_s;
  out.tokens_per_s = c.tokens_per_s;
  out.tpr_tokens_per_s = c.tpr_tokens_per_s;
  out.layer_scale = std::max<std::int64_t>(1, schedule.layer_scale);
  out.scale_rule = out.layer_scale > 1
                       ? "the ops cover a subset of the model's " + std::to_string(schedule.layers_total) +
                             " layers: pass and stage cycles scaled x" + std::to_string(out.layer_scale) +
                             " (as cost::evaluate)"
                       : "the ops cover the whole schedule (no layer scaling)";
  return out;
}

CandidateSample sample_candidates(std::size_t candidates, std::size_t samples, std::uint64_t seed) {
  CandidateSample out;
  if (samples >= candidates) {
    for (std::size_t i = 0; i < candidates; ++i) out.indices.push_back(i);
    out.rule = "all " + std::to_string(candidates) + " candidates";
    return out;
  }
  std::vector<std::pair<std::uint64_t, std::size_t>> keyed;
  keyed.reserve(candidates);
  for (std::size_t i = 0; i < candidates; ++i) {
    keyed.emplace_back(splitmix64(splitmix64(seed) ^ static_cast<std::uint64_t>(i)), i);
  }
  std::partial_sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(samples), keyed.end());
  for (std::size_t i = 0; i < samples; ++i) out.indices.push_back(keyed[i].second);
  std::sort(out.indices.begin(), out.indices.end());
  out.rule = std::to_string(samples) + " of " + std::to_string(candidates) +
             " candidates: the lowest splitmix64(splitmix64(seed " + std::to_string(seed) + ") ^ index)";
  return out;
}


}  // namespace wavel::sim
