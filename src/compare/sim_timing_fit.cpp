// Fits the simulator's PE timing on kernel measurements (sim_timing_fit.hpp).
#include "wavel/compare/sim_timing_fit.hpp"

#include <algorithm>
#include <functional>
#include <iomanip>
#include <ostream>
#include <set>

#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/predict.hpp"
#include "wavel/sim/simulate.hpp"

namespace wavel::driver {

using calibrate::KernelKind;
using calibrate::KernelPoint;

namespace {

double simulate_kernel_point(const KernelPoint& p, const wafer::WaferParams& wafer) {
  meshir::Schedule s;
  s.grid_w_pes = s.grid_h_pes = p.side_pes;
  s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
  s.sram_reserved_per_pe_bytes = wafer.sram_reserved_per_pe_bytes;
  s.colours = wafer.routable_colours;
  s.regions = {meshir::Rect{0, 0, p.side_pes, p.side_pes}};
  meshir::PlacedOp op;
  op.name = calibrate::to_string(p.kind);
  op.used = s.regions[0];
  op.reduce_axis = meshir::Axis::x;
  double repeats = 1.0;
  switch (p.kind) {
    case KernelKind::meshgemm:
      op.kernel = meshir::Kernel::meshgemm;
      op.work.m = p.m;
      op.work.k = p.k;
      op.work.n = p.n;
      break;
    case KernelKind::meshgemv:
      op.kernel = meshir::Kernel::meshgemv;
      op.group = p.side_pes / std::max<std::int64_t>(1, p.groups);
      op.work.m = 1;
      op.work.k = p.m;
      op.work.n = p.n;
      break;
    case KernelKind::shift:
      op.kernel = meshir::Kernel::kv_shift;
      op.work.output_bytes = 2 * p.m * p.n;  // FP16, the whole matrix over the P x P PEs
      repeats = static_cast<double>(p.hops);
      break;
  }
  s.ops = {op};
  // A kernel point's steps and alignment rounds are all alike, so 4 of each reach the period: at
  // most 0.16 % from 16 on the shared WSE-3 points, at a quarter of the time (the fit runs it ~100x).
  sim::SimOptions options;
  options.max_simulated_steps = 4;
  const double cycles = sim::simulate_op(s, 0, wafer, options).cycles;
  if (p.kind != KernelKind::shift) return cycles;
  // One launch, then L store-and-forward hops: each the one-hop op without its launch (the send and
  // the receiving PE's task).
  const double launch = wafer.pe_timing.kernel_launch_cycles;
  return launch + repeats * (cycles - launch);
}

}  // namespace

std::vector<double> simulate_kernel_points(const std::vector<KernelPoint>& points, const wafer::WaferParams& wafer) {
  std::vector<double> out;
  out.reserve(points.size());
  for (const auto& p : points) out.push_back(simulate_kernel_point(p, wafer));
  return out;
}

std::vector<const wafer::PeTimingInfo*> sim_timing_fit_names(const std::vector<KernelPoint>& points) {
  std::set<KernelKind> kinds;
  for (const auto& p : points) kinds.insert(p.kind);
  // Which loop of which kernel runs each constant (sim/src/kernels): the k-iteration's scalars and
  // the step and alignment tasks only in MeshGEMM, vector set-up in MeshGEMM and MeshGEMV, the
  // reduce tree's stages and its long routes (level 2 and the broadcast) in MeshGEMV, the op's
  // entry in all three.
  std::set<std::string> names;
  if (!kinds.empty()) names.insert("kernel_launch_cycles");
  if (kinds.count(KernelKind::meshgemm) != 0) {
    names.insert({"scalar_op_cycles", "vector_op_setup_cycles", "task_launch_cycles"});
  }
  if (kinds.count(KernelKind::meshgemv) != 0) {
    names.insert({"vector_op_setup_cycles", "stream_latency_cycles", "router_cycles_per_hop"});
  }
  std::vector<const wafer::PeTimingInfo*> out;
  for (const auto& info : wafer::pe_timing_registry()) {
    if (names.count(info.name) != 0) out.push_back(&info);
  }
  return out;
}

namespace {

// Least squares in log space of `one` (point i at a timing) over the named constants; fills every
// field of the fit.
SimTimingFit fit_named(const std::vector<double>& measured, const std::vector<bool>& held_out,
                       const wafer::WaferParams& wafer, std::vector<const wafer::PeTimingInfo*> names,
                       const std::function<double(std::size_t, const wafer::WaferParams&)>& one) {
  SimTimingFit fit;
  fit.start = wafer.pe_timing;
  fit.fitted_names = std::move(names);
  std::vector<calibrate::ParamBounds> bounds;
  std::vector<double> start;
  for (const auto* info : fit.fitted_names) {
    bounds.push_back({info->min_value, info->max_value});
    start.push_back(fit.start.*(info->field));
  }
  auto wafer_at = [&](const std::vector<double>& v) {
    wafer::WaferParams w = wafer;
    for (std::size_t i = 0; i < v.size(); ++i) w.pe_timing.*(fit.fitted_names[i]->field) = v[i];
    return w;
  };
  const calibrate::VectorPredictor predict = [&](std::size_t i, const std::vector<double>& v) {
    return one(i, wafer_at(v));
  };
  fit.outcome = calibrate::fit_log_least_squares(measured, held_out, predict, bounds, start);
  const wafer::WaferParams fitted = wafer_at(fit.outcome.fitted);
  fit.fitted = fitted.pe_timing;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (calibrate::on_bound(fit.outcome.fitted[i], bounds[i])) fit.on_bounds.push_back(fit.fitted_names[i]->name);
  }
  for (std::size_t i = 0; i < measured.size(); ++i) {
    fit.simulated_start.push_back(one(i, wafer));
    fit.simulated.push_back(one(i, fitted));
  }
  return fit;
}

double simulate_reference_point(const calibrate::ReferencePoint& p, const meshir::Schedule& schedule,
                                const wafer::WaferParams& wafer) {
  sim::SimOptions options;
  options.max_simulated_steps = 4;  // as for the kernel points: the steps are alike
  return sim::simulate(schedule, wafer, p.phase == workload::Phase::decode, p.tokens(), options).tpr_tokens_per_s;
}

}  // namespace

SimTimingFit fit_sim_timing(const std::vector<KernelPoint>& points, const std::vector<bool>& held_out,
                            const wafer::WaferParams& wafer) {
  std::vector<double> measured;
  for (const auto& p : points) measured.push_back(p.mean_cycles);
  return fit_named(measured, held_out, wafer, sim_timing_fit_names(points),
                   [&](std::size_t i, const wafer::WaferParams& w) { return simulate_kernel_point(points[i], w); });
}

SimTimingFit fit_sim_timing_end_to_end(const calibrate::ReferenceSet& set, const wafer::WaferParams& wafer) {
  std::vector<double> measured;
  std::vector<meshir::Schedule> schedules;  // built once: they do not depend on the timing
  for (const auto& p : set.points) {
    measured.push_back(p.tpr_tokens_per_s);
    schedules.push_back(calibrate::waferllm_reference_schedule(p, wafer));
  }
  std::vector<const wafer::PeTimingInfo*> names;
  for (const auto& info : wafer::pe_timing_registry()) {
    if (info.name == "scalar_op_cycles" || info.name == "router_cycles_per_hop") names.push_back(&info);
  }
  return fit_named(measured, calibrate::held_out_mask(set), wafer, names, [&](std::size_t i, const wafer::WaferParams& w) {
    return simulate_reference_point(set.points[i], schedules[i], w);
  });
}

void print_sim_timing_fit(std::ostream& out, const SimTimingFit& fit) {
  for (const auto* info : fit.fitted_names) {
    out << "  " << std::left << std::setw(32) << info->name << std::right << std::setw(10) << fit.start.*(info->field)
        << " -> " << std::setw(12) << fit.fitted.*(info->field) << " " << info->units << '\n';
  }
}

std::string sim_timing_bound_warnings(const SimTimingFit& fit) {
  std::string out;
  for (const auto* info : fit.fitted_names) {
    if (std::find(fit.on_bounds.begin(), fit.on_bounds.end(), info->name) == fit.on_bounds.end()) continue;
    out += "warning: " +
           calibrate::bound_warning("sim_timing." + info->name, fit.fitted.*(info->field),
                                    {info->min_value, info->max_value}, info->units) +
           "\n";
  }
  return out;
}

}  // namespace wavel::driver
