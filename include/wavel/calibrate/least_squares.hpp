// Bounded least squares in log space (Levenberg-Marquardt, Eigen) over the cost model's parameters.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "wavel/cost/params.hpp"

namespace wavel::calibrate {

/// Prediction of observation i under the given parameters; <= 0 or non-finite means "cannot predict".
using IndexPredictor = std::function<double(std::size_t, const cost::CostParams&)>;

/// What a fit sees: the measured values (> 0) and which of them it must not use.
struct LogFitProblem {
  std::vector<double> measured;
  std::vector<bool> held_out;  ///< per point; true: not fitted
  IndexPredictor predict;
};

/// Settings of the solver.
struct LeastSquaresOptions {
  int max_evaluations_per_parameter = 400;  ///< cap on residual evaluations, = this x (parameters + 1)
  double x_tolerance = 1e-12;               ///< relative step size below which the solver stops
  double f_tolerance = 1e-14;               ///< relative reduction of the objective below which it stops
};

/// How a solve went, whatever it fitted.
struct SolveStats {
  double objective_start = 0;   ///< sum of squared ln residuals over the training points
  double objective_final = 0;
  int iterations = 0;           ///< Levenberg-Marquardt iterations
  int evaluations = 0;          ///< residual vector evaluations (each predicts every training point)
  bool converged = false;       ///< false: the evaluation cap stopped it
};

/// "objective A -> B after N iterations", and " (evaluation cap reached)" when it stopped the solver.
std::ostream& operator<<(std::ostream& out, const SolveStats& stats);

/// Outcome of a solve.
struct LeastSquaresOutcome : SolveStats {
  cost::CostParams fitted;      ///< `start` with the chosen fields replaced by the minimiser
};

/// The range a fitted value stays in.
struct ParamBounds {
  double min_value;
  double max_value;
};

/// True if `value` is within 1e-6 (relative; absolute below 1) of either bound: the form, not the
/// data, decided it.
bool on_bound(double value, const ParamBounds& bounds);

/// The warning for a fitted value on a bound: "NAME ended on its lower bound, 0.1 cycles/hop (allowed
/// 0.1 .. 100): the model's form, not the data, decided it".
std::string bound_warning(const std::string& name, double value, const ParamBounds& bounds, const std::string& units);

/// Prediction of observation i from the fitted values (in the order of their bounds).
using VectorPredictor = std::function<double(std::size_t, const std::vector<double>&)>;

/// Outcome of a solve over plain values.
struct VectorFitOutcome : SolveStats {
  std::vector<double> fitted;   ///< the start unless the solver really lowered the objective
};

/// The solver below over plain values with their bounds: what the simulator's timing fit uses.
VectorFitOutcome fit_log_least_squares(const std::vector<double>& measured, const std::vector<bool>& held_out,
                                       const VectorPredictor& predict, const std::vector<ParamBounds>& bounds,
                                       const std::vector<double>& start, const LeastSquaresOptions& options = {});

/// Sum over the training points of (ln predicted - ln measured)^2; +inf if any prediction is not positive.
double log_objective(const LogFitProblem& problem, const cost::CostParams& params);

/// Minimises log_objective over the `chosen` parameters (registry entries), each kept inside its
/// registry bounds by a smooth map: u = ln(p + shift) (shift lifts a zero lower bound to 1) lies in
/// [u_lo, u_hi] as u_lo + (u_hi - u_lo) / (1 + e^-y), and Levenberg-Marquardt (Eigen's MINPACK port,
/// forward-difference Jacobian) runs unconstrained in y. A least-squares solver needs no start-specific
/// restarts: its minimiser does not depend on where a convex-enough problem starts. Deterministic.
/// The start is kept bit for bit unless the solver really lowers the objective.
LeastSquaresOutcome fit_log_least_squares(const LogFitProblem& problem, const cost::CostParams& start,
                                          const std::vector<const cost::ParamInfo*>& chosen,
                                          const LeastSquaresOptions& options = {});

/// The registry entries named, in registry order. UsageError for an unknown (with a suggestion) or
/// repeated name.
std::vector<const cost::ParamInfo*> resolve_fit_names(const std::vector<std::string>& fit_names);

}  // namespace wavel::calibrate
