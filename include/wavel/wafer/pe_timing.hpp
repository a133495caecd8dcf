// Software timing of a processing element: what its tasks and instructions cost in cycles. Only the
// simulator reads it (the cost model has its own, per-kernel constants), and it is measured, not
// specified: `calibrate KERNEL.yaml...` fits it on hardware kernel runs through the simulator's own
// loops and writes it as the `sim_timing` section of a params file.
#pragma once

#include <string>
#include <vector>

namespace wavel::wafer {

/// Cycles of the wafer clock. The defaults are nominal (one cycle per scalar instruction, a few per
/// task): the simulator as designed before any measurement, kept to report it unfitted.
struct PeTiming {
  double scalar_op_cycles = 1.0;               ///< one scalar instruction (a DSR load, an offset update)
  double vector_op_setup_cycles = 3.0;         ///< per vector (DSD) instruction: descriptor and loop set-up
  double task_launch_cycles = 16.0;            ///< waking a task on a PE (a step, an alignment shift, a relay)
  double kernel_launch_cycles = 64.0;          ///< entering an op on a PE: its first task and DSDs
  double colour_switch_cycles = 32.0;          ///< router re-configuration when an op's routes change axis
  double stream_latency_cycles = 3.0;          ///< a wavelet down the ramp, through the add and back up
  double router_cycles_per_hop = 0.0;          ///< a wavelet's time in each router beyond the wafer's alpha
};

/// One timing constant: its key in a params file's `sim_timing` section, units, bounds and meaning.
struct PeTimingInfo {
  std::string name;
  std::string units;
  double min_value;
  double max_value;
  double PeTiming::*field;
  std::string description;
};

/// Every constant, in the order the params file lists them.
const std::vector<PeTimingInfo>& pe_timing_registry();

/// True if every constant has its nominal value: nothing measured reached the simulator.
bool is_nominal(const PeTiming& timing);

}  // namespace wavel::wafer
