// Hardware what-if tables; see whatif.hpp.
#include "wavel/report/whatif.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "wavel/config/hardware.hpp"
#include "wavel/common/format.hpp"

namespace wavel::driver {

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A problem: everything of a setting but its hardware point.
using Problem = std::tuple<std::size_t, std::int64_t, int, std::int64_t, std::int64_t, std::int64_t>;
Problem problem_of(const config::Setting& s) {
  return {s.model_index, s.wafers, static_cast<int>(s.shape.phase), s.shape.concurrent_requests, s.shape.input_tokens,
          s.shape.output_tokens};
}

// A point's value of `key`: the swept one, else its wafer's (the defect rate: the config's own).
double point_value(const config::Config& config, const config::HardwarePoint& p, const std::string& key) {
  for (const auto& [k, v] : p.values) {
    if (k == key) return v;
  }
  return config::hardware_value(p.wafer, key, config.wafer_sweep.defect_rate);
}

}  // namespace

cost::TokenEnergy setting_energy(const config::Config& config, const config::Setting& setting, double tokens_per_s) {
  const config::Config& at = config::for_hardware(config, setting.hardware);
  return cost::token_energy(at.wafer, config.energy, setting.wafers, tokens_per_s,
                            config.workloads.models.at(setting.model_index).spec.hidden);
}

io::Table hardware_table(const config::Config& config) {
  std::vector<std::int64_t> index, base, defects, usable;
  std::vector<std::string> label;
  std::vector<double> peak, sram, power;
  std::map<std::string, std::vector<double>> values;
  for (std::size_t h = 0; h < config.hardware.size(); ++h) {
    const auto& p = config.hardware[h];
    index.push_back(static_cast<std::int64_t>(h));
    label.push_back(p.label);
    base.push_back(p.base ? 1 : 0);
    defects.push_back(static_cast<std::int64_t>(p.wafer.defective_pes.size()));
    usable.push_back(p.wafer.usable_pes());
    peak.push_back(p.wafer.peak_flops_per_s());
    sram.push_back(static_cast<double>(p.wafer.total_sram_bytes()));
    power.push_back(cost::system_power_w(p.wafer, config.energy));
    for (const auto& a : config::hardware_axes()) values[a.key].push_back(point_value(config, p, a.key));
  }
  io::Table t{"hardware",
              {{"hardware", "1", index}, {"label", "", label}, {"base", "bool", base}}};
  for (const auto& a : config::hardware_axes()) t.columns.push_back({a.key, a.units, values[a.key]});
  t.columns.push_back({"defective_pes", "PEs", defects});
  t.columns.push_back({"usable_pes", "PEs", usable});
  t.columns.push_back({"peak_flops_per_s", "FLOP/s", peak});
  t.columns.push_back({"total_sram_bytes", "bytes", sram});
  t.columns.push_back({"system_power_w", "W", power});
  return t;
}

std::vector<SensitivityRow> sensitivity_rows(const config::Config& config, const std::vector<config::Setting>& settings,
                                             const std::vector<SettingResult>& results) {
  std::vector<SensitivityRow> rows;
  if (config.hardware.size() < 2) return rows;
  // The base settings of each problem; the base point is the one with every key at its base value.
  std::map<Problem, std::size_t> base_of;
  for (std::size_t i = 0; i < settings.size() && i < results.size(); ++i) {
    if (config.hardware.at(settings[i].hardware).base) base_of.emplace(problem_of(settings[i]), i);
  }
  const auto& base_point = [&]() -> const config::HardwarePoint* {
    for (const auto& p : config.hardware) {
      if (p.base) return &p;
    }
    return nullptr;
  }();
  if (base_point == nullptr) return rows;
  for (std::size_t i = 0; i < settings.size() && i < results.size(); ++i) {
    const auto& point = config.hardware.at(settings[i].hardware);
    if (point.base) continue;
    const auto found = base_of.find(problem_of(settings[i]));
    if (found == base_of.end()) continue;
    // Exactly one key away from the base point.
    std::string key;
    int differing = 0;
    double value = 0, base_value = 0;
    for (const auto& [name, v] : point.values) {
      const double b = point_value(config, *base_point, name);
      if (v != b) {
        ++differing;
        key = name;
        value = v;
        base_value = b;
      }
    }
    if (differing != 1) continue;
    const std::size_t j = found->second;
    SensitivityRow r;
    r.setting_id = results[i].setting_id;
    r.base_setting_id = results[j].setting_id;
    r.key = key;
    r.value = value;
    r.base_value = base_value;
    r.tokens_per_s = results[i].best_tokens_per_s();
    r.base_tokens_per_s = results[j].best_tokens_per_s();
    r.change = r.base_tokens_per_s > 0 ? r.tokens_per_s / r.base_tokens_per_s - 1.0 : kNan;
    r.elasticity = r.tokens_per_s > 0 && r.base_tokens_per_s > 0 && value > 0 && base_value > 0
                       ? std::log(r.tokens_per_s / r.base_tokens_per_s) / std::log(value / base_value)
                       : kNan;
    r.j_per_token = setting_energy(config, settings[i], r.tokens_per_s).j_per_token;
    r.base_j_per_token = setting_energy(config, settings[j], r.base_tokens_per_s).j_per_token;
    rows.push_back(r);
  }
  return rows;
}

io::Table sensitivity_table(const std::vector<SensitivityRow>& rows) {
  const std::size_t n = rows.size();
  const auto at = [&](auto get) { return [&, get](std::size_t i) { return get(rows[i]); }; };
  using R = SensitivityRow;
  return io::Table{"sensitivity",
                   {io::column("setting_id", "1", n, at([](const R& r) { return r.setting_id; })),
                    io::column("base_setting_id", "1", n, at([](const R& r) { return r.base_setting_id; })),
                    io::column("key", "", n, at([](const R& r) { return r.key; })),
                    io::column("base_value", "key units", n, at([](const R& r) { return r.base_value; })),
                    io::column("value", "key units", n, at([](const R& r) { return r.value; })),
                    io::column("wavel_tokens_per_s", "tokens/s", n, at([](const R& r) { return r.tokens_per_s; })),
                    io::column("base_wavel_tokens_per_s", "tokens/s", n, at([](const R& r) { return r.base_tokens_per_s; })),
                    io::column("change", "1", n, at([](const R& r) { return r.change; })),
                    io::column("elasticity", "1", n, at([](const R& r) { return r.elasticity; })),
                    io::column("wavel_j_per_token", "J/token", n, at([](const R& r) { return r.j_per_token; })),
                    io::column("base_wavel_j_per_token", "J/token", n, at([](const R& r) { return r.base_j_per_token; }))}};
}

io::Table hardware_front_table(const config::Config& config, const std::vector<config::Setting>& settings,
                               const std::vector<SettingResult>& results) {
  struct Point {
    std::size_t setting;
    std::size_t entry;
    double tps, j;
  };
  std::map<Problem, std::vector<Point>> problems;
  std::vector<Problem> order;
  for (std::size_t i = 0; i < settings.size() && i < results.size(); ++i) {
    const Problem key = problem_of(settings[i]);
    if (problems.find(key) == problems.end()) order.push_back(key);
    auto& points = problems[key];
    for (std::size_t e = 0; e < results[i].front.size(); ++e) {
      const double tps = results[i].front[e].tokens_per_s;
      points.push_back({i, e, tps, setting_energy(config, settings[i], tps).j_per_token});
    }
  }
  std::vector<std::int64_t> problem_id, id, entry, hardware;
  std::vector<std::string> label;
  std::vector<double> tps, j;
  for (std::size_t q = 0; q < order.size(); ++q) {
    const auto& points = problems[order[q]];
    for (const auto& p : points) {
      const bool dominated = std::any_of(points.begin(), points.end(), [&](const Point& o) {
        return o.tps >= p.tps && o.j <= p.j && (o.tps > p.tps || o.j < p.j);
      });
      if (dominated) continue;
      problem_id.push_back(static_cast<std::int64_t>(q));
      id.push_back(results[p.setting].setting_id);
      entry.push_back(static_cast<std::int64_t>(p.entry));
      hardware.push_back(static_cast<std::int64_t>(settings[p.setting].hardware));
      label.push_back(config.hardware.at(settings[p.setting].hardware).label);
      tps.push_back(p.tps);
      j.push_back(p.j);
    }
  }
  return io::Table{"hardware_front",
                   {{"problem", "1", problem_id},
                    {"setting_id", "1", id},
                    {"point", "1", entry},
                    {"hardware", "1", hardware},
                    {"label", "", label},
                    {"tokens_per_s", "tokens/s", tps},
                    {"j_per_token", "J/token", j}}};
}

void print_sensitivity(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                       const std::vector<SensitivityRow>& rows) {
  if (rows.empty()) return;
  std::map<std::int64_t, const config::Setting*> by_id;
  for (const auto& s : settings) by_id[s.id] = &s;
  std::map<std::int64_t, std::vector<const SensitivityRow*>> per_base;
  for (const auto& r : rows) per_base[r.base_setting_id].push_back(&r);
  out << "Hardware sensitivity (PREDICTED): each row one wafer key changed from the base point; "
         "elasticity = d ln(tokens/s) / d ln(value)\n";
  for (const auto& [base_id, list] : per_base) {
    const auto* best = *std::max_element(list.begin(), list.end(), [](const SensitivityRow* a, const SensitivityRow* b) {
      const double ca = std::isnan(a->change) ? -1e300 : a->change, cb = std::isnan(b->change) ? -1e300 : b->change;
      return ca < cb;
    });
    const auto it = by_id.find(base_id);
    const std::string label = it != by_id.end() ? config::setting_label(config, *it->second) : std::to_string(base_id);
    out << "  " << label << " (#" << base_id << ", " << human(list.front()->base_tokens_per_s, "tok/s")
        << "): most helped by " << best->key << " " << config::format_double(best->base_value) << " -> "
        << config::format_double(best->value);
    std::ostringstream pct;
    pct << std::showpos << std::fixed << std::setprecision(1) << 100.0 * best->change << " %";
    out << " (" << pct.str() << ")\n";
    for (const auto* r : list) {
      std::ostringstream line;
      line << "    " << std::left << std::setw(28) << r->key << std::right << std::setw(12)
           << config::format_double(r->base_value) << " -> " << std::left << std::setw(12)
           << config::format_double(r->value) << std::right << std::showpos << std::fixed << std::setprecision(1)
           << std::setw(8) << 100.0 * r->change << " %" << std::noshowpos << "  elasticity ";
      if (std::isnan(r->elasticity)) {
        line << "-";
      } else {
        line << std::setprecision(2) << (std::abs(r->elasticity) < 0.005 ? 0.0 : r->elasticity);
      }
      line << "  " << std::defaultfloat << std::setprecision(3);
      if (std::isnan(r->j_per_token)) {
        line << "nothing placed";
      } else {
        line << r->j_per_token << " J/token";
      }
      out << line.str() << '\n';
    }
  }
}

}  // namespace wavel::driver
