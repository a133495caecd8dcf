// Baselines, search pieces and finishing of one setting; see setting_tasks.hpp.
#include "wavel/sweep/setting_tasks.hpp"

#include <algorithm>
#include <limits>

#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/draws.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/sim/simulate.hpp"

namespace wavel::driver {

namespace detail {

std::vector<std::int64_t> waferllm_sides(const config::Config& config) {
  const auto& b = config.baselines;
  return b.waferllm_region_side_pes > 0
             ? std::vector<std::int64_t>{b.waferllm_region_side_pes}
             : baselines::waferllm_sides(config.wafer, b.waferllm_side_step_pes, b.waferllm_sides);
}

search::SearchOptions part_search_options(const config::Config& config, const config::Setting& setting) {
  search::SearchOptions options = config.search.options();
  if (setting.wafers > 1) {
    options.pipeline_part = true;
    options.objectives = search::ObjectiveSet{};
    options.io_edge = config.cluster.io_edge;
    options.link_bytes_per_s = config.cluster.link_bytes_per_s;
    options.link_latency_s = config.cluster.link_latency_s;
  }
  return options;
}

void simulate_sample(const std::string& name, const meshir::Schedule& schedule, const config::Config& config,
                     const workload::WorkloadShape& shape, SettingResult& out) {
  const bool decode = shape.phase == workload::Phase::decode;
  sim::SimOptions options;
  options.fidelity = config.sim.fidelity == "wavelet"  ? sim::Fidelity::wavelet
                     : config.sim.fidelity == "packet" ? sim::Fidelity::packet
                                                       : sim::Fidelity::message;
  options.model_ramps = config.sim.model_ramps;
  options.seed = static_cast<std::uint64_t>(config.search.seed);
  const auto model = cost::evaluate(schedule, config.wafer, config.cost.params, decode, shape.input_tokens);
  const auto simulated = sim::simulate(schedule, config.wafer, decode, shape.input_tokens, options);
  out.sim.push_back(SimPair{name, model.latency_s, simulated.latency_s, model.tokens_per_s, simulated.tokens_per_s,
                            simulated.ops_simulated, simulated.events});
  for (std::size_t i = 0; i < schedule.ops.size(); ++i) {
    if (simulated.ops[i].reused_from >= 0) continue;
    const auto& op = schedule.ops[i];
    out.sim_ops.push_back(SimOpPair{name, static_cast<std::int64_t>(i), std::string(meshir::to_string(op.kernel)),
                                    op.used.w, op.used.h, model.ops[i].total_cycles, simulated.ops[i].total_cycles});
  }
}

ScheduleResult score(const std::string& name, const std::optional<meshir::Schedule>& schedule,
                     const config::Config& config, const workload::Workload& w, const std::string& na_reason) {
  ScheduleResult r;
  r.name = name;
  r.sram_headroom = std::numeric_limits<double>::quiet_NaN();
  r.na_reason = na_reason;
  if (!schedule) return r;
  const bool decode = w.shape.phase == workload::Phase::decode;
  const auto cost = cost::evaluate(*schedule, config.wafer, config.cost.params, decode, w.shape.input_tokens);
  // A schedule whose SRAM overflows cannot execute: report it as not placed, with its headroom.
  r.placed = cost.sram_headroom >= 0.0;
  if (!r.placed) r.na_reason = "SRAM overflows by the verifier's count (headroom " + std::to_string(cost.sram_headroom) + ")";
  r.tokens_per_s = cost.tokens_per_s;
  r.latency_s = cost.latency_s;
  r.tpr_tokens_per_s = cost.tpr_tokens_per_s;
  r.pes_used = cost.pes_used;
  r.sram_headroom = cost.sram_headroom;
  r.region_side_pes = schedule->regions.empty() ? 0 : schedule->regions.front().w;
  r.regions = static_cast<std::int64_t>(schedule->regions.size());
  r.microbatches = schedule->microbatches;
  r.subset_layers = w.layer_scale > 1 ? w.model.num_layers : 0;
  r.meshir = meshir::print(*schedule);
  return r;
}

}  // namespace detail

namespace {



}  // namespace

search::SearchStats detail::unpack_stats(Unpacker& u) {
  search::SearchStats s;
  fields::unpack(u, s);
  return s;
}

namespace {


}  // namespace

void detail::unpack_candidates(Unpacker& u, std::vector<search::SearchCandidate>& out) {
  std::vector<search::SearchCandidate> more;
  fields::unpack(u, more);
  out.insert(out.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
}

namespace {

std::int64_t pruned_total(const search::SearchStats& s) {
  return s.pruned_sram + s.pruned_bound + s.pruned_incumbent + s.pruned_dominance + s.pruned_tune + s.pruned_symmetry;
}

}  // namespace

PredictionIntervals prediction_intervals(const config::Config& config, const workload::WorkloadShape& shape,
                                         const meshir::Schedule* best, const std::vector<ScheduleResult>& schedules,
                                         const TextFetch& texts) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  PredictionIntervals out{nan, nan, nan, nan, nan, nan, 0};
  const auto draws = cost::draw_params(config.cost.params, config.cost.uncertainty, config.cost.draws,
                                       static_cast<std::uint64_t>(config.search.seed));
  if (draws.empty() || best == nullptr) return out;
  const bool decode = shape.phase == workload::Phase::decode;
  const auto under = [&](const meshir::Schedule& schedule) {
    return cost::tokens_per_s_under(schedule, config.wafer, draws, decode, shape.input_tokens);
  };
  const std::vector<double> wavel = under(*best);
  out.draws = static_cast<std::int64_t>(draws.size());
  const cost::Interval t = cost::interval_90(wavel);
  out.wavel_tokens_per_s_lo = t.lo;
  out.wavel_tokens_per_s_hi = t.hi;
  for (const auto& b : schedules) {
    if (!b.placed) continue;
    const std::vector<double> base = under(meshir::parse(meshir_text(b.meshir, b.meshir_ref, texts), b.name));
    std::vector<double> ratio(wavel.size());
    for (std::size_t i = 0; i < ratio.size(); ++i) ratio[i] = wavel[i] / base[i];
    const cost::Interval r = cost::interval_90(ratio);
    (b.name == "waferllm" ? out.speedup_vs_waferllm_lo : out.speedup_vs_fullchip_lo) = r.lo;
    (b.name == "waferllm" ? out.speedup_vs_waferllm_hi : out.speedup_vs_fullchip_hi) = r.hi;
  }
  return out;
}


void pack_setting(const SettingResult& r, Packer& p) { fields::pack(p, r); }

SearchCounts search_counts(const search::SearchStats& stats) {
  SearchCounts c;
  fields::copy_by_name(stats, c);
  return c;
}

SettingResult unpack_setting(Unpacker& u) {
  SettingResult r;
  fields::unpack(u, r);
  return r;
}


namespace {

// Weights, KV cache and the largest op's activations: what must fit in SRAM.
std::int64_t sram_required_bytes(const workload::Workload& w) {
  std::int64_t activation_peak = 0;
  for (const auto& layer : w.layers) {
    for (const auto& op : layer.ops) activation_peak = std::max(activation_peak, op.input_bytes + op.output_bytes);
  }
  return w.param_bytes + w.kv_cache_bytes + activation_peak;
}

workload::ModelSpec with_layers(workload::ModelSpec model, std::int64_t layers) {
  model.num_layers = layers;
  if (model.moe) model.moe->first_dense_layers = std::min(model.moe->first_dense_layers, layers);
  return model;
}

}  // namespace

LayerSubset choose_layer_subset(const config::Config& config, const config::Setting& setting) {
  const auto& model = config.workloads.models.at(setting.model_index).spec;
  if (setting.wafers > 1) return {};  // a pipeline holds the whole model
  const double budget = config.workloads.layer_subset_max_fill * static_cast<double>(config.wafer.total_sram_data_bytes());
  // Weights and KV cache stay resident and scale with the layers; activations are transient and
  // do not, so the schedules' own SRAM checks judge them.
  const auto resident = [](const workload::Workload& w) { return static_cast<double>(w.param_bytes + w.kv_cache_bytes); };
  if (!config.workloads.layer_subset || resident(workload::build_workload(model, setting.shape)) <= budget) return {};
  for (std::int64_t k = model.num_layers - 1; k >= 1; --k) {
    if (model.num_layers % k != 0) continue;
    if (k == 1 || resident(workload::build_workload(with_layers(model, k), setting.shape)) <= budget) {
      return {k, model.num_layers / k};
    }
  }
  return {1, model.num_layers};  // a one-layer model: 1 divides everything, so not reached
}

std::optional<deploy::PipelinePlan> setting_pipeline(const config::Config& config, const config::Setting& setting) {
  if (setting.wafers <= 1) return std::nullopt;
  return deploy::plan_pipeline(config.workloads.models.at(setting.model_index).spec, setting.shape, setting.wafers,
                               config.workloads.moe(), config.wafer, config.cost.params,
                               config.workloads.layer_subset_max_fill);
}

std::vector<workload::Workload> setting_parts(const config::Config& config, const config::Setting& setting) {
  const auto& model = config.workloads.models.at(setting.model_index).spec;
  std::vector<workload::Workload> parts;
  if (const auto plan = setting_pipeline(config, setting)) {
    for (const auto& part : plan->parts) {
      parts.push_back(deploy::part_workload(model, setting.shape, part, config.workloads.moe()));
    }
    return parts;
  }
  const LayerSubset subset = choose_layer_subset(config, setting);
  workload::Workload w = workload::build_workload(subset.layers > 0 ? with_layers(model, subset.layers) : model,
                                                  setting.shape);
  w.layer_scale = subset.scale;
  w.moe = config.workloads.moe();
  parts.push_back(std::move(w));
  return parts;
}

workload::Workload setting_workload(const config::Config& config, const config::Setting& setting) {
  return std::move(setting_parts(config, setting).front());
}

SettingResult describe_setting(const config::Config& config, const config::Setting& setting, const LayerSubset& subset) {
  const auto& model = config.workloads.models.at(setting.model_index).spec;
  const workload::Workload w = workload::build_workload(model, setting.shape);
  SettingResult s;
  s.model_layers = model.num_layers;
  s.layer_subset_layers = subset.layers;
  s.wafers = setting.wafers;
  s.deployment = setting.wafers > 1 ? "pipeline" : subset.layers > 0 ? "layer_subset" : "single";
  if (const auto plan = setting_pipeline(config, setting)) {
    for (const auto& part : plan->wafers) s.stage_layers += (s.stage_layers.empty() ? "" : "+") + std::to_string(part.layers);
  }
  s.setting_id = setting.id;
  s.tokens_per_step = w.tokens_per_step;
  s.context_tokens = w.context_tokens;
  s.flops_per_step = w.flops;
  s.param_bytes = w.param_bytes;
  s.kv_cache_bytes = w.kv_cache_bytes;
  s.sram_required_bytes = sram_required_bytes(w);
  s.activation_peak_bytes = s.sram_required_bytes - s.param_bytes - s.kv_cache_bytes;
  s.wafer_sram_bytes = config.wafer.total_sram_data_bytes() * setting.wafers;  // every wafer of the deployment
  s.fits_sram = s.sram_required_bytes <= s.wafer_sram_bytes ? 1 : 0;
  // A pipeline's wafers work on different micro-batches at once.
  s.roofline_step_s = static_cast<double>(w.flops) / (config.wafer.peak_flops_per_s() * static_cast<double>(setting.wafers));
  // Tokens produced by one step: one per request in decode, the whole prompt in prefill.
  const double tokens = setting.shape.phase == workload::Phase::decode
                            ? static_cast<double>(setting.shape.concurrent_requests)
                            : static_cast<double>(w.tokens_per_step);
  s.roofline_tokens_per_s = s.roofline_step_s > 0 ? tokens / s.roofline_step_s : 0.0;
  return s;
}

std::string run_baselines(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                          std::size_t part, TaskCounters& counters) {
  // The workload already is the subset the schedules use.
  const LayerSubset subset{w.layer_scale > 1 ? w.model.num_layers : 0, w.layer_scale};
  SettingResult s = describe_setting(config, setting, subset);
  // Weight streaming is one system's deployment of the whole model: costed once per setting.
  if (part == 0) s.weight_streaming = deploy::weight_streaming(config.workloads.models.at(setting.model_index).spec, setting.shape,
                                                config.workloads.moe(), config.wafer, config.cost.params,
                                                config.cluster);
  const std::vector<std::int64_t> sides = detail::waferllm_sides(config);
  std::string fullchip_na, waferllm_na;
  const auto fullchip = baselines::build_fullchip_tuned(w, config.wafer, config.cost.params, &fullchip_na);
  auto waferllm = baselines::build_waferllm_tuned(w, config.wafer, config.cost.params, sides, &waferllm_na);
  // Both baselines are points of the space: they seed the front (unless search.seed_baselines is off).
  std::vector<std::pair<std::string, meshir::Schedule>> seeds;
  if (fullchip && config.search.seed_baselines) seeds.emplace_back("fullchip", *fullchip);
  if (waferllm && config.search.seed_baselines) seeds.emplace_back("waferllm", *waferllm);
  // WaferLLM's squares cover less of the grid than the subset was sized for: it takes the largest
  // layer subset it can place, scaled to the full depth like the others (it then seeds nothing, as
  // its schedule holds other layers than the search's). Only where the setting is itself a subset:
  // a model placed whole is served by WaferLLM whole or as groups of fewer requests (the request
  // grouping of the tables), never as a part of its layers.
  workload::Workload waferllm_w = w;
  if (!waferllm && subset.layers > 0 && config.workloads.layer_subset && w.model.moe == std::nullopt &&
      setting.wafers == 1) {
    const auto& model = config.workloads.models.at(setting.model_index).spec;
    for (std::int64_t k = w.model.num_layers - 1; k >= 1 && !waferllm; --k) {
      if (model.num_layers % k != 0) continue;
      waferllm_w = workload::build_workload(with_layers(model, k), setting.shape);
      waferllm_w.layer_scale = model.num_layers / k;
      waferllm_w.moe = w.moe;
      std::string why;
      waferllm = baselines::build_waferllm_tuned(waferllm_w, config.wafer, config.cost.params, sides, &why);
    }
    if (!waferllm) waferllm_na += " (and at every smaller layer subset)";
  }
  s.schedules.push_back(detail::score("fullchip", fullchip, config, w, fullchip_na));
  s.schedules.push_back(detail::score("waferllm", waferllm, config, waferllm_w, waferllm ? "" : waferllm_na));
  const auto candidates = search::seed_candidates(w, config.wafer, config.cost.params, seeds,
                                                  detail::part_search_options(config, setting));
  for (const auto& c : candidates) counters.found.push_back(c.objectives);
  counters.evaluations = static_cast<std::int64_t>(seeds.size());
  Packer p;
  pack_setting(s, p);
  fields::pack(p, candidates);
  return p.take();
}

std::string run_piece(const config::Config& config, const config::Setting& setting, const workload::Workload& w,
                      const search::SearchPiece& piece, const std::vector<search::Objectives>& incumbents,
                      search::SearchWorkspace& workspace, TaskCounters& counters, const std::atomic<int>* stop_flag) {
  search::SearchOptions options = detail::part_search_options(config, setting);
  options.stop_flag = stop_flag;
  // A pipeline part's incumbents are of its own micro-batch count and chunks (sweep_job.cpp), and its
  // finish picks among the part's front, so whatever order they arrive in they prune no pick.
  // One key per part of a pipeline (their layer names say which part it is).
  const auto result = workspace.run(std::to_string(setting.id) + "." + w.layers.front().name, w, config.wafer,
                                    config.cost.params, options, piece, incumbents);
  counters.nodes = result.stats.nodes_visited;
  counters.pruned = pruned_total(result.stats);
  counters.evaluations = result.stats.nodes_visited + result.stats.tunes_scored;
  for (const auto& c : result.candidates) counters.found.push_back(c.objectives);
  Packer p;
  fields::pack(p, result.stats);
  fields::pack(p, result.candidates);
  return p.take();
}

std::string run_finish(const config::Config& config, const config::Setting& setting,
                       const std::vector<workload::Workload>& parts, const std::vector<PartResults>& results,
                       TaskCounters& counters) {
  if (parts.size() != results.size() || parts.empty()) throw InternalError("run_finish: one result per part needed");
  if (const auto plan = setting_pipeline(config, setting)) {
    const SettingResult s = detail::finish_pipeline(config, setting, *plan, parts, results, counters);
    Packer p;
    pack_setting(s, p);
    return p.take();
  }
  const workload::Workload& w = parts.front();
  const std::string& baselines = results.front().baselines;
  const std::vector<std::string>& pieces = results.front().pieces;
  Unpacker bu(baselines);
  SettingResult s = unpack_setting(bu);
  std::vector<search::SearchCandidate> candidates;
  detail::unpack_candidates(bu, candidates);
  // The seeds again, from their MeshIR text (printing and parsing round-trip exactly).
  std::vector<std::pair<std::string, meshir::Schedule>> seeds;
  for (const auto& c : candidates) {
    const std::string name = c.source.substr(5);
    for (const auto& sched : s.schedules) {
      if (sched.name == name) seeds.emplace_back(name, meshir::parse(sched.meshir, name));
    }
  }
  search::SearchStats stats;
  for (const auto& bytes : pieces) {
    Unpacker u(bytes);
    search::accumulate(stats, detail::unpack_stats(u));
    detail::unpack_candidates(u, candidates);
  }
  const auto found = search::assemble(w, config.wafer, config.cost.params, config.search.options(), seeds,
                                      candidates, stats);
  for (const auto& p : found.front) {
    s.front.push_back(FrontEntry{p.source, p.objectives.tokens_per_s, p.objectives.latency_s, p.objectives.pes,
                                 p.microbatches, p.stages, p.sram_headroom, meshir::print(p.schedule), {}, 1,
                                 p.prompt_chunks});
  }
  s.hypervolume = found.hypervolume;
  s.intervals = prediction_intervals(config, w.shape, found.front.empty() ? nullptr : &found.front.front().schedule, s.schedules);
  s.hypervolume_latency_ref_s = found.reference.latency_ref_s;
  const auto& st = found.stats;
  s.search = search_counts(st);
  s.search_wall_s = st.wall_s;
  // Sampled simulation: the front first (best throughput first), then the baselines.
  std::int64_t budget = config.sim.samples;
  for (std::size_t i = 0; i < found.front.size() && budget > 0; ++i, --budget) {
    detail::simulate_sample(i == 0 ? "wavel" : "front." + std::to_string(i), found.front[i].schedule, config, w.shape, s);
  }
  for (const auto& [name, schedule] : seeds) {
    if (budget-- <= 0) break;
    detail::simulate_sample(name, schedule, config, w.shape, s);
  }
  counters.front_size = static_cast<std::int64_t>(s.front.size());
  counters.best_tokens_per_s = s.best_tokens_per_s();
  Packer p;
  pack_setting(s, p);
  return p.take();
}

void check_task_result(TaskResultKind kind, const std::string& bytes) {
  Unpacker u(bytes, ExitCode::data_error);
  std::vector<search::SearchCandidate> candidates;
  // The schedules go to the results as they are: each must still parse and verify (a checksum
  // does not stop a crafted file).
  const auto check_schedules = [](const SettingResult& r) {
    const auto check = [](const std::string& text, const std::string& name) {
      meshir::verify_or_throw(meshir::parse(text, name), meshir::VerifyOptions{name, {}, {}});
    };
    for (const auto& s : r.schedules) {
      if (s.placed) check(s.meshir, "schedule '" + s.name + "'");
    }
    for (std::size_t i = 0; i < r.front.size(); ++i) check(r.front[i].meshir, "front." + std::to_string(i));
  };
  switch (kind) {
    case TaskResultKind::baselines:
      check_schedules(unpack_setting(u));
      detail::unpack_candidates(u, candidates);
      break;
    case TaskResultKind::piece:
      detail::unpack_stats(u);
      detail::unpack_candidates(u, candidates);
      break;
    case TaskResultKind::finish:
      check_schedules(unpack_setting(u));
      break;
  }
  if (!u.done()) throw Error(ExitCode::data_error, "trailing bytes after the result");
}

}  // namespace wavel::driver
