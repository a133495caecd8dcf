// The PE timing constants' names, units and bounds (pe_timing.hpp).
#include "wavel/wafer/pe_timing.hpp"

namespace wavel::wafer {

const std::vector<PeTimingInfo>& pe_timing_registry() {
  // Bounds: at least a cycle where the hardware cannot do it in less, and far above anything the
  // kernel measurements show (tens to a few hundred cycles), so a fit that reaches one is reported.
  static const std::vector<PeTimingInfo> registry{
      {"scalar_op_cycles", "cycles/instruction", 0.25, 1e3, &PeTiming::scalar_op_cycles,
       "one scalar instruction (a DSR load, an address or offset update)"},
      {"vector_op_setup_cycles", "cycles/instruction", 0, 1e3, &PeTiming::vector_op_setup_cycles,
       "one vector (DSD) instruction beyond its element cycles: descriptor and loop set-up"},
      {"task_launch_cycles", "cycles/task", 0, 1e4, &PeTiming::task_launch_cycles,
       "waking a task on a PE (a MeshGEMM step or alignment shift, a later reduction round, a relay)"},
      {"kernel_launch_cycles", "cycles/op", 0, 1e5, &PeTiming::kernel_launch_cycles,
       "entering an op on a PE: its first task and descriptors (routes are static)"},
      {"colour_switch_cycles", "cycles/switch", 0, 1e5, &PeTiming::colour_switch_cycles,
       "re-configuring routes when consecutive ops reduce along different axes"},
      {"stream_latency_cycles", "cycles/stage", 0, 1e4, &PeTiming::stream_latency_cycles,
       "a wavelet's way down a ramp, through the add and back up: one reduction stage"},
      {"router_cycles_per_hop", "cycles/hop", 0, 1e2, &PeTiming::router_cycles_per_hop,
       "a wavelet's time in each router on a pre-configured route beyond the wafer's alpha_cycles_per_hop"},
  };
  return registry;
}

bool is_nominal(const PeTiming& timing) {
  const PeTiming nominal;
  for (const auto& info : pe_timing_registry()) {
    if (timing.*info.field != nominal.*info.field) return false;
  }
  return true;
}

}  // namespace wavel::wafer
