// Cross-validation of the calibration (leave one model out, leave one grid out) and the fitted
// parameters' uncertainty from the residual covariance.
#pragma once

#include <string>
#include <vector>

#include "wavel/calibrate/fit.hpp"
#include "wavel/io/results.hpp"

namespace wavel::calibrate {

/// How points are grouped into folds.
enum class FoldBy { model, grid };

/// Each point predicted by a fit that did not see its fold.
struct CrossValidation {
  FoldBy by = FoldBy::model;
  std::vector<std::string> fold;         ///< per point: the fold it was held out in (model name or grid side)
  std::vector<double> predicted;         ///< per point, in the units of the measurements
  std::vector<double> rel_error;         ///< (predicted - measured) / measured
  std::vector<std::string> bound_warnings;  ///< "fold: " + bound_warning for each fold's parameter that ended on a bound
  double mape_pct = 0;
  double max_abs_error_pct = 0;
  std::size_t folds = 0;
};

/// For every distinct model (or grid side), fits `fit_names` on the other points from `start` and
/// predicts the held-out ones. Folds whose training set has fewer points than parameters are
/// skipped (their points keep NaN). Deterministic.
CrossValidation cross_validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& start,
                               const std::vector<std::string>& fit_names, FoldBy by, const FitOptions& options = {});

/// "leave-one-model-out" or "leave-one-grid-out".
std::string to_string(FoldBy by);

/// Table "cv_<by>": model, phase, grid, fold, measured_tokens_per_s, predicted_tokens_per_s, rel_error.
io::Table cross_validation_table(const ReferenceSet& set, const CrossValidation& cv);

/// Uncertainty of fitted parameters in ln space: covariance s^2 (J^T J)^-1 of the log residuals of
/// the training points at the fit, with J by central differences in ln p and s^2 = SSR / (n - p).
/// A parameter on a bound is held fixed (zero variance) and listed in `fixed`.
struct ParamUncertainty {
  std::vector<std::string> names;                 ///< free parameters, registry order
  std::vector<double> ln_values;                  ///< ln of the fitted values
  std::vector<std::vector<double>> ln_covariance;
  std::vector<std::string> fixed;                 ///< fitted parameters held at a bound
  std::size_t points = 0;                         ///< training points used
  std::string method;                             ///< in words, for the params file
};

/// Throws DataError when there are no more training points than free parameters.
ParamUncertainty estimate_uncertainty(const ReferenceSet& set, const Predictor& predict,
                                      const CalibrationResult& result, const std::vector<bool>& held_out);

/// Same for any log-space fit problem (kernel measurements); `file` labels messages.
ParamUncertainty estimate_uncertainty(const LogFitProblem& problem, const std::string& file,
                                      const CalibrationResult& result);

}  // namespace wavel::calibrate
