// The result tables of a sweep (HDF5 and CSV columns with units) and the printed summary.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/distribute.hpp"
#include "wavel/io/results.hpp"
#include "wavel/search/search.hpp"
#include "wavel/sweep/records.hpp"

namespace wavel::driver {

/// Appends a column per field of `Record` that `pick(name, column)` selects (numbers, strings and
/// bools; a bool as 0/1), named and with units as the record's fields() list declares them, with
/// one row per record that `each(row)` feeds (row(const Record&) adds one).
template <class Record, class Pick, class Each>
void add_field_columns(std::vector<io::Column>& out, Pick pick, Each each) {
  const std::size_t first = out.size();
  const Record blank{};
  Record::fields(blank, [&](const char* name, const char* unit, const auto& field,
                               fields::Column column = fields::Column::none) {
    using T = std::decay_t<decltype(field)>;
    if (!pick(name, column)) return;
    if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>) {
      out.push_back({name, unit, std::vector<std::int64_t>{}});
    } else if constexpr (std::is_same_v<T, double>) {
      out.push_back({name, unit, std::vector<double>{}});
    } else if constexpr (std::is_same_v<T, std::string>) {
      out.push_back({name, unit, std::vector<std::string>{}});
    }
  });
  each([&](const Record& r) {
    std::size_t k = first;
    Record::fields(r, [&](const char* name, const char*, const auto& field,
                          fields::Column column = fields::Column::none) {
      using T = std::decay_t<decltype(field)>;
      if (!pick(name, column)) return;
      if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>) {
        std::get<std::vector<std::int64_t>>(out[k++].values).push_back(static_cast<std::int64_t>(field));
      } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, std::string>) {
        std::get<std::vector<T>>(out[k++].values).push_back(field);
      }
    });
  });
}

/// The `settings` table: one row per setting, columns with units.
io::Table settings_table(const config::Config& config, const std::vector<config::Setting>& settings,
                         const std::vector<SettingResult>& results);

/// The `front` table: every front point of every setting (joules per token on its hardware point).
io::Table front_table(const config::Config& config, const std::vector<config::Setting>& settings,
                      const std::vector<SettingResult>& results);

/// The `sim_pairs` and `sim_op_pairs` tables: model against simulation per schedule and per op.
io::Table sim_pairs_table(const std::vector<SettingResult>& results);
io::Table sim_op_pairs_table(const std::vector<SettingResult>& results);

/// The `search_stats` table: work counters, wall time and evaluation rate per setting (these vary
/// with the rank count and run to run; the fronts do not).
io::Table search_stats_table(const std::vector<SettingResult>& results);

/// The `rank_stats` table: tasks, nodes, evaluations, busy and idle time per rank.
io::Table rank_stats_table(const std::vector<engine::RankStats>& ranks);

/// The `schedules` table: setting_id, schedule name, MeshIR text (texts left on disk are read
/// back through `texts` one slab at a time as the table is written).
io::Table schedules_table(const std::vector<SettingResult>& results, const TextFetch& texts = {});

/// A dry run estimates the search size of this many settings (about 0.05 s each on quickstart).
constexpr std::size_t kEstimatedSettings = 2000;

/// Prints the human-readable result table (a dry run's with the search size `estimates`).
void print_settings(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                    const std::vector<SettingResult>& results,
                    const std::vector<search::SearchSizeEstimate>& estimates = {});

}  // namespace wavel::driver
