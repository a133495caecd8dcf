// Round-number simulator options for hand computation, shared by the simulator's tests.
#pragma once

#include "wavel/sim/simulate.hpp"

namespace wavel::test {

// Round numbers for hand computation: 8 lanes, setup 3 per vector op, launch 64, task 16, hop 1,
// stream latency 3 (the defaults, pinned here so a change of default does not move these tests).
inline sim::SimOptions round_options() {
  sim::MicroArch m;
  m.fmac_lanes = 8;
  m.simd_op_cycles = 1.0;
  m.timing.vector_op_setup_cycles = 3.0;
  m.timing.task_launch_cycles = 16.0;
  m.timing.kernel_launch_cycles = 64.0;
  m.timing.colour_switch_cycles = 32.0;
  m.timing.stream_latency_cycles = 3.0;
  m.hop_cycles = 1.0;
  m.link_bytes_per_cycle = 4;
  m.routable_colours = 24;
  m.sram_read_bytes_per_cycle = 16;
  m.sram_write_bytes_per_cycle = 8;
  m.timing.scalar_op_cycles = 1.0;
  m.k_iteration_scalar_ops = 6;
  sim::SimOptions o;
  o.micro = m;
  return o;
}

}  // namespace wavel::test
