// The wafer count as a searched dimension: per problem (model, phase, requests, lengths) over the
// sweep's wafer counts, the fewest wafers that hold the whole model, the fastest count, the most
// tokens/s per wafer, and the fewest wafers that meet the config's per-user target.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/report/tables.hpp"
#include "wavel/io/results.hpp"

namespace wavel::driver {

/// One deployment of a problem, chosen over its wafer counts; wafers 0 (and setting -1) when none.
struct WaferCountPick {
  std::int64_t wafers = 0;
  std::int64_t setting_id = -1;
  double tokens_per_s = 0;  ///< the whole deployment's
  double latency_s = 0;     ///< TPOT (decode) or TTFT (prefill) of that front point
};

struct WaferCountRow {
  std::size_t first_setting = 0;  ///< index into the settings of its first wafer count
  std::string wafer_counts;       ///< e.g. "1,2,4"
  WaferCountPick fewest;          ///< fewest wafers whose deployment holds the whole model
  WaferCountPick fastest;         ///< most tokens/s
  WaferCountPick per_wafer;       ///< most tokens/s per wafer
  WaferCountPick target;          ///< fewest wafers with a front point meeting the target
};

/// Rows in order of each problem's first setting. A layer subset is no deployment of the model, so
/// it never counts; a deployment meets the target when a point of its front does (decode: 1 / TPOT
/// >= cluster.target_tpr_tokens_per_s; prefill: TTFT <= cluster.target_ttft_s), the fastest such.
std::vector<WaferCountRow> wafer_count_rows(const std::vector<config::Setting>& settings,
                                            const std::vector<SettingResult>& results, const wafer::ClusterParams& cluster);

/// The `wafer_counts` table (also wafer_counts.csv).
io::Table wafer_counts_table(const config::Config& config, const std::vector<config::Setting>& settings,
                             const std::vector<WaferCountRow>& rows);

/// The same as a terminal table, labelled as predicted.
void print_wafer_counts(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                        const std::vector<WaferCountRow>& rows);

}  // namespace wavel::driver
