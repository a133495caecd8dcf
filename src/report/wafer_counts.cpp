// Per problem over its wafer counts: fewest, fastest, most per wafer, fewest meeting the target
// (see wafer_counts.hpp).
#include "wavel/report/wafer_counts.hpp"

#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "wavel/common/format.hpp"

namespace wavel::driver {

namespace {

using Key = std::tuple<std::size_t, std::size_t, int, std::int64_t, std::int64_t, std::int64_t>;

Key problem_of(const config::Setting& s) {
  return {s.model_index, s.hardware, static_cast<int>(s.shape.phase), s.shape.concurrent_requests, s.shape.input_tokens,
          s.shape.output_tokens};
}

bool deploys_whole_model(const SettingResult& r) {
  return !r.front.empty() && (r.deployment == "single" || r.deployment == "pipeline");
}

// The target of this phase (0: none) and whether a front point meets it.
double target_of(const wafer::ClusterParams& cluster, workload::Phase phase) {
  return phase == workload::Phase::decode ? cluster.target_tpr_tokens_per_s : cluster.target_ttft_s;
}

bool meets(const FrontEntry& p, workload::Phase phase, double target) {
  if (!(p.latency_s > 0)) return false;
  return phase == workload::Phase::decode ? 1.0 / p.latency_s >= target : p.latency_s <= target;
}

WaferCountPick pick(const config::Setting& s, const FrontEntry& p) {
  return WaferCountPick{s.wafers, s.id, p.tokens_per_s, p.latency_s};
}

std::string where(const WaferCountPick& p) {
  return std::to_string(p.wafers) + " (#" + std::to_string(p.setting_id) + ")";
}

}  // namespace

std::vector<WaferCountRow> wafer_count_rows(const std::vector<config::Setting>& settings,
                                            const std::vector<SettingResult>& results,
                                            const wafer::ClusterParams& cluster) {
  std::vector<WaferCountRow> rows;
  std::map<Key, std::size_t> index;
  for (std::size_t i = 0; i < settings.size() && i < results.size(); ++i) {
    const auto& s = settings[i];
    const auto& r = results[i];
    const auto [it, added] = index.emplace(problem_of(s), rows.size());
    if (added) {
      rows.emplace_back();
      rows.back().first_setting = i;
    }
    WaferCountRow& row = rows[it->second];
    row.wafer_counts += (row.wafer_counts.empty() ? "" : ",") + std::to_string(s.wafers);
    if (!deploys_whole_model(r)) continue;
    const FrontEntry& best = r.front.front();  // best throughput first
    const auto better = [&](const WaferCountPick& current, double value, double current_value) {
      // Ties go to fewer wafers: settings of a problem come in the order of cluster.wafers.
      return current.setting_id < 0 || value > current_value ||
             (value == current_value && s.wafers < current.wafers);
    };
    if (row.fewest.setting_id < 0 || s.wafers < row.fewest.wafers) row.fewest = pick(s, best);
    if (better(row.fastest, best.tokens_per_s, row.fastest.tokens_per_s)) row.fastest = pick(s, best);
    const double per_wafer = best.tokens_per_s / static_cast<double>(s.wafers);
    if (better(row.per_wafer, per_wafer, row.per_wafer.tokens_per_s / static_cast<double>(std::max<std::int64_t>(1, row.per_wafer.wafers)))) {
      row.per_wafer = pick(s, best);
    }
    const double target = target_of(cluster, s.shape.phase);
    if (target > 0 && (row.target.setting_id < 0 || s.wafers < row.target.wafers)) {
      for (const auto& p : r.front) {  // best throughput first: the first that meets it is the fastest
        if (meets(p, s.shape.phase, target)) {
          row.target = pick(s, p);
          break;
        }
      }
    }
  }
  return rows;
}

io::Table wafer_counts_table(const config::Config& config, const std::vector<config::Setting>& settings,
                             const std::vector<WaferCountRow>& rows) {
  using D = std::vector<double>;
  using I = std::vector<std::int64_t>;
  using S = std::vector<std::string>;
  S model, phase, counts;
  I requests, input, output;
  D target;
  struct Picked {
    I wafers, setting;
    D tps, latency;
  } picked[4];
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const auto& row : rows) {
    const auto& s = settings.at(row.first_setting);
    model.push_back(config.workloads.models.at(s.model_index).spec.name);
    phase.emplace_back(workload::to_string(s.shape.phase));
    requests.push_back(s.shape.concurrent_requests);
    input.push_back(s.shape.input_tokens);
    output.push_back(s.shape.output_tokens);
    counts.push_back(row.wafer_counts);
    const double t = target_of(config.cluster, s.shape.phase);
    target.push_back(t > 0 ? t : nan);
    const WaferCountPick* picks[4] = {&row.fewest, &row.fastest, &row.per_wafer, &row.target};
    for (int k = 0; k < 4; ++k) {
      const auto& p = *picks[k];
      picked[k].wafers.push_back(p.wafers);
      picked[k].setting.push_back(p.setting_id);
      picked[k].tps.push_back(p.setting_id >= 0 ? p.tokens_per_s : nan);
      picked[k].latency.push_back(p.setting_id >= 0 ? p.latency_s : nan);
    }
  }
  io::Table table;
  table.name = "wafer_counts";
  table.columns = {{"model", "", model},
                   {"phase", "", phase},
                   {"concurrent_requests", "1", requests},
                   {"input_tokens", "tokens", input},
                   {"output_tokens", "tokens", output},
                   {"wafer_counts", "systems", counts},
                   {"target", "tokens/s per user (decode) or s of TTFT (prefill)", target}};
  const char* names[4] = {"fewest", "fastest", "per_wafer", "target"};
  for (int k = 0; k < 4; ++k) {
    const std::string n = names[k];
    table.columns.push_back({n + "_wafers", "systems", picked[k].wafers});
    table.columns.push_back({n + "_setting_id", "1", picked[k].setting});
    table.columns.push_back({n + "_tokens_per_s", "tokens/s", picked[k].tps});
    table.columns.push_back({n + "_latency_s", "s", picked[k].latency});
  }
  return table;
}

void print_wafer_counts(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                        const std::vector<WaferCountRow>& rows) {
  std::vector<std::vector<std::string>> lines{
      {"model", "phase", "req", "in", "out", "wafers", "fewest", "fastest", "best per wafer", "target"}};
  for (const auto& row : rows) {
    const auto& s = settings.at(row.first_setting);
    const double t = target_of(config.cluster, s.shape.phase);
    std::ostringstream target;
    if (t <= 0) {
      target << "-";
    } else {
      target << (s.shape.phase == workload::Phase::decode ? ">= " + human(t, "tok/s") + "/user: "
                                                           : "TTFT <= " + human(t, "s") + ": ")
             << (row.target.setting_id < 0 ? "none" : where(row.target));
    }
    const bool placed = row.fewest.setting_id >= 0;
    lines.push_back({config.workloads.models.at(s.model_index).spec.name, std::string(workload::to_string(s.shape.phase)),
                     std::to_string(s.shape.concurrent_requests), std::to_string(s.shape.input_tokens),
                     std::to_string(s.shape.output_tokens), row.wafer_counts, placed ? where(row.fewest) : "none",
                     placed ? human(row.fastest.tokens_per_s, "tok/s") + " on " + where(row.fastest) : "-",
                     placed ? human(row.per_wafer.tokens_per_s / static_cast<double>(row.per_wafer.wafers), "tok/s") +
                                  " on " + where(row.per_wafer)
                            : "-",
                     target.str()});
  }
  std::vector<std::size_t> width(lines[0].size(), 0);
  for (const auto& l : lines)
    for (std::size_t c = 0; c < l.size(); ++c) width[c] = std::max(width[c], l[c].size());
  out << "Wafer counts per problem (PREDICTED; a whole-model deployment on each count, (#id) its setting):\n";
  for (const auto& l : lines) {
    for (std::size_t c = 0; c < l.size(); ++c) {
      const bool left = c <= 1 || c >= 5;
      const bool last = c + 1 == l.size();  // no trailing blanks
      out << (c ? "  " : "") << (left ? std::left : std::right) << std::setw(last ? 0 : static_cast<int>(width[c])) << l[c];
    }
    out << '\n';
  }
  out << std::right;
}

}  // namespace wavel::driver
