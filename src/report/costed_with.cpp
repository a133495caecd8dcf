#include "wavel/report/costed_with.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/yaml_schema.hpp"

namespace wavel::driver {

namespace {

constexpr const char* kTimingPrefix = "sim_timing.";

template <class T>
const std::vector<T>& column(const io::Table& table, const std::string& name, const std::string& file) {
  for (const auto& c : table.columns) {
    if (c.name != name) continue;
    if (const auto* values = std::get_if<std::vector<T>>(&c.values)) return *values;
    throw InputDataError("results file '" + file + "': column 'cost_params/" + name + "' has the wrong type");
  }
  throw InputDataError("results file '" + file + "': table 'cost_params' has no column '" + name + "'");
}

}  // namespace

io::Table cost_params_table(const config::Config& config) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  std::vector<std::string> names{"wafer_preset", "params_file", "hardware_points"}, units{"", "", "1"},
      text{config.wafer.preset, config.cost.params_path, ""};
  std::vector<double> values{none, none, static_cast<double>(std::max<std::size_t>(1, config.hardware.size()))};
  for (const auto& info : cost::param_registry()) {
    names.push_back(info.name);
    units.push_back(info.units);
    values.push_back(config.cost.params.*(info.field));
    text.emplace_back();
  }
  for (const auto& info : wafer::pe_timing_registry()) {
    names.push_back(kTimingPrefix + info.name);
    units.push_back(info.units);
    values.push_back(config.cost.sim_timing.*(info.field));
    text.emplace_back();
  }
  return io::Table{"cost_params", {{"name", "", names}, {"units", "", units}, {"value", "", values}, {"text", "", text}}};
}

void attach_costed_with(const io::Table& table, const std::string& file, meshir::Schedule& schedule,
                        std::string& params_file, std::int64_t& hardware_points) {
  hardware_points = 1;
  const auto& names = column<std::string>(table, "name", file);
  const auto& values = column<double>(table, "value", file);
  const auto& text = column<std::string>(table, "text", file);
  if (values.size() != names.size() || text.size() != names.size()) {
    throw InputDataError("results file '" + file + "': the columns of 'cost_params' differ in length");
  }
  schedule.costed_params.clear();
  params_file.clear();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == "wafer_preset") {
      schedule.costed_on = text[i];
    } else if (names[i] == "params_file") {
      params_file = text[i];
    } else if (names[i] == "hardware_points") {
      hardware_points = std::isfinite(values[i]) ? static_cast<std::int64_t>(values[i]) : 1;
    } else {
      schedule.costed_params.push_back({names[i], values[i]});
    }
  }
}

void apply_costed_params(const meshir::ParsedSchedule& parsed, const std::string& file, cost::CostParams& params,
                         wafer::PeTiming& timing) {
  std::vector<Diagnostic> problems;
  std::vector<std::string> known_names;  // for did-you-mean
  for (const auto& info : cost::param_registry()) known_names.push_back(info.name);
  for (const auto& info : wafer::pe_timing_registry()) known_names.push_back(kTimingPrefix + info.name);
  const auto& given = parsed.schedule.costed_params;
  for (std::size_t i = 0; i < given.size(); ++i) {
    const int line = i < parsed.lines.costed_params.size() ? parsed.lines.costed_params[i] : 0;
    const std::string& name = given[i].name;
    const double value = given[i].value;
    const auto check = [&](double lo, double hi, const std::string& units) {
      if (value >= lo && value <= hi) return true;
      problems.push_back({file, line, 0, "param." + name,
                          name + " = " + std::to_string(value) + " " + units + " is outside its bounds [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "]"});
      return false;
    };
    bool known = false;
    for (const auto& info : cost::param_registry()) {
      if (info.name != name) continue;
      known = true;
      if (check(info.min_value, info.max_value, info.units)) params.*(info.field) = value;
    }
    for (const auto& info : wafer::pe_timing_registry()) {
      if (kTimingPrefix + info.name != name) continue;
      known = true;
      if (check(info.min_value, info.max_value, info.units)) timing.*(info.field) = value;
    }
    if (!known) {
      const std::string best = yaml::did_you_mean(name, known_names);
      problems.push_back({file, line, 0, "param", "unknown parameter '" + name + "'" +
                                                      (best.empty() ? std::string() : "; did you mean '" + best + "'?")});
    }
  }
  if (!problems.empty()) throw DataError(std::move(problems));
}

}  // namespace wavel::driver
