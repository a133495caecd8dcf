// The main job: expand the sweep, evaluate each setting across ranks, gather and write results.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/driver/runtime.hpp"
#include "wavel/io/results.hpp"

namespace wavel::driver {

/// Workload and wafer figures of one setting.
struct SettingSummary {
  std::int64_t setting_id = 0;
  std::int64_t tokens_per_step = 0;
  std::int64_t context_tokens = 0;
  std::int64_t flops_per_step = 0;
  std::int64_t param_bytes = 0;
  std::int64_t kv_cache_bytes = 0;
  std::int64_t activation_peak_bytes = 0;  ///< largest input+output footprint of a single op
  std::int64_t sram_required_bytes = 0;    ///< params + KV cache + activation peak
  std::int64_t wafer_sram_bytes = 0;
  std::int64_t fits_sram = 0;              ///< 1 if sram_required_bytes <= wafer_sram_bytes
  double roofline_step_s = 0;              ///< lower bound: FLOPs / wafer peak (not a prediction)
  double roofline_tokens_per_s = 0;        ///< upper bound on tokens/s implied by roofline_step_s
};

/// Builds the setting's workload and summarises it.
SettingSummary summarize_setting(const config::Config& config, const config::Setting& setting);

/// Summaries of every setting, computed by the rank that owns each setting id (round-robin) and
/// gathered on every rank in id order, so all ranks hold identical tables.
std::vector<SettingSummary> summarize_sweep(const config::Config& config, const std::vector<config::Setting>& settings,
                                            const RunContext& context);

/// The `settings` table: one row per setting, columns with units.
io::Table settings_table(const config::Config& config, const std::vector<config::Setting>& settings,
                         const std::vector<SettingSummary>& summaries);

/// Prints a table with aligned columns (selected human-friendly columns).
void print_settings(std::ostream& out, const config::Config& config, const std::vector<config::Setting>& settings,
                    const std::vector<SettingSummary>& summaries);

/// Validates and prints the resolved config and the settings; writes nothing.
void dry_run(const config::Config& config, const RunContext& context, std::ostream& out);

/// Runs the sweep and writes results.h5 and summary.csv under config.output.dir.
void run(const config::Config& config, const RunContext& context, std::ostream& out);

}  // namespace wavel::driver
