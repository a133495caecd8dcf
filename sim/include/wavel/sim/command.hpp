// `wavel-dse simulate`: run a MeshIR schedule through the simulator beside the cost model.
#pragma once

#include <ostream>
#include <string>

#include "wavel/driver/runtime.hpp"

namespace wavel::sim {

/// Verifies FILE.meshir like `check`, simulates it (sampled, see SimOptions), prints simulated
/// against analytic cycles per op and for the schedule, and writes a Chrome/Perfetto trace to
/// `trace_path` (atomically) when it is not empty.
void simulate_command(const std::string& meshir_path, const std::string& wafer_preset, const std::string& params_path,
                      const std::string& trace_path, const driver::RunContext& context, std::ostream& out);

}  // namespace wavel::sim
