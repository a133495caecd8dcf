// Fits the cost model's shared free parameters to reference measurements, with a held-out split.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "wavel/calibrate/least_squares.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/cost/params.hpp"
#include "wavel/io/results.hpp"

namespace wavel::calibrate {

/// Predicted throughput per request (tokens/s, same meaning as ReferencePoint::tpr_tokens_per_s) of a
/// reference point under the given parameters. It must be deterministic; values <= 0 or non-finite
/// count as "cannot predict" (an infinitely bad fit) during the search.
using Predictor = std::function<double(const ReferencePoint&, const cost::CostParams&)>;

/// The held-out split, fixed so every run tests on the same points:
/// group the points by (model, phase); sort each group by (grid, token count, file line); a point is
/// held out when its rank r in that order is odd and it is neither the first nor the last
/// (r = 1, 3, 5, ... < size - 1). Held-out points therefore always lie strictly between two training
/// grids, so the test error measures interpolation to region sizes the fit did not see. Groups of
/// fewer than 3 points are used entirely for training. Returns one flag per point, in file order.
std::vector<bool> held_out_mask(const ReferenceSet& set);

/// Measured and predicted throughput of one point.
struct PointResult {
  double measured = 0;   ///< in the units of the observations (tokens/s for reference points, cycles for kernels)
  double predicted = 0;
  double rel_error = 0;  ///< (predicted - measured) / measured
  bool held_out = false;
};

/// Per-point errors and mean absolute percentage errors, overall and per side of the split.
/// A MAPE over no points is NaN.
struct ValidationReport {
  std::vector<PointResult> points;  ///< parallel to ReferenceSet::points
  double mape_pct = 0;              ///< mean |predicted - measured| / measured x 100, all points
  double train_mape_pct = 0;        ///< same, training points only
  double test_mape_pct = 0;         ///< same, held-out points only
  std::size_t train_points = 0;
  std::size_t test_points = 0;
};

/// Settings of a fit.
struct FitOptions {
  LeastSquaresOptions solver;   ///< Levenberg-Marquardt settings
  std::vector<bool> held_out;   ///< per point, true: not fitted; empty: held_out_mask() (cross-validation sets it)
};

/// Where the points of a fit came from, for messages: the file and each point's 1-based line and column.
struct PointSource {
  std::string file;
  std::vector<int> lines;
  std::vector<int> columns;
};

/// Outcome of a fit: the parameters, the objective and the errors before and after.
struct CalibrationResult : SolveStats {
  cost::CostParams start;
  cost::CostParams fitted;          ///< equals `start` except in the fitted fields
  std::vector<std::string> fit_names;  ///< the fitted parameters, in param_registry() order
  ValidationReport before;          ///< at `start`
  ValidationReport after;           ///< at `fitted`
};

/// Sum over the training points (held_out_mask false) of (ln predicted - ln measured)^2; +inf if any
/// prediction is <= 0 or not finite.
double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params);
/// Same over the points whose `held_out` flag is false.
double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                     const std::vector<bool>& held_out);

/// Least squares in log space over the training points, for the named parameters only; each is shared by
/// every model and point (never one per model). Solved by fit_log_least_squares (Levenberg-Marquardt in
/// bounded log coordinates). Deterministic.
/// Throws wavel::UsageError for an unknown or repeated name or a start value outside its bounds,
/// wavel::DataError if there are fewer training points than parameters to fit or the start cannot be
/// predicted (a point's prediction <= 0 or not finite).
CalibrationResult calibrate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& start,
                            const std::vector<std::string>& fit_names, const FitOptions& options = {});

/// Same for any measurements (kernel cycles, simulated ops); options.held_out is ignored (the problem has its own).
CalibrationResult calibrate(const LogFitProblem& problem, const PointSource& source, const cost::CostParams& start,
                            const std::vector<std::string>& fit_names, const FitOptions& options = {});

/// Relative error (predicted - measured) / measured.
double rel_error(double predicted, double measured);

/// The one MAPE of the tool: 100 x mean over points of |predicted - measured| / measured, summed in
/// point order. NaN over no points. Every command, table and plot reports this.
double mape_pct(const std::vector<double>& predicted, const std::vector<double>& measured);

/// Predicts every point and reports the errors, split as held_out_mask() says.
ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params);
/// Same with an explicit split.
ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                          const std::vector<bool>& held_out);

/// Same for any measurements, split as the problem says.
ValidationReport validate(const LogFitProblem& problem, const cost::CostParams& params);

/// Names of the fitted parameters that ended within 1e-6 (relative) of a registry bound: a sign that
/// the model's form, not the data, decided them.
std::vector<std::string> parameters_on_bounds(const CalibrationResult& result);
/// bound_warning for each of parameters_on_bounds: which bound, the value and the range.
std::vector<std::string> bound_messages(const CalibrationResult& result);

/// Table "validation": model, phase, grid, measured_tokens_per_s, predicted_tokens_per_s, rel_error,
/// context_or_input_tokens, held_out (0/1), one row per point in file order.
io::Table validation_table(const ReferenceSet& set, const ValidationReport& report);

/// Table "calibration": name, units, start, fitted, min, max; one row per fitted parameter.
io::Table calibration_table(const CalibrationResult& result);

}  // namespace wavel::calibrate
