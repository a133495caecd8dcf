// Levenberg-Marquardt in bounded log coordinates (Eigen's MINPACK port) for the calibration fits.
#include "wavel/calibrate/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "wavel/common/error.hpp"
#include "wavel/config/schema.hpp"

namespace wavel::calibrate {

namespace {

// A residual for a point the model cannot predict: large enough that the solver backs away, finite so
// that the MINPACK arithmetic stays defined.
constexpr double kUnpredictableResidual = 50.0;

bool predictable(double predicted) { return std::isfinite(predicted) && predicted > 0; }

// u = ln(p + shift) in [lo, hi], reached from an unbounded y through a logistic.
struct Coordinate {
  const cost::ParamInfo* info;
  double shift;
  double lo;
  double hi;

  explicit Coordinate(const cost::ParamInfo& p)
      : info(&p),
        shift(p.min_value > 0 ? 0.0 : 1.0 - p.min_value),
        lo(std::log(p.min_value + shift)),
        hi(std::log(p.max_value + shift)) {}
  [[nodiscard]] double to_y(double value) const {
    // A start on a bound sits just inside it: the logistic reaches a bound only at infinity.
    const double t = std::clamp((std::log(value + shift) - lo) / (hi - lo), 1e-12, 1.0 - 1e-12);
    return std::log(t / (1.0 - t));
  }
  [[nodiscard]] double to_value(double y) const {
    const double u = lo + (hi - lo) / (1.0 + std::exp(-y));
    return std::clamp(std::exp(u) - shift, info->min_value, info->max_value);
  }
};

struct Residuals {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  const LogFitProblem* problem;
  const std::vector<Coordinate>* coords;
  std::vector<std::size_t> training;
  cost::CostParams base;
  mutable int evaluations = 0;

  [[nodiscard]] int inputs() const { return static_cast<int>(coords->size()); }
  [[nodiscard]] int values() const { return static_cast<int>(training.size()); }

  [[nodiscard]] cost::CostParams params_at(const Eigen::VectorXd& y) const {
    cost::CostParams p = base;
    for (std::size_t i = 0; i < coords->size(); ++i) {
      p.*((*coords)[i].info->field) = (*coords)[i].to_value(y[static_cast<Eigen::Index>(i)]);
    }
    return p;
  }

  int operator()(const Eigen::VectorXd& y, Eigen::VectorXd& r) const {
    ++evaluations;
    const cost::CostParams p = params_at(y);
    for (std::size_t j = 0; j < training.size(); ++j) {
      const std::size_t i = training[j];
      const double predicted = problem->predict(i, p);
      r[static_cast<Eigen::Index>(j)] = predictable(predicted)
                                            ? std::log(predicted) - std::log(problem->measured[i])
                                            : kUnpredictableResidual;
    }
    return 0;
  }
};

std::string param_list() {
  std::string names;
  for (const auto& p : cost::param_registry()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

}  // namespace

double log_objective(const LogFitProblem& problem, const cost::CostParams& params) {
  double sum = 0;
  for (std::size_t i = 0; i < problem.measured.size(); ++i) {
    if (problem.held_out[i]) continue;
    const double predicted = problem.predict(i, params);
    if (!predictable(predicted)) return std::numeric_limits<double>::infinity();
    const double r = std::log(predicted) - std::log(problem.measured[i]);
    sum += r * r;
  }
  return sum;
}

LeastSquaresOutcome fit_log_least_squares(const LogFitProblem& problem, const cost::CostParams& start,
                                          const std::vector<const cost::ParamInfo*>& chosen,
                                          const LeastSquaresOptions& options) {
  if (problem.held_out.size() != problem.measured.size()) {
    throw InternalError("fit_log_least_squares: one held-out flag per point needed");
  }
  LeastSquaresOutcome out;
  out.fitted = start;
  out.objective_start = log_objective(problem, start);
  out.objective_final = out.objective_start;
  out.converged = true;
  if (chosen.empty()) return out;

  std::vector<Coordinate> coords;
  for (const auto* p : chosen) coords.emplace_back(*p);
  Residuals residuals{&problem, &coords, {}, start};
  for (std::size_t i = 0; i < problem.measured.size(); ++i) {
    if (!problem.held_out[i]) residuals.training.push_back(i);
  }
  if (residuals.training.size() < coords.size()) {
    throw InternalError("fit_log_least_squares: fewer training points than parameters");
  }
  Eigen::VectorXd y(static_cast<Eigen::Index>(coords.size()));
  for (std::size_t i = 0; i < coords.size(); ++i) {
    y[static_cast<Eigen::Index>(i)] = coords[i].to_y(start.*(coords[i].info->field));
  }
  Eigen::NumericalDiff<Residuals> differentiated(residuals);
  Eigen::LevenbergMarquardt<Eigen::NumericalDiff<Residuals>> solver(differentiated);
  solver.parameters.maxfev = options.max_evaluations_per_parameter * static_cast<int>(coords.size() + 1);
  solver.parameters.xtol = options.x_tolerance;
  solver.parameters.ftol = options.f_tolerance;
  const auto status = solver.minimize(y);
  out.iterations = static_cast<int>(solver.iter);
  out.evaluations = differentiated.evaluations;
  out.converged = status != Eigen::LevenbergMarquardtSpace::TooManyFunctionEvaluation &&
                  status != Eigen::LevenbergMarquardtSpace::ImproperInputParameters;
  const cost::CostParams candidate = residuals.params_at(y);
  const double f = log_objective(problem, candidate);
  if (f < out.objective_start) {
    out.fitted = candidate;
    out.objective_final = f;
  }
  return out;
}

std::vector<const cost::ParamInfo*> resolve_fit_names(const std::vector<std::string>& fit_names) {
  std::vector<std::string> known;
  for (const auto& p : cost::param_registry()) known.push_back(p.name);
  for (std::size_t i = 0; i < fit_names.size(); ++i) {
    const auto& name = fit_names[i];
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      const std::string suggestion = config::did_you_mean(name, known);
      throw UsageError("unknown cost parameter '" + name + "' to fit" +
                       (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?") +
                       " (parameters: " + param_list() + ")");
    }
    if (std::find(fit_names.begin(), fit_names.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        fit_names.begin() + static_cast<std::ptrdiff_t>(i)) {
      throw UsageError("cost parameter '" + name + "' is named twice in the list to fit");
    }
  }
  std::vector<const cost::ParamInfo*> chosen;
  for (const auto& p : cost::param_registry()) {
    if (std::find(fit_names.begin(), fit_names.end(), p.name) != fit_names.end()) chosen.push_back(&p);
  }
  return chosen;
}

}  // namespace wavel::calibrate
