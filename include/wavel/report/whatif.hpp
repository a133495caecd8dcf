// Hardware what-if results: the hardware points, energy per token, the sensitivity of each
// setting's best throughput to each swept wafer key, and the front over hardware and schedules.
#pragma once

#include <ostream>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/cost/energy.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/io/results.hpp"

namespace wavel::driver {

/// Energy of a setting's deployment serving `tokens_per_s` on its hardware point (model-predicted).
cost::TokenEnergy setting_energy(const config::Config& config, const config::Setting& setting, double tokens_per_s);

/// The `hardware` table: one row per hardware point with every wafer figure it runs with.
io::Table hardware_table(const config::Config& config);

/// One setting measured against the same problem on the base hardware point, one key changed.
struct SensitivityRow {
  std::int64_t setting_id = 0, base_setting_id = 0;
  std::string key;
  double base_value = 0, value = 0;
  double tokens_per_s = 0, base_tokens_per_s = 0;  ///< the best schedule's (0: nothing placed)
  double change = 0;       ///< tokens_per_s / base_tokens_per_s - 1
  double elasticity = 0;   ///< ln(tokens ratio) / ln(value ratio): NaN when a value or a throughput is 0
  double j_per_token = 0, base_j_per_token = 0;
};

/// Every setting whose hardware point differs from a base point (HardwarePoint::base) in exactly
/// one swept key, against the setting of the same problem on that base point, in setting order.
std::vector<SensitivityRow> sensitivity_rows(const config::Config& config, const std::vector<config::Setting>& settings,
                                             const std::vector<SettingResult>& results);
io::Table sensitivity_table(const std::vector<SensitivityRow>& rows);

/// The `hardware_front` table: for each problem (a setting less its hardware point), the Pareto
/// front over every hardware point's front points of (tokens/s up, joules per token down).
io::Table hardware_front_table(const config::Config& config, const std::vector<config::Setting>& settings,
                               const std::vector<SettingResult>& results);

/// Per problem, the single hardware change that helps its throughput most, then every row.
void print_sensitivity(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                       const std::vector<SensitivityRow>& rows);

}  // namespace wavel::driver
