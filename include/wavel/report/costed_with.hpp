// What a run costed its schedules with, carried from results.h5 through `show` into the MeshIR text
// (`costed_on`, `param` lines) so that `check` and `simulate` cost a shown schedule as the run did.
#pragma once

#include <cstdint>
#include <string>

#include "wavel/config/config.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/io/results.hpp"
#include "wavel/meshir/text.hpp"
#include "wavel/wafer/pe_timing.hpp"

namespace wavel::driver {

/// Table `cost_params` of a run's results.h5: columns name, units, value, text. Rows `wafer_preset`
/// and `params_file` (text), `hardware_points` (how many wafers a what-if swept; 1: none), then every
/// cost parameter and every simulator constant (`sim_timing.NAME`) with the value the run used.
io::Table cost_params_table(const config::Config& config);

/// `schedule` with the run's `costed_on` and `param` lines from a `cost_params` table read from
/// `file`; `params_file` receives the file the run named (or ""), `hardware_points` its row (1 when
/// absent). InputDataError on a malformed table.
void attach_costed_with(const io::Table& table, const std::string& file, meshir::Schedule& schedule,
                        std::string& params_file, std::int64_t& hardware_points);

/// Applies the schedule's `param` lines over `params` and `timing`. A name neither table knows, or
/// a value outside its bounds, is a DataError at its line of `file`.
void apply_costed_params(const meshir::ParsedSchedule& parsed, const std::string& file, cost::CostParams& params,
                         wafer::PeTiming& timing);

}  // namespace wavel::driver
