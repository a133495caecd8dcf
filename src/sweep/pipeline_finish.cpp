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

// A part's schedule as the pick of parts sees it: its pass with its crossings' legs, its slowest
// stage, and the crossings apart.
deploy::StageOption stage_option(double pass_cycles, double stage_cycles, const search::PartCrossings& x) {
  return deploy::StageOption{pass_cycles + x.legs_cycles(), stage_cycles, x.in_leg_cycles, x.out_leg_cycles,
                             x.out_link_cycles};
}

// Lexicographic order, smallest best: by throughput (then latency, then PEs) or by latency (then
// throughput, then PEs).
std::tuple<double, double, std::int64_t> rank(double tokens_per_s, double latency_s, std::int64_t pes, bool by_latency) {
  return by_latency ? std::make_tuple(latency_s, -tokens_per_s, pes) : std::make_tuple(-tokens_per_s, latency_s, pes);
}

struct Joiner {
  const config::Config& config;
  const config::Setting& setting;
  const deploy::PipelinePlan& plan;
  const std::vector<workload::Workload>& parts;
  bool decode = false;
  search::SearchOptions part_options;  ///< the parts' search options (detail::part_search_options)

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
  [[nodiscard]] deploy::StageOption option(std::size_t part, const Schedule& s, const cost::ScheduleCost& c) const {
    return stage_option(c.pass_cycles, c.bottleneck_stage_cycles,
                        search::part_crossings(s, parts[part], part_options, config.wafer, config.cost.params));
  }
};

// Full-Chip or WaferLLM on every wafer with the pipeline's split, at the micro-batch count (every
// divisor of the requests) whose joined schedule has the best throughput; WaferLLM's square side is
// tuned per part at each count, as its own tuning does on one wafer: each part's fastest alone, or
// the parts that make the joined pipeline fastest (deploy::pick_parts), whichever joins faster.
std::optional<Schedule> pipeline_baseline(const Joiner& j, const std::string& name, std::string& na_reason) {
  const std::vector<std::int64_t> sides = waferllm_sides(j.config);
  std::optional<Schedule> best;
  double best_tokens_per_s = 0;
  std::string why;  // the first part that could not be placed, and why
  for (const std::int64_t mb : workload::request_divisors(j.setting.shape.concurrent_requests)) {
    // Per part, every placement that fits (in TUNE or side order) and the fastest alone.
    std::vector<std::vector<Schedule>> placed(j.parts.size());
    std::vector<std::vector<deploy::StageOption>> options(j.parts.size());
    std::vector<std::size_t> fastest;
    for (std::size_t p = 0; p < j.parts.size(); ++p) {
      const auto& w = j.parts[p];
      double part_tokens_per_s = 0;
      std::size_t part_best = 0;
      std::string reason = "its SRAM overflows";
      const auto consider = [&](Schedule s) {
        const auto c = j.evaluate(s);
        if (!fits(c)) return;
        if (c.tokens_per_s > part_tokens_per_s) {  // ties keep the earlier TUNE or the smaller side
          part_tokens_per_s = c.tokens_per_s;
          part_best = placed[p].size();
        }
        options[p].push_back(j.option(p, s, c));
        placed[p].push_back(std::move(s));
      };
      if (name == "fullchip") {
        for (const auto& tune : baselines::fullchip_tunes(w)) consider(baselines::build_fullchip(w, j.config.wafer, mb, tune));
      } else {
        for (const std::int64_t side : sides) {
          std::string side_reason;
          auto s = baselines::build_waferllm(w, j.config.wafer, side, mb, &side_reason);
          if (!s) {
            reason = side_reason;
            continue;
          }
          consider(std::move(*s));
        }
      }
      if (placed[p].empty()) {
        if (why.empty()) {
          const auto& part = j.plan.parts[p];
          why = "the part with layers " + std::to_string(part.first_layer) + "-" +
                std::to_string(part.first_layer + part.layers - 1) + (part.embedding ? " and the embedding" : "") +
                (part.head ? " and the LM head" : "") + " cannot be placed (" + std::to_string(mb) +
                " micro-batches; last reason: " + reason + ")";
        }
        break;
      }
      fastest.push_back(part_best);
    }
    if (fastest.size() != j.parts.size()) continue;
    const auto joint = deploy::pick_parts(options, j.plan.part_of, j.decode, [&](double pass, double stage) {
      return 1.0 / cost::pipeline(pass, stage, mb, 1, j.setting.shape.concurrent_requests, j.config.wafer.clock_hz,
                                  j.decode, j.setting.shape.input_tokens)
                       .tokens_per_s;
    });
    std::vector<std::vector<std::size_t>> choices{fastest};
    if (!joint.empty() && joint != fastest) choices.push_back(joint);
    for (const auto& picked : choices) {
      std::vector<Schedule> per_part;
      for (std::size_t p = 0; p < j.parts.size(); ++p) per_part.push_back(placed[p][picked[p]]);
      Schedule joined = j.join(per_part, name);
      const auto c = j.evaluate(joined);
      if (fits(c) && c.tokens_per_s > best_tokens_per_s) {  // ties keep fewer micro-batches, then each part's fastest
        best_tokens_per_s = c.tokens_per_s;
        best = std::move(joined);
      }
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
  const Joiner j{config, setting, plan, parts, setting.shape.phase == workload::Phase::decode,
                 detail::part_search_options(config, setting)};
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

  // Per micro-batch count and prompt chunks, a few choices of every part's schedule are joined and
  // costed whole, and the joined pipelines fastest and with the lowest latency kept:
  // - the parts that make the joined pipeline fastest, and those that give it the lowest latency,
  //   under cost::pipeline's rule (deploy::pick_parts; a part's fastest alone can pace the pipeline
  //   worse than another). A part's pass there carries the on-wafer legs of its crossings
  //   (SearchCandidate::crossings), which depend on where its first
  //   and last leaves lie, and a link that outlasts every stage paces the pipeline;
  // - each part's fastest alone, and its lowest latency alone (ties to the other objective, then PEs):
  //   the rule still leaves out both legs of one crossing slower than the link (it charges both) and
  //   a re-layout where a wafer's input arrives in another layout.
  // The parts were searched with search::stage_objectives, crossing legs in the pass, and only a
  // part's front under them is offered: incumbents prune only what a found schedule strictly
  // dominates, so whatever order they arrive in, nothing on it.
  const search::ObjectiveSet part_objectives = j.part_options.objectives;
  const auto alone = [&](const search::SearchCandidate& c) {  // a part's own pipeline
    return cost::pipeline(c.pass_cycles, c.stage_cycles, c.microbatches, c.prompt_chunks,
                          setting.shape.concurrent_requests, config.wafer.clock_hz, j.decode, setting.shape.input_tokens);
  };
  using Picked = std::vector<const search::SearchCandidate*>;
  std::vector<std::pair<std::string, Schedule>> joined;
  std::vector<cost::ScheduleCost> costs;  // joined's, in order
  for (const std::int64_t pc : search::prompt_chunk_choices(setting.shape, options)) {
    for (const std::int64_t mb : workload::request_divisors(setting.shape.concurrent_requests)) {
      std::vector<Picked> fronts(parts.size());
      std::vector<std::vector<deploy::StageOption>> stage_options(parts.size());
      for (std::size_t p = 0; p < parts.size(); ++p) {
        std::vector<search::Objectives> points;
        for (std::size_t i = 0; i < candidates[p].size(); ++i) {
          const auto& c = candidates[p][i];
          if (c.microbatches != mb || c.prompt_chunks != pc || c.sram_headroom < 0.0 || !(c.objectives.tokens_per_s > 0)) {
            continue;
          }
          points.push_back(c.objectives);
          points.back().id = static_cast<std::int64_t>(i);
        }
        std::vector<std::size_t> on_front;
        for (const auto& o : search::pareto_front(points, part_objectives)) on_front.push_back(static_cast<std::size_t>(o.id));
        std::sort(on_front.begin(), on_front.end());  // ties go to the first
        for (const std::size_t i : on_front) {
          fronts[p].push_back(&candidates[p][i]);
          const auto& c = candidates[p][i];
          stage_options[p].push_back(stage_option(c.pass_cycles, c.stage_cycles, c.crossings));
        }
      }
      std::vector<Picked> choices;
      for (const bool by_latency : {false, true}) {
        const auto chosen = deploy::pick_parts(stage_options, plan.part_of, j.decode, [&](double pass, double stage) {
          const auto c = cost::pipeline(pass, stage, mb, pc, setting.shape.concurrent_requests, config.wafer.clock_hz,
                                        j.decode, setting.shape.input_tokens);
          return by_latency ? c.latency_s : 1.0 / c.tokens_per_s;
        });
        if (chosen.empty()) continue;
        Picked joint, own;
        for (std::size_t p = 0; p < parts.size(); ++p) {
          joint.push_back(fronts[p][chosen[p]]);
          const auto own_rank = [&](const search::SearchCandidate* c) {
            const auto a = alone(*c);
            return rank(a.tokens_per_s, a.latency_s, c->objectives.pes, by_latency);
          };
          own.push_back(*std::min_element(fronts[p].begin(), fronts[p].end(),
                                          [&](const auto* a, const auto* b) { return own_rank(a) < own_rank(b); }));
        }
        for (auto& picked : {joint, own}) {
          if (std::find(choices.begin(), choices.end(), picked) == choices.end()) choices.push_back(picked);
        }
      }
      // Each choice joined and costed; the fastest and the lowest-latency kept (ties to the first).
      std::vector<std::pair<Schedule, cost::ScheduleCost>> costed;
      for (const Picked& picked : choices) {
        std::vector<Schedule> per_part;
        for (std::size_t p = 0; p < parts.size(); ++p) per_part.push_back(rebuild(p, *picked[p]));
        Schedule schedule = j.join(per_part, "wavel");
        const auto c = j.evaluate(schedule);
        if (fits(c)) costed.emplace_back(std::move(schedule), c);
      }
      if (costed.empty()) continue;
      const auto best_by = [&](bool by_latency) {
        std::size_t best = 0;
        const auto key = [&](std::size_t i) {
          const auto& c = costed[i].second;
          return rank(c.tokens_per_s, c.latency_s, c.pes_used, by_latency);
        };
        for (std::size_t i = 1; i < costed.size(); ++i) {
          if (key(i) < key(best)) best = i;
        }
        return best;
      };
      const std::size_t fastest = best_by(false), soonest = best_by(true);
      const auto keep = [&](std::size_t i) {
        joined.emplace_back("search", std::move(costed[i].first));
        costs.push_back(costed[i].second);
      };
      keep(fastest);
      if (soonest != fastest) keep(soonest);
    }
  }
  // The baselines on the same wafers; they seed the front as on one wafer.
  for (const std::string name : {"fullchip", "waferllm"}) {
    std::string na;
    const auto b = pipeline_baseline(j, name, na);
    s.schedules.push_back(score(name, b, config, parts.front(), na));
    if (b && config.search.seed_baselines) {
      joined.emplace_back("seed:" + name, *b);
      costs.push_back(j.evaluate(*b));
    }
  }

  std::vector<search::Objectives> points;
  for (std::size_t i = 0; i < joined.size(); ++i) {
    const auto& c = costs[i];
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
