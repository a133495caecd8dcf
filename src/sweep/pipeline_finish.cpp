// Finishing a setting deployed over several wafers: each part's search candidates and baselines
// joined into multi-wafer schedules (deploy::join_stages), one per micro-batch count and pick rule,
// the front over them, and Full-Chip and WaferLLM pipelines on the same wafers and split.
#include <algorithm>
#include <map>
#include <memory>
#include <tuple>

#include "wavel/baselines/baselines.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/meshir/text.hpp"

namespace wavel::driver::detail {

namespace {

using meshir::Schedule;

bool fits(const cost::ScheduleCost& c) { return c.sram_headroom >= 0.0 && c.tokens_per_s > 0.0; }

struct Joiner {
  const config::Config& config;
  const config::Setting& setting;
  const deploy::PipelinePlan& plan;
  const std::vector<workload::Workload>& parts;
  bool decode = false;

  [[nodiscard]] Schedule join(const std::vector<Schedule>& per_part, const std::string& name) const {
    std::vector<const Schedule*> schedules;
    std::vector<const workload::Workload*> workloads;
    for (std::size_t p = 0; p < parts.size(); ++p) {
      schedules.push_back(&per_part[p]);
      workloads.push_back(&parts[p]);
    }
    return deploy::join_stages(plan, schedules, workloads, config.cluster,
                               config.workloads.models.at(setting.model_index).spec.num_layers, decode, name);
  }
  [[nodiscard]] cost::ScheduleCost evaluate(const Schedule& s) const {
    return cost::evaluate(s, config.wafer, config.cost.params, decode, setting.shape.input_tokens);
  }
};

// Full-Chip or WaferLLM on every wafer with the pipeline's split, at the micro-batch count (every
// divisor of the requests) whose joined schedule has the best throughput; WaferLLM's square side is
// tuned per part at each count, as its own tuning does on one wafer.
std::optional<Schedule> pipeline_baseline(const Joiner& j, const std::string& name, std::string& na_reason) {
  const std::vector<std::int64_t> sides = waferllm_sides(j.config);
  std::optional<Schedule> best;
  double best_tokens_per_s = 0;
  std::string why;  // the first part that could not be placed, and why
  for (const std::int64_t mb : workload::request_divisors(j.setting.shape.concurrent_requests)) {
    std::vector<Schedule> per_part;
    for (std::size_t p = 0; p < j.parts.size(); ++p) {
      const auto& w = j.parts[p];
      std::optional<Schedule> part_best;
      double part_tokens_per_s = 0;
      std::string reason = "its SRAM overflows";
      if (name == "fullchip") {
        for (const auto& tune : baselines::fullchip_tunes(w)) {
          Schedule s = baselines::build_fullchip(w, j.config.wafer, mb, tune);
          const auto c = j.evaluate(s);
          if (fits(c) && c.tokens_per_s > part_tokens_per_s) {  // ties keep the earlier TUNE
            part_tokens_per_s = c.tokens_per_s;
            part_best = std::move(s);
          }
        }
      } else {
        for (const std::int64_t side : sides) {
          std::string side_reason;
          auto s = baselines::build_waferllm(w, j.config.wafer, side, mb, &side_reason);
          if (!s) {
            reason = side_reason;
            continue;
          }
          const auto c = j.evaluate(*s);
          if (fits(c) && c.tokens_per_s > part_tokens_per_s) {  // ties keep the smaller side
            part_tokens_per_s = c.tokens_per_s;
            part_best = std::move(s);
          }
        }
      }
      if (!part_best) {
        if (why.empty()) {
          const auto& part = j.plan.parts[p];
          why = "the part with layers " + std::to_string(part.first_layer) + "-" +
                std::to_string(part.first_layer + part.layers - 1) + (part.embedding ? " and the embedding" : "") +
                (part.head ? " and the LM head" : "") + " cannot be placed (" + std::to_string(mb) +
                " micro-batches; last reason: " + reason + ")";
        }
        break;
      }
      per_part.push_back(std::move(*part_best));
    }
    if (per_part.size() != j.parts.size()) continue;
    Schedule joined = j.join(per_part, name);
    const auto c = j.evaluate(joined);
    if (fits(c) && c.tokens_per_s > best_tokens_per_s) {  // ties keep fewer micro-batches
      best_tokens_per_s = c.tokens_per_s;
      best = std::move(joined);
    }
  }
  if (!best) {
    na_reason = !j.plan.fits ? j.plan.na_reason
                : "at no micro-batch count does every wafer's part fit: " + (why.empty() ? "no part placed" : why);
  }
  return best;
}

}  // namespace

SettingResult finish_pipeline(const config::Config& config, const config::Setting& setting,
                              const deploy::PipelinePlan& plan, const std::vector<workload::Workload>& parts,
                              const std::vector<PartResults>& results, TaskCounters& counters) {
  const Joiner j{config, setting, plan, parts, setting.shape.phase == workload::Phase::decode};
  const auto options = config.search.options();
  std::vector<SettingResult> described;
  std::vector<std::vector<search::SearchCandidate>> candidates(parts.size());
  search::SearchStats stats;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    Unpacker bu(results[p].baselines);
    described.push_back(unpack_setting(bu));
    unpack_candidates(bu, candidates[p]);
    for (const auto& bytes : results[p].pieces) {
      Unpacker u(bytes);
      search::accumulate(stats, unpack_stats(u));
      unpack_candidates(u, candidates[p]);
    }
  }
  // Part 0's baselines hold the setting's description and its weight streaming.
  SettingResult s = described.front();
  s.schedules.clear();

  // A candidate's schedule on its own wafer: rebuilt from its leaves, or its seed's text.
  std::map<std::tuple<std::size_t, std::int64_t, std::int64_t>, std::unique_ptr<search::PlanEvaluator>> builders;
  const auto rebuild = [&](std::size_t p, const search::SearchCandidate& c) {
    if (c.source == "search") {
      auto& b = builders[{p, c.microbatches, c.prompt_chunks}];
      if (!b) {
        b = search::make_evaluator(parts[p], config.wafer, config.cost.params, options, c.microbatches, c.prompt_chunks);
      }
      return b->build(c.leaves);
    }
    const std::string name = c.source.substr(5);
    for (const auto& sched : described[p].schedules) {
      if (sched.name == name) return meshir::parse(sched.meshir, name);
    }
    throw InternalError("pipeline: a part's seed '" + name + "' has no schedule");
  };

  // Per micro-batch count and prompt chunks, every part's fastest candidate, and every part's
  // lowest-latency one: the slowest wafer paces the pipeline, and latency adds over the wafers.
  // Lexicographic picks (ties on the first objective go to the other two, then to the first found):
  // an incumbent prunes only what it strictly dominates, so it never prunes a pick or anything tied
  // with one.
  const auto pick = [&](std::size_t p, std::int64_t mb, std::int64_t pc, bool by_latency) {
    const auto rank = [by_latency](const search::Objectives& o) {
      return by_latency ? std::make_tuple(o.latency_s, -o.tokens_per_s, o.pes)
                        : std::make_tuple(-o.tokens_per_s, o.latency_s, o.pes);
    };
    const search::SearchCandidate* best = nullptr;
    for (const auto& c : candidates[p]) {
      if (c.microbatches != mb || c.prompt_chunks != pc || c.sram_headroom < 0.0 || !(c.objectives.tokens_per_s > 0)) {
        continue;
      }
      if (best == nullptr || rank(c.objectives) < rank(best->objectives)) best = &c;
    }
    return best;
  };
  std::vector<std::pair<std::string, Schedule>> joined;
  for (const std::int64_t pc : search::prompt_chunk_choices(setting.shape, options)) {
    for (const std::int64_t mb : workload::request_divisors(setting.shape.concurrent_requests)) {
      for (const bool by_latency : {false, true}) {
        std::vector<Schedule> per_part;
        for (std::size_t p = 0; p < parts.size(); ++p) {
          const search::SearchCandidate* c = pick(p, mb, pc, by_latency);
          if (c == nullptr) break;
          per_part.push_back(rebuild(p, *c));
        }
        if (per_part.size() == parts.size()) joined.emplace_back("search", j.join(per_part, "wavel"));
      }
    }
  }
  // The baselines on the same wafers; they seed the front as on one wafer.
  for (const std::string name : {"fullchip", "waferllm"}) {
    std::string na;
    const auto b = pipeline_baseline(j, name, na);
    s.schedules.push_back(score(name, b, config, parts.front(), na));
    if (b && config.search.seed_baselines) joined.emplace_back("seed:" + name, *b);
  }

  std::vector<search::Objectives> points;
  std::vector<cost::ScheduleCost> costs;
  for (std::size_t i = 0; i < joined.size(); ++i) {
    costs.push_back(j.evaluate(joined[i].second));
    const auto& c = costs.back();
    if (!fits(c)) continue;
    points.push_back(search::Objectives{c.tokens_per_s, c.latency_s, c.pes_used, static_cast<std::int64_t>(i)});
  }
  const auto front = search::pareto_front(points, options.objectives);
  double worst_latency = 0;
  for (const auto& o : front) {
    const auto& [source, schedule] = joined[static_cast<std::size_t>(o.id)];
    const auto& c = costs[static_cast<std::size_t>(o.id)];
    int stages = 0;
    for (const auto& op : schedule.ops) stages = std::max(stages, op.stage + 1);
    s.front.push_back(FrontEntry{source, o.tokens_per_s, o.latency_s, o.pes, schedule.microbatches, stages,
                                 c.sram_headroom, meshir::print(schedule), {}, 1, schedule.prompt_chunks});
    worst_latency = std::max(worst_latency, o.latency_s);
  }
  const search::HypervolumeReference reference{2.0 * worst_latency, config.wafer.usable_pes() * setting.wafers};
  s.hypervolume = search::normalized_hypervolume(front, reference);
  s.hypervolume_latency_ref_s = reference.latency_ref_s;
  const Schedule* best = front.empty() ? nullptr : &joined[static_cast<std::size_t>(front.front().id)].second;
  s.intervals = prediction_intervals(config, setting.shape, best, s.schedules);
  s.search = search_counts(stats);
  s.search_wall_s = stats.wall_s;
  // Sampled simulation: the front first, then the baselines (as on one wafer).
  std::int64_t budget = config.sim.samples;
  for (std::size_t i = 0; i < front.size() && budget > 0; ++i, --budget) {
    simulate_sample(i == 0 ? "wavel" : "front." + std::to_string(i), joined[static_cast<std::size_t>(front[i].id)].second,
                    config, setting.shape, s);
  }
  for (const auto& [source, schedule] : joined) {
    if (source.rfind("seed:", 0) != 0) continue;
    if (budget-- <= 0) break;
    simulate_sample(source.substr(5), schedule, config, setting.shape, s);
  }
  counters.front_size = static_cast<std::int64_t>(s.front.size());
  counters.best_tokens_per_s = s.best_tokens_per_s();
  return s;
}

}  // namespace wavel::driver::detail
