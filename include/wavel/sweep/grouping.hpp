// Request grouping across a sweep: R concurrent requests can always be served as R / R' groups of
// R' requests one after another, at the R'-request throughput and latency. A schedule is therefore
// never reported slower at R than at a divisor R' of R that the same run holds.
#pragma once

#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/sweep/records.hpp"

namespace wavel::driver {

/// For every setting and every schedule (Full-Chip, WaferLLM, the search's best), takes the figures
/// of the same schedule kind at the setting with the same model, phase and lengths whose request
/// count R' divides R and gives the highest throughput, when that beats serving all R at once; the
/// taken figures record request_groups = R / R'. The best schedule enters the front as a point of
/// source "grouped:<g>x<R'>" (own points it dominates leave). Intervals are recomputed for settings
/// that changed, under the same parameter draws. `results[i]` belongs to `settings[i]`; the
/// outcome depends only on them (not on ranks), so it is deterministic. MeshIR texts left on disk
/// are read through `texts`.
void apply_request_grouping(const config::Config& config, const std::vector<config::Setting>& settings,
                            std::vector<SettingResult>& results, const TextFetch& texts = {});

}  // namespace wavel::driver
