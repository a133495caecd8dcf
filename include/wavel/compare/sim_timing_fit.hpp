// The simulator's PE timing fitted on hardware kernel measurements through the simulator's own loops.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "wavel/calibrate/kernels.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/calibrate/least_squares.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::driver {

/// The simulator's cycles for one repetition of each point on a P x P region of `wafer` (its
/// pe_timing included): the op with its launch (routes are static, so every repetition enters the
/// kernel's tasks anew); the shift is L one-hop shifts, each a launch and a send.
std::vector<double> simulate_kernel_points(const std::vector<calibrate::KernelPoint>& points,
                                           const wafer::WaferParams& wafer);

/// The timing constants the points' kernels exercise, in registry order.
std::vector<const wafer::PeTimingInfo*> sim_timing_fit_names(const std::vector<calibrate::KernelPoint>& points);

/// A fit of the simulator's timing and where it lands.
struct SimTimingFit {
  wafer::PeTiming start;
  wafer::PeTiming fitted;
  std::vector<const wafer::PeTimingInfo*> fitted_names;
  std::vector<std::string> on_bounds;  ///< fitted constants that ended on a registry bound
  std::vector<double> simulated_start; ///< every point at the start timing
  std::vector<double> simulated;       ///< every point at the fitted timing
  calibrate::VectorFitOutcome outcome;
};

/// Least squares in log space (the solver of the cost model's fits) on the points not held out.
SimTimingFit fit_sim_timing(const std::vector<calibrate::KernelPoint>& points, const std::vector<bool>& held_out,
                            const wafer::WaferParams& wafer);

/// Level 2 for the simulator, as for the model: end-to-end points fit only what the other generation
/// may set differently and no kernel run of its own pins (WSE-2 has no kernel measurements):
/// scalar_op_cycles (the k-iteration, as the model's gemm_k_cycles) and router_cycles_per_hop (the
/// reduce tree's long routes, as the model's alpha). A per-op cost beyond the kernel launch, the
/// model's end-to-end term, was tried here and fitted to zero.
/// Each point is the schedule the cost model's predictor builds (calibrate::waferllm_reference_schedule),
/// simulated; its value the throughput per request. Held-out points as calibrate::held_out_mask.
SimTimingFit fit_sim_timing_end_to_end(const calibrate::ReferenceSet& set, const wafer::WaferParams& wafer);

/// The fitted constants, a line each: name, start -> fitted, units.
void print_sim_timing_fit(std::ostream& out, const SimTimingFit& fit);

/// "warning: sim_timing.NAME ended on its bound" for each constant that did, a line each.
std::string sim_timing_bound_warnings(const SimTimingFit& fit);

}  // namespace wavel::driver
