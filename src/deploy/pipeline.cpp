// Pipelines over several systems; see pipeline.hpp.
#include "wavel/deploy/pipeline.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "wavel/common/error.hpp"
#include "wavel/deploy/layer_costs.hpp"

namespace wavel::deploy {

namespace {

std::string gigabytes(double bytes) {
  return std::to_string(static_cast<std::int64_t>(std::llround(bytes / 1e9))) + " GB";
}

// "layer.N.rest" -> "layer.(N + delta).rest"; other names unchanged.
std::string shift_layer(const std::string& name, std::int64_t delta) {
  const std::string prefix = "layer.";
  if (delta == 0 || name.rfind(prefix, 0) != 0) return name;
  const std::size_t end = name.find('.', prefix.size());
  const std::string number = name.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  if (number.empty() || number.find_first_not_of("0123456789") != std::string::npos) return name;
  return prefix + std::to_string(std::stoll(number) + delta) + (end == std::string::npos ? "" : name.substr(end));
}

}  // namespace

PipelinePlan plan_pipeline(const workload::ModelSpec& model, const workload::WorkloadShape& shape, std::int64_t wafers,
                           const workload::MoeRouting& moe, const wafer::WaferParams& wafer, const cost::CostParams& params,
                           double max_fill) {
  const std::int64_t L = model.num_layers;
  if (wafers < 1 || wafers > L) {
    throw InputDataError(model.name + " has " + std::to_string(L) + " decoder layers: it cannot be split over " +
                         std::to_string(wafers) + " wafers (each needs at least one)");
  }
  const ModelLayerCosts costs = layer_costs(model, shape, moe, wafer, params);
  const auto& layer = costs.layers;  // embed, L decoder layers, head
  if (static_cast<std::int64_t>(layer.size()) != L + 2) throw InternalError("plan_pipeline: unexpected layer list");
  const double budget = max_fill * static_cast<double>(wafer.total_sram_data_bytes());
  // The first stage starts at layer 0; a later one is costed as layers of the model's last kind
  // (the dense layers of an MoE model lead it), so only the count matters (split_layers).
  const auto stage = [&](std::int64_t k, bool embedding, bool head, bool check_sram) {
    double time_s = 0, resident = 0;
    for (std::int64_t i = 0; i < k; ++i) {
      const LayerCost& l = layer[static_cast<std::size_t>(embedding ? 1 + i : L)];
      time_s += l.compute_s;
      resident += static_cast<double>(l.param_bytes + l.kv_cache_bytes);
    }
    if (embedding) {
      time_s += layer.front().compute_s;
      resident += static_cast<double>(layer.front().param_bytes);
    }
    if (head) {
      time_s += layer.back().compute_s;
      resident += static_cast<double>(layer.back().param_bytes + (embedding ? 0 : costs.tied_head_bytes));
    }
    return check_sram && resident > budget ? std::numeric_limits<double>::infinity() : time_s;
  };
  PipelinePlan plan;
  LayerSplit split = split_layers(L, wafers, [&](std::int64_t k, bool e, bool h) { return stage(k, e, h, true); });
  if (!std::isfinite(split.bottleneck_s)) {
    plan.fits = false;
    plan.na_reason = "no split of the " + std::to_string(L) + " decoder layers over " + std::to_string(wafers) +
                     " wafers keeps every wafer's weights and KV cache within " + std::to_string(max_fill) +
                     " of its " + gigabytes(static_cast<double>(wafer.total_sram_data_bytes())) + " SRAM for data";
    split = split_layers(L, wafers, [&](std::int64_t k, bool e, bool h) { return stage(k, e, h, false); });
  }
  std::int64_t first = 0;
  const std::int64_t dense = model.moe ? model.moe->first_dense_layers : 0;
  for (std::size_t w = 0; w < split.layers.size(); ++w) {
    StagePart p;
    p.first_layer = first;
    p.layers = split.layers[w];
    p.embedding = w == 0;
    p.head = w + 1 == split.layers.size();
    p.dense_layers = std::clamp<std::int64_t>(dense - first, 0, p.layers);
    first += p.layers;
    const auto known = std::find(plan.parts.begin(), plan.parts.end(), p);
    plan.part_of.push_back(static_cast<std::size_t>(known - plan.parts.begin()));
    if (known == plan.parts.end()) plan.parts.push_back(p);
    plan.wafers.push_back(p);
    plan.proxy_stage_s.push_back(stage(p.layers, p.embedding, p.head, false));
  }
  return plan;
}

workload::Workload part_workload(const workload::ModelSpec& model, const workload::WorkloadShape& shape,
                                 const StagePart& part, const workload::MoeRouting& moe) {
  workload::Workload w =
      workload::stage_workload(model, shape, part.first_layer, part.layers, part.embedding, part.head);
  w.moe = moe;
  return w;
}

meshir::Schedule join_stages(const PipelinePlan& plan, const std::vector<const meshir::Schedule*>& per_part,
                             const std::vector<const workload::Workload*>& parts, const wafer::ClusterParams& cluster,
                             std::int64_t layers_total, bool decode, const std::string& name) {
  using meshir::Kernel;
  using meshir::PlacedOp;
  if (per_part.size() != plan.parts.size() || parts.size() != plan.parts.size() || plan.wafers.empty()) {
    throw InternalError("join_stages: one schedule and one workload per part needed");
  }
  const meshir::Schedule& head = *per_part.front();
  meshir::Schedule out = meshir::empty_like(name, head);
  out.concurrent_requests = head.concurrent_requests;
  out.microbatches = head.microbatches;
  out.prompt_chunks = head.prompt_chunks;
  out.layers_total = layers_total;
  out.wafers = static_cast<std::int64_t>(plan.wafers.size());
  out.link_bytes_per_s = static_cast<std::int64_t>(std::llround(cluster.link_bytes_per_s));
  out.link_latency_ns = static_cast<std::int64_t>(std::llround(cluster.link_latency_s * 1e9));
  out.io_edge = cluster.io_edge;
  int next_step = 0, next_stage = 0;
  for (std::size_t k = 0; k < plan.wafers.size(); ++k) {
    const std::size_t p = plan.part_of[k];
    const meshir::Schedule& s = *per_part[p];
    if (s.microbatches != out.microbatches || s.prompt_chunks != out.prompt_chunks ||
        s.concurrent_requests != out.concurrent_requests || s.layer_scale != 1) {
      throw InternalError(
          "join_stages: the wafers' schedules differ in micro-batches, prompt chunks or requests, or are layer subsets");
    }
    if (s.ops.empty()) throw InternalError("join_stages: an empty stage schedule");
    const int region_offset = static_cast<int>(out.regions.size());
    for (const auto& r : s.regions) {
      out.regions.push_back(r);
      out.region_wafers.push_back(static_cast<std::int64_t>(k));
    }
    int stage_max = 0, step_max = 0;
    for (const auto& op : s.ops) {
      stage_max = std::max(stage_max, op.stage);
      step_max = std::max(step_max, op.step);
    }
    // The activation crosses from the previous wafer's last op; readers of the layer input in this
    // wafer's first block take it from there.
    int arrival = -1;
    std::set<std::string> readers;
    if (k > 0) {
      const int producer = static_cast<int>(out.ops.size()) - 1;
      const PlacedOp& from = out.ops.back();
      const PlacedOp& first = s.ops.front();
      PlacedOp t;
      t.name = "link." + std::to_string(k - 1) + "-" + std::to_string(k);
      t.kernel = Kernel::transfer;
      t.region = from.region;
      t.used = from.used;
      t.to_region = first.region + region_offset;
      t.in_layout = from.out_layout;
      t.out_layout = first.in_layout;
      t.inputs = {producer};
      t.step = next_step++;
      t.stage = next_stage;
      t.work.input_bytes = from.work.output_bytes;
      t.work.output_bytes = from.work.output_bytes;
      out.ops.push_back(t);
      arrival = static_cast<int>(out.ops.size()) - 1;
      for (const auto& layer : parts[p]->layers) {
        if (!layer.decoder) continue;
        for (const auto& op : layer.ops) {
          if (std::find(op.inputs.begin(), op.inputs.end(), -1) != op.inputs.end()) readers.insert(layer.name + "." + op.name);
        }
        break;
      }
    }
    const int op_offset = static_cast<int>(out.ops.size());
    // A reader whose layout differs gets a re-layout of the arriving activation (one step, before the wafer's ops).
    std::vector<int> relayouts;
    for (const auto& op : s.ops) {
      if (arrival < 0 || readers.count(op.name) == 0) continue;
      if (op.region != s.ops.front().region) {
        throw InternalError("join_stages: layer input of '" + op.name + "' read outside the first region");
      }
      if (out.ops[static_cast<std::size_t>(arrival)].out_layout.aligned_with(op.in_layout)) continue;
      PlacedOp r;
      r.name = op.name + ".relayout-for-link";
      r.kernel = Kernel::relayout;
      r.region = op.region + region_offset;
      r.used = op.used;
      r.in_layout = out.ops[static_cast<std::size_t>(arrival)].out_layout;
      r.out_layout = op.in_layout;
      r.inputs = {arrival};
      r.step = next_step;
      r.stage = op.stage + next_stage;
      r.work.input_bytes = out.ops[static_cast<std::size_t>(arrival)].work.output_bytes;
      r.work.output_bytes = r.work.input_bytes;
      out.ops.push_back(r);
      relayouts.push_back(static_cast<int>(out.ops.size()) - 1);
    }
    if (!relayouts.empty()) ++next_step;
    const int moved = static_cast<int>(out.ops.size()) - op_offset;  // re-layouts placed before this wafer's ops
    const std::int64_t delta = plan.wafers[k].first_layer - plan.parts[p].first_layer;
    for (const auto& op : s.ops) {
      PlacedOp o = op;
      o.name = op.name.rfind("layer.", 0) == 0 ? shift_layer(op.name, delta) : "w" + std::to_string(k) + "." + op.name;
      o.region += region_offset;
      if (o.to_region >= 0) o.to_region += region_offset;
      for (int& in : o.inputs) in += op_offset + moved;
      o.step += next_step;
      o.stage += next_stage;
      if (readers.count(op.name) != 0) {
        const auto r = std::find_if(relayouts.begin(), relayouts.end(), [&](int i) {
          return out.ops[static_cast<std::size_t>(i)].name == op.name + ".relayout-for-link";
        });
        o.inputs.push_back(r != relayouts.end() ? *r : arrival);
      }
      out.ops.push_back(std::move(o));
    }
    next_step += step_max + 1;
    next_stage += stage_max + 1;
  }
  if (decode && plan.wafers.size() > 1) {
    // The sampled tokens (4-byte ids) go back to the first wafer's embedding for the next step.
    const PlacedOp& from = out.ops.back();
    const PlacedOp& embed = out.ops.front();
    PlacedOp t;
    t.name = "link.tokens";
    t.kernel = Kernel::transfer;
    t.region = from.region;
    t.used = from.used;
    t.to_region = embed.region;
    t.in_layout = from.out_layout;
    t.out_layout = embed.in_layout;
    t.inputs = {static_cast<int>(out.ops.size()) - 1};
    t.step = next_step;
    t.stage = next_stage;
    t.work.input_bytes = workload::sampled_token_bytes(out.concurrent_requests, out.microbatches);
    t.work.output_bytes = t.work.input_bytes;
    out.ops.push_back(t);
  }
  return out;
}

std::vector<std::size_t> pick_parts(const std::vector<std::vector<StageOption>>& options,
                                    const std::vector<std::size_t>& part_of, bool token_return,
                                    const std::function<double(double, double)>& cost) {
  for (const std::size_t p : part_of) {
    if (p >= options.size()) throw InternalError("pick_parts: a wafer names no part");
  }
  std::vector<double> thresholds;
  for (const auto& part : options) {
    if (part.empty()) return {};
    for (const auto& o : part) thresholds.push_back(o.stage_cycles);
  }
  // The links, as (from wafer, to wafer); a pick's pass and slowest element, links included.
  std::vector<std::pair<std::size_t, std::size_t>> links;
  for (std::size_t w = 0; w + 1 < part_of.size(); ++w) links.emplace_back(w, w + 1);
  if (token_return && part_of.size() > 1) links.emplace_back(part_of.size() - 1, 0);
  const auto option = [&](const std::vector<std::size_t>& pick, std::size_t wafer) -> const StageOption& {
    return options[part_of[wafer]][pick[part_of[wafer]]];
  };
  struct Figures {
    double pass = 0, stages = 0, slowest = 0;
  };
  const auto figures = [&](const std::vector<std::size_t>& pick) {
    Figures f;
    for (std::size_t w = 0; w < part_of.size(); ++w) {
      f.pass += option(pick, w).pass_cycles;
      f.stages = std::max(f.stages, option(pick, w).stage_cycles);
    }
    f.slowest = f.stages;
    for (const auto& [from, to] : links) {
      const double own = option(pick, from).out_link_cycles;
      f.pass += own;
      f.slowest = std::max(f.slowest, own + option(pick, from).out_leg_cycles + option(pick, to).in_leg_cycles);
    }
    return f;
  };
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  // Each stage value as the ceiling, the links left out of the slowest element: a lower bound of
  // every pick's cost, attained by a pick that no link paces.
  std::vector<std::size_t> best, pick(options.size());
  double best_cost = 0;
  for (const double limit : thresholds) {
    bool all = true;
    for (std::size_t p = 0; p < options.size() && all; ++p) {
      std::size_t chosen = options[p].size();
      for (std::size_t i = 0; i < options[p].size(); ++i) {
        const auto& o = options[p][i];
        if (o.stage_cycles <= limit && (chosen == options[p].size() || o.pass_cycles < options[p][chosen].pass_cycles)) {
          chosen = i;
        }
      }
      all = chosen < options[p].size();
      pick[p] = chosen;
    }
    if (!all) continue;
    const Figures f = figures(pick);
    const double c = cost(f.pass, f.stages);
    if (best.empty() || c < best_cost) {
      best = pick;
      best_cost = c;
    }
  }
  const Figures f = figures(best);
  if (f.slowest <= f.stages) return best;
  // A link paces that pick: cost every combination, in index order (the first of equals stays).
  double combinations = 1;
  for (const auto& part : options) combinations *= static_cast<double>(part.size());
  if (combinations > static_cast<double>(1 << 20)) return best;
  std::vector<std::size_t> at(options.size(), 0);
  best_cost = cost(f.pass, f.slowest);
  double best_slowest = f.slowest;
  for (;;) {
    const Figures g = figures(at);
    const double c = cost(g.pass, g.slowest);
    if (c < best_cost || (c == best_cost && (g.slowest < best_slowest || (g.slowest == best_slowest && at < best)))) {
      best = at;
      best_cost = c;
      best_slowest = g.slowest;
    }
    std::size_t p = options.size();
    while (p > 0 && ++at[p - 1] == options[p - 1].size()) at[--p] = 0;
    if (p == 0) break;
  }
  return best;
}

}  // namespace wavel::deploy
