// Leave-one-model-out and leave-one-grid-out tables and text, and bound warnings, for the reference commands.
#include "wavel/commands/reference_cv.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

#include "wavel/workload/workload.hpp"

namespace wavel::driver {

namespace {

std::string pct(double value) {
  if (!std::isfinite(value)) return "n/a";
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << value << " %";
  return out.str();
}

}  // namespace

CrossValidationReport cross_validation_report(const calibrate::ReferenceSet& set, const calibrate::Predictor& predict,
                                              const cost::CostParams& start, const std::vector<std::string>& fit_names) {
  CrossValidationReport report;
  const auto by_model = calibrate::cross_validate(set, predict, start, fit_names, calibrate::FoldBy::model);
  const auto by_grid = calibrate::cross_validate(set, predict, start, fit_names, calibrate::FoldBy::grid);
  std::ostringstream out;
  out << "Cross-validation (each fold refits";
  for (const auto& n : fit_names) out << ' ' << n;
  out << " without its points):\n";
  out << std::left << std::setw(12) << "model" << std::setw(9) << "phase" << std::right << std::setw(6) << "grid"
      << std::setw(16) << "measured tok/s" << std::setw(22) << "leave-model-out err" << std::setw(21)
      << "leave-grid-out err\n";
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    const auto& p = set.points[i];
    out << std::left << std::setw(12) << p.model << std::setw(9) << workload::to_string(p.phase) << std::right
        << std::setw(6) << p.grid_pes << std::setw(16) << std::fixed << std::setprecision(1) << p.tpr_tokens_per_s
        << std::setw(21) << 100.0 * by_model.rel_error[i] << '%' << std::setw(20) << 100.0 * by_grid.rel_error[i]
        << "%\n";
  }
  out << std::defaultfloat;
  for (const auto* cv : {&by_model, &by_grid}) {
    out << calibrate::to_string(cv->by) << " (" << cv->folds << " folds): MAPE " << pct(cv->mape_pct) << ", worst point "
        << pct(cv->max_abs_error_pct) << '\n';
    for (const auto& w : cv->bound_warnings) {
      report.warnings += "warning: " + calibrate::to_string(cv->by) + " fold " + w + "\n";
    }
    const std::string key = cv->by == calibrate::FoldBy::model ? "cv_model" : "cv_grid";
    report.attributes.push_back({key + "_mape_pct", cv->mape_pct});
    report.attributes.push_back({key + "_max_abs_error_pct", cv->max_abs_error_pct});
    report.tables.push_back(calibrate::cross_validation_table(set, *cv));
  }
  report.text = out.str();
  return report;
}

std::string bound_warnings(const calibrate::CalibrationResult& result) {
  std::string out;
  for (const auto& m : calibrate::bound_messages(result)) out += "warning: " + m + "\n";
  return out;
}

}  // namespace wavel::driver
