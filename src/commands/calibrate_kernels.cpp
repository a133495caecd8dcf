// `calibrate KERNEL.yaml...`: the kernel constants fitted on WSE-3 hardware kernel measurements.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>
#include <functional>
#include <set>
#include <sstream>

#include "wavel/calibrate/crossval.hpp"
#include "wavel/calibrate/fit.hpp"
#include "wavel/calibrate/kernels.hpp"
#include "wavel/common/error.hpp"
#include "wavel/cost/fit_provenance.hpp"
#include "wavel/commands/commands.hpp"
#include "wavel/commands/reference_cv.hpp"
#include "wavel/io/results.hpp"
#include "wavel/compare/sim_timing_fit.hpp"
#include "wavel/version_info.hpp"

namespace wavel::driver {

namespace fs = std::filesystem;

namespace {

using calibrate::KernelKind;
using calibrate::KernelPoint;

// MAPE and the worst point of the selected points; NaN where none is selected.
struct Errors {
  double mape_pct = std::nan("");
  double max_pct = std::nan("");
  std::size_t points = 0;
};

Errors errors_of(const std::vector<double>& predicted, const std::vector<double>& measured,
                 const std::function<bool(std::size_t)>& selected) {
  std::vector<double> p, m;
  double worst = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i) {
    if (!selected(i) || !std::isfinite(predicted[i])) continue;
    p.push_back(predicted[i]);
    m.push_back(measured[i]);
    worst = std::max(worst, 100.0 * std::abs(calibrate::rel_error(predicted[i], measured[i])));
  }
  Errors e;
  e.points = p.size();
  if (!p.empty()) {
    e.mape_pct = calibrate::mape_pct(p, m);
    e.max_pct = worst;
  }
  return e;
}

std::vector<double> predictions(const calibrate::ValidationReport& r) {
  std::vector<double> out;
  for (const auto& p : r.points) out.push_back(p.predicted);
  return out;
}

io::Table kernel_table(const std::vector<KernelPoint>& points, const calibrate::ValidationReport& before,
                       const calibrate::ValidationReport& after, const calibrate::LeaveOneSideOut& cv,
                       const std::vector<double>& nominal, const std::vector<double>& at_start,
                       const std::vector<double>& simulated) {
  const std::size_t rows = points.size();
  const auto at = [&](auto get) { return [&, get](std::size_t i) { return get(points[i]); }; };
  return io::Table{
      "kernel_validation",
      {io::column("kernel", "", rows, at([](const KernelPoint& p) { return calibrate::to_string(p.kind); })),
       io::column("P", "PEs", rows, at([](const KernelPoint& p) { return p.side_pes; })),
       io::column("M", "elements", rows, at([](const KernelPoint& p) { return p.m; })),
       io::column("K", "elements", rows, at([](const KernelPoint& p) { return p.k; })),
       io::column("N", "elements", rows, at([](const KernelPoint& p) { return p.n; })),
       io::column("group_num", "1", rows, at([](const KernelPoint& p) { return p.groups; })),
       io::column("L", "PEs", rows, at([](const KernelPoint& p) { return p.hops; })),
       io::column("file_line", "1", rows, at([](const KernelPoint& p) { return p.line; })),
       io::column("held_out", "1", rows, [&](std::size_t i) { return after.points[i].held_out; }),
       io::column("measured_cycles", "cycles", rows, at([](const KernelPoint& p) { return p.mean_cycles; })),
       io::column("predicted_cycles_start", "cycles", rows, [&](std::size_t i) { return before.points[i].predicted; }),
       io::column("predicted_cycles", "cycles", rows, [&](std::size_t i) { return after.points[i].predicted; }),
       io::column("rel_error", "1", rows, [&](std::size_t i) { return after.points[i].rel_error; }),
       io::column("cv_predicted_cycles", "cycles", rows, [&](std::size_t i) { return cv.predicted[i]; }),
       io::column("cv_rel_error", "1", rows,
                  [&](std::size_t i) {
                    return std::isfinite(cv.predicted[i]) ? calibrate::rel_error(cv.predicted[i], points[i].mean_cycles)
                                                          : std::nan("");
                  }),
       {"sim_cycles_nominal", "cycles", nominal},
       {"sim_cycles_start", "cycles", at_start},
       {"sim_cycles", "cycles", simulated}}};
}

}  // namespace

void calibrate_kernels_command(const std::vector<std::string>& kernel_paths, const std::string& wafer_preset,
                               const std::string& params_path, const std::vector<std::string>& fit_names,
                               const std::string& output_dir, const engine::RunContext& context, std::ostream& out) {
  const auto wafer = wafer::find_wafer_preset(wafer_preset);
  if (!wafer) throw UsageError("unknown wafer preset '" + wafer_preset + "' (--wafer)");
  std::vector<calibrate::KernelSet> sets;
  std::set<KernelKind> kinds;
  for (const auto& path : kernel_paths) {
    sets.push_back(calibrate::parse_kernel_set(engine::read_file_on_root(path, context.comm), path));
    calibrate::check_on_wafer(sets.back(), *wafer);
    if (!kinds.insert(sets.back().kind).second) {
      throw UsageError("two files of kernel '" + calibrate::to_string(sets.back().kind) + "' (" + path +
                       "); give one file per kernel");
    }
  }
  const cost::CostParams start = params_for(*wafer, params_path);
  const auto names = fit_names.empty() ? calibrate::kernel_fit_names(sets) : fit_names;
  const auto points = calibrate::all_points(sets);
  const auto held = calibrate::kernel_held_out_mask(points);
  const auto problem = calibrate::kernel_problem(points, held, *wafer);
  std::string label;
  for (const auto& p : kernel_paths) label += (label.empty() ? "" : ", ") + p;
  calibrate::PointSource source{label, {}, {}};
  for (const auto& p : points) {
    source.lines.push_back(p.line);
    source.columns.push_back(p.column);
  }
  const auto result = calibrate::calibrate(problem, source, start, names);
  const auto uncertainty = calibrate::estimate_uncertainty(problem, label, result);
  const auto cv = calibrate::leave_one_side_out(points, *wafer, start, names);
  // The simulator twice: at its nominal timing (nothing fitted: a check of its physics alone) and
  // with its own timing fitted on the same training points.
  wafer::WaferParams nominal_wafer = *wafer;
  nominal_wafer.pe_timing = wafer::PeTiming{};
  const auto nominal = simulate_kernel_points(points, nominal_wafer);
  wafer::WaferParams start_wafer = *wafer;
  if (!params_path.empty()) start_wafer.pe_timing = cost::load_pe_timing(params_path, start_wafer.pe_timing);
  // And at the --params timing, fitted elsewhere (end to end, other kernels): a test on points it never saw.
  const auto at_start = params_path.empty() ? nominal : simulate_kernel_points(points, start_wafer);
  const SimTimingFit sim_fit = fit_sim_timing(points, held, start_wafer);
  const auto& simulated = sim_fit.simulated;
  const std::string dir = output_dir.empty() ? default_dir("calibrate", kernel_paths.front()) : output_dir;
  const engine::OutputDirLock lock = engine::make_output_dir(dir, context.comm);

  std::vector<double> measured;
  for (const auto& p : points) measured.push_back(p.mean_cycles);
  const auto before = predictions(result.before);
  const auto after = predictions(result.after);
  struct Row {
    std::string scope;
    Errors start, train, test, cv, sim, sim_start, sim_train, sim_test;
  };
  std::vector<Row> rows;
  auto row_for = [&](const std::string& scope, const std::function<bool(std::size_t)>& in) {
    rows.push_back(Row{scope, errors_of(before, measured, in),
                       errors_of(after, measured, [&](std::size_t i) { return in(i) && !held[i]; }),
                       errors_of(after, measured, [&](std::size_t i) { return in(i) && held[i]; }),
                       errors_of(cv.predicted, measured, in), errors_of(nominal, measured, in),
                       errors_of(at_start, measured, in),
                       errors_of(simulated, measured, [&](std::size_t i) { return in(i) && !held[i]; }),
                       errors_of(simulated, measured, [&](std::size_t i) { return in(i) && held[i]; })});
  };
  for (const auto& s : sets) {
    row_for(calibrate::to_string(s.kind), [&, kind = s.kind](std::size_t i) { return points[i].kind == kind; });
  }
  row_for("all", [](std::size_t) { return true; });

  std::ostringstream header;
  header << "Fitted by: wavel-dse calibrate";
  for (const auto& p : kernel_paths) header << ' ' << p;
  header << " --wafer " << wafer_preset;
  if (!params_path.empty()) header << " --params " << params_path;
  header << " --fit ";
  for (std::size_t i = 0; i < result.fit_names.size(); ++i) header << (i ? "," : "") << result.fit_names[i];
  header << "\nTool: " << WAVEL_VERSION << " (git " << WAVEL_GIT_HASH << ")\n"
         << "Kernel level: " << points.size() << " " << wafer_preset
         << " hardware kernel points; least squares (Levenberg-Marquardt) in log space on " << result.after.train_points
         << " training points, second-largest grid side of each kernel held out";
  for (const auto& r : rows) {
    header << "\n  " << r.scope << ": MAPE train " << percent(r.train.mape_pct) << ", held-out " << percent(r.test.mape_pct)
           << "; leave-one-P-out MAPE " << percent(r.cv.mape_pct) << ", worst " << percent(r.cv.max_pct)
           << "; simulator (unfitted) MAPE " << percent(r.sim.mape_pct);
  }
  std::ostringstream sim_header;
  sim_header << "The simulator's PE timing (only the simulator reads it), fitted on the same training points\n"
             << "through the simulator's own loops (" << sim_fit.outcome.iterations << " iterations); fitted:";
  for (const auto* info : sim_fit.fitted_names) sim_header << " " << info->name;
  sim_header << "\nThe others keep their nominal values: no kernel measurement runs them.";
  for (const auto& r : rows) {
    sim_header << "\n  " << r.scope << ": MAPE unfitted " << percent(r.sim.mape_pct) << ", train "
               << percent(r.sim_train.mape_pct) << ", held-out " << percent(r.sim_test.mape_pct) << " (worst "
               << percent(r.sim_test.max_pct) << ")";
  }
  sim_header << '\n' << sim_timing_bound_warnings(sim_fit);
  header << "\nThe other parameters keep their start values; end-to-end calibration fits those (see docs/calibration.md).";
  const std::string warnings = bound_warnings(result);
  if (const auto w = bound_warnings(result); !w.empty()) header << '\n' << w.substr(0, w.size() - 1);
  std::vector<cost::FitStep> fits = params_path.empty() ? std::vector<cost::FitStep>{} : cost::load_fits(params_path);
  fits.push_back({wafer_preset, "kernel runs: " + label, result.fit_names});
  cost::CostParams written = result.fitted;
  if (std::find(names.begin(), names.end(), "gemm_k_cycles") != names.end()) {
    written.scalar_op_cycles = calibrate::scalar_op_cycles_from_k_iteration(written.gemm_k_cycles);
    header << "\nscalar_op_cycles = gemm_k_cycles / " << calibrate::kScalarInstructionsPerKIteration
           << ": the k-iteration's scalar instructions (calibrate/kernels.hpp)";
    fits.push_back({wafer_preset, "derived: gemm_k_cycles / " + std::to_string(calibrate::kScalarInstructionsPerKIteration),
                    {"scalar_op_cycles"}});
  }
  const std::string pairing = cost::generation_pairing_problem(fits);
  if (!pairing.empty()) header << "\nwarning: " << pairing;
  std::string method = uncertainty.method;
  if (!uncertainty.fixed.empty()) method += "; held at a bound:";
  for (const auto& name : uncertainty.fixed) method += " " + name;
  const std::string params_text = cost::params_to_yaml(written, header.str()) +
                                  cost::uncertainty_to_yaml({uncertainty.names, uncertainty.ln_covariance, method}) +
                                  cost::pe_timing_to_yaml(sim_fit.fitted, sim_header.str()) + cost::fits_to_yaml(fits);

  const io::Table table = kernel_table(points, result.before, result.after, cv, nominal, at_start, simulated);
  const io::Table fitted = calibrate::calibration_table(result);
  auto attrs = command_provenance("calibrate", label, params_path, context);
  attrs.push_back({"params_yaml", params_text});
  attrs.push_back({"wafer", wafer_preset});
  for (const auto& r : rows) {
    attrs.push_back({r.scope + "_mape_pct_start", r.start.mape_pct});
    attrs.push_back({r.scope + "_train_mape_pct", r.train.mape_pct});
    attrs.push_back({r.scope + "_test_mape_pct", r.test.mape_pct});
    attrs.push_back({r.scope + "_cv_side_mape_pct", r.cv.mape_pct});
    attrs.push_back({r.scope + "_cv_side_max_abs_error_pct", r.cv.max_pct});
    attrs.push_back({r.scope + "_sim_mape_pct", r.sim.mape_pct});
    attrs.push_back({r.scope + "_sim_start_mape_pct", r.sim_start.mape_pct});
    attrs.push_back({r.scope + "_sim_max_abs_error_pct", r.sim.max_pct});
    attrs.push_back({r.scope + "_sim_fitted_train_mape_pct", r.sim_train.mape_pct});
    attrs.push_back({r.scope + "_sim_fitted_test_mape_pct", r.sim_test.mape_pct});
    attrs.push_back({r.scope + "_sim_fitted_test_max_abs_error_pct", r.sim_test.max_pct});
  }
  io::write_result_files({(fs::path(dir) / "results.h5").string(), attrs, {table, fitted},
                          {{(fs::path(dir) / "params.yaml").string(), params_text},
                           {(fs::path(dir) / "kernel_validation.csv").string(), io::csv_text(table)},
                           {(fs::path(dir) / "calibration.csv").string(), io::csv_text(fitted)}}},
                         context.comm);
  if (context.rank != 0) return;
  std::cerr << warnings;
  for (const auto& w : cv.bound_warnings) std::cerr << "warning: leave-one-P-out fold " << w << "\n";
  std::cerr << sim_timing_bound_warnings(sim_fit);
  out << "Kernel calibration on " << points.size() << " " << wafer_preset << " hardware points";
  std::size_t skipped = 0;
  for (const auto& s : sets) skipped += s.skipped;
  if (skipped > 0) out << " (" << skipped << " failed runs skipped)";
  out << "\n\n"
      << std::left << std::setw(10) << "kernel" << std::right << std::setw(8) << "points" << std::setw(14)
      << "MAPE start" << std::setw(13) << "MAPE train" << std::setw(15) << "MAPE held-out" << std::setw(14)
      << "LOPO MAPE" << std::setw(14) << "LOPO worst" << std::setw(12) << "sim MAPE" << std::setw(12) << "sim worst"
      << std::setw(12) << "sim train" << std::setw(14) << "sim held-out" << '\n';
  for (const auto& r : rows) {
    out << std::left << std::setw(10) << r.scope << std::right << std::setw(8) << r.start.points << std::setw(14)
        << percent(r.start.mape_pct) << std::setw(13) << percent(r.train.mape_pct) << std::setw(15)
        << percent(r.test.mape_pct) << std::setw(14) << percent(r.cv.mape_pct) << std::setw(14) << percent(r.cv.max_pct)
        << std::setw(12) << percent(r.sim.mape_pct) << std::setw(12) << percent(r.sim.max_pct) << std::setw(12)
        << percent(r.sim_train.mape_pct) << std::setw(14) << percent(r.sim_test.mape_pct) << '\n';
  }
  out << "(LOPO: leave-one-P-out, each grid side's points predicted by a fit that saw no point of that side; "
      << cv.folds << " folds; sim MAPE/worst: the mesh simulator at its nominal PE timing, nothing fitted; sim train/"
      << "held-out: with its own timing fitted on the training points)\n";
  if (!params_path.empty()) {
    out << "simulator at the timing of " << params_path << " (fitted elsewhere, unfitted here):";
    for (const auto& r : rows) out << ' ' << r.scope << ' ' << percent(r.sim_start.mape_pct);
    out << '\n';
  }
  out << '\n';
  print_fitted_parameters(out, result);
  out << static_cast<const calibrate::SolveStats&>(result) << '\n';
  out << "\nsimulator PE timing (sim_timing):\n";
  print_sim_timing_fit(out, sim_fit);
  out << static_cast<const calibrate::SolveStats&>(sim_fit.outcome) << '\n';
  std::cerr << "written: " << dir << "/params.yaml (use with --params), kernel_validation.csv, calibration.csv, results.h5\n";
}

}  // namespace wavel::driver
