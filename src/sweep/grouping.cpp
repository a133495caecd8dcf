// Request grouping across a sweep; see grouping.hpp.
#include "wavel/sweep/grouping.hpp"

#include <algorithm>
#include <numeric>
#include <string>
#include <tuple>

#include "wavel/sweep/setting_tasks.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/search/pareto.hpp"
#include "wavel/search/search.hpp"

namespace wavel::driver {

namespace {

bool same_problem(const config::Setting& a, const config::Setting& b) {
  return a.model_index == b.model_index && a.hardware == b.hardware && a.wafers == b.wafers && a.shape.phase == b.shape.phase &&
         a.shape.input_tokens == b.shape.input_tokens && a.shape.output_tokens == b.shape.output_tokens;
}


search::Objectives objectives_of(const FrontEntry& f) { return {f.tokens_per_s, f.latency_s, f.pes_used, 0}; }

// The best point, grouped, enters the front; own points no better in the front's objectives leave it.
void take_grouped_best(SettingResult& r, const FrontEntry& donor, std::int64_t groups, std::int64_t donor_requests,
                       const search::ObjectiveSet& set) {
  FrontEntry g = donor;
  g.request_groups = donor.request_groups * groups;
  g.source = "grouped:" + std::to_string(g.request_groups) + "x" +
             std::to_string(donor_requests / donor.request_groups);
  std::vector<FrontEntry> kept{g};
  for (const auto& f : r.front) {
    if (!search::no_worse(objectives_of(g), objectives_of(f), set)) kept.push_back(f);
  }
  r.front = std::move(kept);
}

/// Setting i takes the best grouping of its `donors` (same problem, fewer requests, ascending);
/// its intervals are recomputed if anything changed.
void regroup(const config::Config& config, const std::vector<config::Setting>& settings,
             std::vector<SettingResult>& results, std::size_t i, const std::vector<std::size_t>& donors,
             const search::ObjectiveSet& objectives, const TextFetch& texts) {
  const auto& setting = settings[i];
  const std::int64_t requests = setting.shape.concurrent_requests;
  bool changed = false;
  for (const std::size_t j : donors) {
    const std::int64_t donor_requests = settings[j].shape.concurrent_requests;
    if (donor_requests >= requests) break;
    if (requests % donor_requests != 0) continue;
    const std::int64_t groups = requests / donor_requests;
    const SettingResult& donor = results[j];
    SettingResult& r = results[i];
    for (std::size_t k = 0; k < r.schedules.size() && k < donor.schedules.size(); ++k) {
      const ScheduleResult& d = donor.schedules[k];
      ScheduleResult& own = r.schedules[k];
      if (!d.placed || (own.placed && own.tokens_per_s >= d.tokens_per_s)) continue;
      own = d;
      own.request_groups = d.request_groups * groups;
      changed = true;
    }
    if (!donor.front.empty() && donor.best_tokens_per_s() > r.best_tokens_per_s()) {
      take_grouped_best(r, donor.front.front(), groups, donor_requests, objectives);
      changed = true;
    }
  }
  if (!changed) return;
  SettingResult& r = results[i];
  // Every schedule of the setting, grouped or not, under the same draws; a grouped schedule's
  // MeshIR is its group's, whose throughput is the grouped one.
  const std::string best_text =
      r.front.empty() ? std::string() : meshir_text(r.front.front().meshir, r.front.front().meshir_ref, texts);
  if (!best_text.empty()) {
    const auto best = meshir::parse(best_text, "wavel");
    r.intervals = prediction_intervals(config::for_hardware(config, setting.hardware), setting.shape, &best, r.schedules, texts);
  }
}

}  // namespace

void apply_request_grouping(const config::Config& config, const std::vector<config::Setting>& settings,
                            std::vector<SettingResult>& results, const TextFetch& texts) {
  const search::ObjectiveSet objectives = config.search.options().objectives;
  // Settings of one problem together (only they donate to each other), smaller request counts
  // first, so a donor already carries its own best grouping; sorting keeps a large sweep from
  // comparing every pair of settings.
  std::vector<std::size_t> order(results.size());
  std::iota(order.begin(), order.end(), 0);
  const auto key = [&](std::size_t i) {
    const auto& s = settings[i];
    return std::make_tuple(s.model_index, s.hardware, s.wafers, s.shape.phase, s.shape.input_tokens, s.shape.output_tokens,
                           s.shape.concurrent_requests);
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<std::size_t> donors;  // the problem's settings so far, ascending in requests
  for (std::size_t at = 0; at < order.size(); ++at) {
    if (at > 0 && !same_problem(settings[order[at - 1]], settings[order[at]])) donors.clear();
    regroup(config, settings, results, order[at], donors, objectives, texts);
    donors.push_back(order[at]);
  }
}

}  // namespace wavel::driver
