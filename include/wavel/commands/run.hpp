// The main job: expand the sweep, evaluate each setting across ranks, gather and write results.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/config/sweep.hpp"
#include "wavel/engine/runtime.hpp"

namespace wavel::driver {

/// Which settings of the sweep a run covers (a Slurm array task covers one slice).
struct SweepSlice {
  std::int64_t index = -1;  ///< -1: the whole sweep
  std::int64_t count = 0;   ///< tasks the sweep is split into; 0: one per setting
};

/// The settings of the sweep that `slice` selects, ids unchanged.
std::vector<config::Setting> selected_settings(const config::Config& config, const SweepSlice& slice);

/// Validates and prints the resolved config and the settings; writes nothing.
void dry_run(const config::Config& config, const engine::RunContext& context, std::ostream& out, const SweepSlice& slice = {});

struct RunOptions {
  bool resume = false;  ///< continue from <output dir>/checkpoint.wckp
};

/// Runs the sweep (or its slice) and writes results.h5 and summary.csv under config.output.dir.
/// SIGUSR1/SIGTERM (or search.checkpoint_interval_s) write <output dir>/checkpoint.wckp; after a
/// signal every rank throws wavel::Error with exit code 75.
void run(const config::Config& config, const engine::RunContext& context, std::ostream& out, const SweepSlice& slice = {},
         const RunOptions& options = {});

}  // namespace wavel::driver
