// Runs one op's sample on a fresh Network, memoises identical ops, adds colour switches and mover
// contention, and runs the schedule as a pipeline.
#include "wavel/sim/simulate.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/meshir/kernels.hpp"
#include "wavel/sim/detail/compose.hpp"
#include "wavel/sim/detail/link.hpp"

namespace wavel::sim {

namespace {

using meshir::Axis;
using meshir::Kernel;
using meshir::PlacedOp;

using meshir::moves_between_regions;

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
  for (std::int64_t v : {w.batch, w.m, w.k, w.n, w.flops, w.weight_bytes, w.input_bytes, w.output_bytes, w.kv_cache_bytes,
                         w.heads, w.kv_heads, w.fused, w.products}) {
    add(v);
  }
  key += "r";
  for (const std::int64_t rows : w.product_rows) add(rows);
  add(static_cast<int>(op.attention));
  if (moves_between_regions(op.kernel) && op.to_region >= 0 &&
      op.to_region < static_cast<int>(schedule.regions.size())) {
    const meshir::Rect& r = op.used;
    const meshir::Rect to = meshir::used_part(schedule, op.to_region);  // where the data lands
    add(std::llabs((2 * r.x + r.w) - (2 * to.x + to.w)));
    add(std::llabs((2 * r.y + r.h) - (2 * to.y + to.h)));
    add(to.w);
    add(to.h);
  } else if (moves_between_regions(op.kernel)) {
    key += "bad-region";
  }
  return key;
}

// An expert CUT's flows of one step between one rectangle and its strips share the rectangle's
// lines: one line carries every flow's messages at once (exchange_sends, the op's heaviest line),
// and each flow is charged the time its messages lose to the others.
void add_exchange_contention(const meshir::Schedule& schedule, const MicroArch& micro, const SimOptions& options,
                             const std::vector<std::pair<std::size_t, meshir::Exchange>>& exchanges,
                             std::vector<OpSimResult>& ops) {
  std::vector<bool> done(exchanges.size(), false);
  for (std::size_t a = 0; a < exchanges.size(); ++a) {
    if (done[a]) continue;
    const meshir::Exchange& first = exchanges[a].second;
    std::vector<std::size_t> group;
    for (std::size_t b = a; b < exchanges.size(); ++b) {
      if (!done[b] && exchanges[b].second.same_all_to_all(first)) {
        group.push_back(b);
        done[b] = true;
      }
    }
    if (group.size() < 2) continue;
    NetworkConfig config;
    config.width_pes = std::max<std::int64_t>(1, first.side());
    config.hop_cycles = micro.hop_cycles;
    config.link_bytes_per_cycle = micro.link_bytes_per_cycle;
    config.routable_colours = micro.routable_colours;
    config.model_ramps = options.model_ramps;
    Network net(config);
    std::vector<std::vector<ItemId>> sent(group.size());
    for (std::size_t g = 0; g < group.size(); ++g) {
      const auto& [op_index, e] = exchanges[group[g]];
      PlanOptions po;
      po.sample_lines = 1;
      const KernelPlan plan = plan_kernel(schedule, schedule.ops[op_index], micro, po);
      std::int64_t bytes = 0;
      for (const LineWork& l : plan.lines) bytes = std::max(bytes, l.message_bytes);
      for (const ExchangeSend& m : exchange_sends(first.side(), e.lo(), e.hi(), e.into_strip, bytes)) {
        SendSpec spec;
        spec.src_pe = m.from;
        spec.dst_pe = m.to;
        spec.bytes = m.bytes;
        spec.colour = m.to > m.from ? 0 : 1;
        sent[g].push_back(net.send(spec));
        // Every PE launches once for the whole exchange; launches on different PEs overlap.
        net.release_at(sent[g].back(), micro.timing.kernel_launch_cycles);
      }
    }
    net.run();
    for (std::size_t g = 0; g < group.size(); ++g) {
      double finish = 0.0;
      for (const ItemId id : sent[g]) finish = std::max(finish, net.finish_cycles(id));
      OpSimResult& r = ops[exchanges[group[g]].first];
      r.contention_cycles = std::max(r.contention_cycles, finish - r.cycles);
    }
  }
}

// Movers of one step that leave one region the same way, or enter one region from the same side,
// share its boundary links: simulate their busiest lanes together on one line and charge each the
// time it loses to the others.
void add_mover_contention(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, const SimOptions& options,
                          std::vector<OpSimResult>& ops) {
  const MicroArch micro = options.micro ? *options.micro : microarch_for(wafer);
  struct Lane {
    std::size_t op;
    std::int64_t hops, bytes;
  };
  for (std::size_t i = 0; i < schedule.ops.size();) {
    std::size_t end = i;
    std::map<std::pair<int, int>, std::vector<Lane>> leaving, entering;  // (region, direction) -> lanes
    std::vector<std::pair<std::size_t, meshir::Exchange>> exchanges;
    for (; end < schedule.ops.size() && schedule.ops[end].step == schedule.ops[i].step; ++end) {
      const PlacedOp& op = schedule.ops[end];
      if (!moves_between_regions(op.kernel) || meshir::crosses_wafers(schedule, op)) continue;
      if (const auto e = meshir::exchange_of(schedule, op)) {
        exchanges.emplace_back(end, *e);
        continue;
      }
      PlanOptions po;
      po.sample_lines = 1;
      const KernelPlan plan = plan_kernel(schedule, op, micro, po);
      std::int64_t bytes = 0;
      for (const LineWork& l : plan.lines) bytes = std::max(bytes, l.message_bytes);
      const meshir::Rect to = meshir::used_part(schedule, op.to_region);  // where the data lands
      const std::int64_t dx = (2 * to.x + to.w) - (2 * op.used.x + op.used.w);
      const std::int64_t dy = (2 * to.y + to.h) - (2 * op.used.y + op.used.h);
      const int direction = std::llabs(dx) >= std::llabs(dy) ? (dx >= 0 ? 0 : 1) : (dy >= 0 ? 2 : 3);
      leaving[{op.region, direction}].push_back(Lane{end, plan.hops, bytes});
      entering[{op.to_region, direction}].push_back(Lane{end, plan.hops, bytes});
    }
    auto run = [&](const std::vector<Lane>& lanes, bool from_start) {
      if (lanes.size() < 2) return;
      std::int64_t longest = 0;
      for (const Lane& l : lanes) longest = std::max(longest, l.hops);
      NetworkConfig config;
      config.width_pes = longest + 1;
      config.hop_cycles = micro.hop_cycles;
      config.link_bytes_per_cycle = micro.link_bytes_per_cycle;
      config.routable_colours = micro.routable_colours;
      config.model_ramps = options.model_ramps;
      Network net(config);
      std::vector<ItemId> sent;
      for (const Lane& l : lanes) {
        SendSpec spec;
        spec.src_pe = from_start ? 0 : longest - l.hops;
        spec.dst_pe = from_start ? l.hops : longest;
        spec.bytes = l.bytes;
        // Every mover launches on its own PEs, so the launches overlap; only the links are shared.
        sent.push_back(net.send(spec));
        net.release_at(sent.back(), micro.timing.kernel_launch_cycles);
      }
      net.run();
      for (std::size_t k = 0; k < lanes.size(); ++k) {
        OpSimResult& r = ops[lanes[k].op];
        r.contention_cycles = std::max(r.contention_cycles, net.finish_cycles(sent[k]) - r.cycles);
      }
    };
    for (const auto& [key, lanes] : leaving) run(lanes, true);
    for (const auto& [key, lanes] : entering) run(lanes, false);
    add_exchange_contention(schedule, micro, options, exchanges, ops);
    i = end;
  }
}

}  // namespace

NetworkConfig network_config(const KernelPlan& plan, const MicroArch& micro, const SimOptions& options) {
  NetworkConfig config;
  config.width_pes = plan.mesh_w_pes;
  config.height_pes = plan.mesh_h_pes;
  config.hop_cycles = micro.hop_cycles;
  config.stream_latency_cycles = micro.timing.stream_latency_cycles;
  config.relay_cycles = micro.relay_cycles();
  config.link_bytes_per_cycle = micro.link_bytes_per_cycle;
  config.routable_colours = micro.routable_colours;
  config.fidelity = options.fidelity;
  config.packet_wavelets = options.packet_wavelets;
  config.model_ramps = options.model_ramps;
  config.record_spans = options.record_trace;
  return config;
}

namespace {

OpSimResult simulate_placed(const meshir::Schedule& schedule, const PlacedOp& op, const wafer::WaferParams& wafer,
                            const SimOptions& options) {
  const MicroArch micro = options.micro ? *options.micro : microarch_for(wafer);
  PlanOptions plan_options;
  plan_options.full_region = options.full_region_when_small && op.used.w > 0 && op.used.h > 0 &&
                             op.used.w <= options.full_region_max_pes && op.used.h <= options.full_region_max_pes &&
                             op.used.pes() <= options.full_region_max_pes;
  plan_options.max_simulated_steps = options.max_simulated_steps;
  plan_options.sample_lines = options.sample_lines;
  plan_options.seed = options.seed;
  const KernelPlan plan = plan_kernel(schedule, op, micro, plan_options);

  NetworkConfig config = network_config(plan, micro, options);
  // Refuse before building what could not fit (e.g. 2^40 dependent rounds).
  const double lines = static_cast<double>(std::max<std::size_t>(1, plan.lines.size()));
  const double per_round = lines * (4.0 * static_cast<double>(plan.line_pes) + 8.0) + static_cast<double>(plan.span_pes);
  const double estimate = static_cast<double>(plan.rounds) * per_round +
                          static_cast<double>(plan.sample.steps_simulated + plan.skew_rounds_simulated) * 6.0 *
                              static_cast<double>(plan.mesh_w_pes * plan.mesh_h_pes);
  if (estimate > static_cast<double>(config.max_items)) {
    throw std::domain_error("sim: op '" + op.name + "' would need about " + std::to_string(estimate) +
                            " work items to simulate (limit " + std::to_string(config.max_items) +
                            "); its rounds or size are out of range");
  }
  Network net(config);
  // The estimate bounds the items from above for every shape; reserving it (up to 64 MiB of items)
  // spares the regrowth copies of a large build.
  const auto reserve = static_cast<std::size_t>(std::min(estimate, static_cast<double>(std::int64_t{1} << 20)));
  net.reserve(reserve, reserve);
  const KernelBuild build = build_kernel(net, plan);
  net.run();

  OpSimResult r;
  r.cycles = kernel_cycles(net, build);
  r.total_cycles = r.cycles;
  // Sampling error: lines of one work class should finish together; their spread is what choosing
  // other lines could change.
  std::map<std::int64_t, std::pair<double, double>> by_class;  // message bytes -> (fastest, slowest)
  for (std::size_t k = 0; k < build.line_done.size(); ++k) {
    const double t = net.finish_cycles(build.line_done[k]);
    auto [it, fresh] = by_class.try_emplace(plan.lines[k].message_bytes, t, t);
    if (!fresh) it->second = {std::min(it->second.first, t), std::max(it->second.second, t)};
  }
  for (const auto& [bytes, range] : by_class) {
    if (range.second > 0) r.sampling_error = std::max(r.sampling_error, (range.second - range.first) / range.second);
  }
  const NetworkStats& stats = net.stats();
  r.events = stats.events;
  r.messages = stats.messages;
  r.wavelet_hops = stats.wavelet_hops;
  r.relays = stats.relays;
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

}  // namespace

OpSimResult simulate_op(const meshir::Schedule& schedule, int op_index, const wafer::WaferParams& wafer,
                        const SimOptions& options) {
  if (op_index < 0 || op_index >= static_cast<int>(schedule.ops.size())) {
    throw InternalError("sim::simulate_op: op index " + std::to_string(op_index) + " is not an op of the schedule");
  }
  const PlacedOp& op = schedule.ops[static_cast<std::size_t>(op_index)];
  const std::vector<std::int64_t>& rows = op.work.product_rows;
  if (rows.empty()) return simulate_placed(schedule, op, wafer, options);
  // A grouped GEMM whose experts have rows of their own: each distinct expert's MeshGEMM is
  // simulated alone, and the op is their runs one after another (an expert with no rows is skipped).
  OpSimResult out;
  bool first = true;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i;
    while (j < rows.size() && rows[j] == rows[i]) ++j;
    const auto count = static_cast<double>(j - i);
    if (rows[i] > 0) {
      PlacedOp one = op;
      one.work.products = 1;
      one.work.product_rows.clear();
      one.work.m = rows[i];
      one.work.flops = op.work.m > 0 ? static_cast<std::int64_t>(static_cast<double>(op.work.flops) *
                                                                  static_cast<double>(rows[i]) / static_cast<double>(op.work.m))
                                     : 0;
      OpSimResult r = simulate_placed(schedule, one, wafer, options);
      out.cycles += count * r.cycles;
      out.sampling_error = std::max(out.sampling_error, r.sampling_error);
      out.relays += r.relays;
      out.events += r.events;
      out.messages += r.messages;
      out.wavelet_hops += r.wavelet_hops;
      out.represented_messages += count * r.represented_messages;
      out.represented_wavelet_hops += count * r.represented_wavelet_hops;
      out.colours_max = std::max(out.colours_max, r.colours_max);
      if (first) {  // the first expert's sample and trace stand for the op's
        out.sample = r.sample;
        out.mesh_w_pes = r.mesh_w_pes;
        out.mesh_h_pes = r.mesh_h_pes;
        out.spans = std::move(r.spans);
        first = false;
      }
    }
    i = j;
  }
  out.total_cycles = out.cycles;
  return out;
}

SimResult simulate(const meshir::Schedule& schedule, const wafer::WaferParams& wafer, bool decode,
                   std::int64_t prompt_tokens, const SimOptions& options) {
  SimResult out;
  out.ops.reserve(schedule.ops.size());
  const MicroArch micro = options.micro ? *options.micro : microarch_for(wafer);
  std::map<std::string, int> memo;
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const PlacedOp& op = schedule.ops[i];
    if (meshir::crosses_wafers(schedule, op)) {
      // The system link is its own element (link.hpp); crossings are few, so they are not memoised.
      const LinkCrossing c = simulate_link_crossing(schedule, static_cast<int>(i), wafer, options);
      OpSimResult r;
      r.cycles = c.total_cycles;
      r.total_cycles = c.total_cycles;
      r.events = c.events;
      out.events += c.events;
      ++out.ops_simulated;
      out.ops.push_back(std::move(r));
      continue;
    }
    const std::string key = options.memoize ? memo_key(schedule, op) : std::string();
    const auto found = options.memoize ? memo.find(key) : memo.end();
    if (found != memo.end()) {
      OpSimResult reused = out.ops[static_cast<std::size_t>(found->second)];
      reused.reused_from = found->second;
      reused.events = 0;
      reused.messages = 0;
      reused.wavelet_hops = 0;
      reused.relays = 0;
      reused.spans.clear();  // the trace shows them once, on the op simulated
      out.ops.push_back(std::move(reused));
      ++out.ops_reused;
      continue;
    }
    try {
      out.ops.push_back(simulate_op(schedule, static_cast<int>(i), wafer, options));
    } catch (const DataError& e) {
      std::vector<Diagnostic> named = e.diagnostics();
      for (auto& d : named) d.message = "op '" + op.name + "' (" + std::string(meshir::to_string(op.kernel)) + "): " + d.message;
      throw DataError(std::move(named));
    }
    const OpSimResult& r = out.ops.back();
    out.events += r.events;
    out.messages += r.messages;
    out.wavelet_hops += r.wavelet_hops;
    out.relays += r.relays;
    ++out.ops_simulated;
    if (options.memoize) memo.emplace(key, static_cast<int>(i));
  }
  // Colour switches: a region's K-tree kernels that reduce along a new axis re-configure its routers.
  std::map<int, Axis> last_axis;
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    const PlacedOp& op = schedule.ops[i];
    if (op.kernel != Kernel::meshgemv && op.kernel != Kernel::allreduce) continue;
    const auto it = last_axis.find(op.region);
    if (it != last_axis.end() && it->second != op.reduce_axis) out.ops[i].colour_switch_cycles = micro.timing.colour_switch_cycles;
    last_axis[op.region] = op.reduce_axis;
  }
  add_mover_contention(schedule, wafer, options, out.ops);
  std::vector<double> totals(schedule.ops.size());
  for (std::size_t i = 0; i < out.ops.size(); ++i) {
    OpSimResult& r = out.ops[i];
    r.total_cycles = r.cycles + r.colour_switch_cycles + r.contention_cycles;
    totals[i] = r.total_cycles;
  }
  const Pipeline p = run_pipeline(schedule, totals, wafer.clock_hz, decode, prompt_tokens);
  out.op_start_cycles = p.op_start_cycles;
  out.pass_cycles = p.pass_cycles;
  out.bottleneck_stage_cycles = p.bottleneck_stage_cycles;
  out.latency_s = p.latency_s;
  out.tokens_per_s = p.tokens_per_s;
  out.tpr_tokens_per_s = p.tpr_tokens_per_s;
  out.layer_scale = std::max<std::int64_t>(1, schedule.layer_scale);
  out.scale_rule = out.layer_scale > 1
                       ? "the ops cover a subset of the model's " + std::to_string(schedule.layers_total) +
                             " layers: steps with layer ops take x" + std::to_string(out.layer_scale) +
                             " their time in the pipeline"
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
