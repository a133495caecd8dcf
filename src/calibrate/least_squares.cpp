// Levenberg-Marquardt in bounded log coordinates (Eigen's MINPACK port) for the calibration fits.
#include "wavel/calibrate/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <limits>
#include <ostream>

#include <Eigen/Core>
#include <unsupported/Eigen/NonLinearOptimization>
#include <unsupported/Eigen/NumericalDiff>

#include "wavel/common/error.hpp"
#include "wavel/common/yaml_schema.hpp"

namespace wavel::calibrate {

namespace {

// A residual for a point the model cannot predict: large enough that the solver backs away, finite so
// that the MINPACK arithmetic stays defined.
constexpr double kUnpredictableResidual = 50.0;

bool predictable(double predicted) { return std::isfinite(predicted) && predicted > 0; }

// u = ln(p + shift) in [lo, hi], reached from an unbounded y through a logistic.
struct Coordinate {
  ParamBounds bounds;
  double shift;
  double lo;
  double hi;

  explicit Coordinate(const ParamBounds& b)
      : bounds(b),
        shift(b.min_value > 0 ? 0.0 : 1.0 - b.min_value),
        lo(std::log(b.min_value + shift)),
        hi(std::log(b.max_value + shift)) {}
  [[nodiscard]] double to_y(double value) const {
    // A start on a bound sits inside it, where the logistic still has a slope the solver can follow
    // (at 1e-12 from a bound the step it sees is nil and the value never leaves the bound).
    const double t = std::clamp((std::log(value + shift) - lo) / (hi - lo), 1e-3, 1.0 - 1e-3);
    return std::log(t / (1.0 - t));
  }
  [[nodiscard]] double to_value(double y) const {
    const double u = lo + (hi - lo) / (1.0 + std::exp(-y));
    return std::clamp(std::exp(u) - shift, bounds.min_value, bounds.max_value);
  }
};

struct Residuals {
  using Scalar = double;
  enum { InputsAtCompileTime = Eigen::Dynamic, ValuesAtCompileTime = Eigen::Dynamic };
  using InputType = Eigen::VectorXd;
  using ValueType = Eigen::VectorXd;
  using JacobianType = Eigen::MatrixXd;

  const std::vector<double>* measured;
  const VectorPredictor* predict;
  const std::vector<Coordinate>* coords;
  std::vector<std::size_t> training;
  mutable int evaluations = 0;

  [[nodiscard]] int inputs() const { return static_cast<int>(coords->size()); }
  [[nodiscard]] int values() const { return static_cast<int>(training.size()); }

  [[nodiscard]] std::vector<double> values_at(const Eigen::VectorXd& y) const {
    std::vector<double> v(coords->size());
    for (std::size_t i = 0; i < coords->size(); ++i) v[i] = (*coords)[i].to_value(y[static_cast<Eigen::Index>(i)]);
    return v;
  }

  int operator()(const Eigen::VectorXd& y, Eigen::VectorXd& r) const {
    ++evaluations;
    const std::vector<double> v = values_at(y);
    for (std::size_t j = 0; j < training.size(); ++j) {
      const std::size_t i = training[j];
      const double predicted = (*predict)(i, v);
      r[static_cast<Eigen::Index>(j)] = predictable(predicted) ? std::log(predicted) - std::log((*measured)[i])
                                                               : kUnpredictableResidual;
    }
    return 0;
  }
};

double log_objective_of(const std::vector<double>& measured, const std::vector<bool>& held_out,
                        const std::function<double(std::size_t)>& predict) {
  double sum = 0;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (held_out[i]) continue;
    const double predicted = predict(i);
    if (!predictable(predicted)) return std::numeric_limits<double>::infinity();
    const double r = std::log(predicted) - std::log(measured[i]);
    sum += r * r;
  }
  return sum;
}

std::string param_list() {
  std::string names;
  for (const auto& p : cost::param_registry()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

}  // namespace

bool on_bound(double value, const ParamBounds& bounds) {
  const auto near = [value](double bound) { return std::abs(value - bound) <= 1e-6 * std::max(1.0, std::abs(bound)); };
  return near(bounds.min_value) || near(bounds.max_value);
}

std::string bound_warning(const std::string& name, double value, const ParamBounds& bounds, const std::string& units) {
  const bool lower = std::abs(value - bounds.min_value) <= std::abs(value - bounds.max_value);
  std::ostringstream out;
  out << name << " ended on its " << (lower ? "lower" : "upper") << " bound, " << value << ' ' << units << " (allowed "
      << bounds.min_value << " .. " << bounds.max_value << "): the model's form, not the data, decided it";
  return out.str();
}

double log_objective(const LogFitProblem& problem, const cost::CostParams& params) {
  return log_objective_of(problem.measured, problem.held_out,
                          [&](std::size_t i) { return problem.predict(i, params); });
}

std::ostream& operator<<(std::ostream& out, const SolveStats& stats) {
  return out << "objective " << stats.objective_start << " -> " << stats.objective_final << " after "
             << stats.iterations << " iterations" << (stats.converged ? "" : " (evaluation cap reached)");
}

VectorFitOutcome fit_log_least_squares(const std::vector<double>& measured, const std::vector<bool>& held_out,
                                       const VectorPredictor& predict, const std::vector<ParamBounds>& bounds,
                                       const std::vector<double>& start, const LeastSquaresOptions& options) {
  if (held_out.size() != measured.size() || start.size() != bounds.size()) {
    throw InternalError("fit_log_least_squares: one held-out flag per point and one start per parameter needed");
  }
  auto objective = [&](const std::vector<double>& v) {
    return log_objective_of(measured, held_out, [&](std::size_t i) { return predict(i, v); });
  };
  VectorFitOutcome out;
  out.fitted = start;
  out.objective_start = objective(start);
  out.objective_final = out.objective_start;
  out.converged = true;
  if (bounds.empty()) return out;

  std::vector<Coordinate> coords(bounds.begin(), bounds.end());
  Residuals residuals{&measured, &predict, &coords, {}};
  for (std::size_t i = 0; i < measured.size(); ++i) {
    if (!held_out[i]) residuals.training.push_back(i);
  }
  if (residuals.training.size() < coords.size()) {
    throw InternalError("fit_log_least_squares: fewer training points than parameters");
  }
  Eigen::VectorXd y(static_cast<Eigen::Index>(coords.size()));
  for (std::size_t i = 0; i < coords.size(); ++i) y[static_cast<Eigen::Index>(i)] = coords[i].to_y(start[i]);
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
  const std::vector<double> candidate = residuals.values_at(y);
  const double f = objective(candidate);
  if (f < out.objective_start) {
    out.fitted = candidate;
    out.objective_final = f;
  }
  return out;
}

LeastSquaresOutcome fit_log_least_squares(const LogFitProblem& problem, const cost::CostParams& start,
                                          const std::vector<const cost::ParamInfo*>& chosen,
                                          const LeastSquaresOptions& options) {
  std::vector<ParamBounds> bounds;
  std::vector<double> values;
  for (const auto* p : chosen) {
    bounds.push_back(ParamBounds{p->min_value, p->max_value});
    values.push_back(start.*(p->field));
  }
  auto params_of = [&](const std::vector<double>& v) {
    cost::CostParams p = start;
    for (std::size_t i = 0; i < chosen.size(); ++i) p.*(chosen[i]->field) = v[i];
    return p;
  };
  const VectorPredictor predict = [&](std::size_t i, const std::vector<double>& v) {
    return problem.predict(i, params_of(v));
  };
  const VectorFitOutcome fit = fit_log_least_squares(problem.measured, problem.held_out, predict, bounds, values, options);
  LeastSquaresOutcome out;
  static_cast<SolveStats&>(out) = fit;
  out.fitted = fit.fitted == values ? start : params_of(fit.fitted);
  return out;
}

std::vector<const cost::ParamInfo*> resolve_fit_names(const std::vector<std::string>& fit_names) {
  std::vector<std::string> known;
  for (const auto& p : cost::param_registry()) known.push_back(p.name);
  for (std::size_t i = 0; i < fit_names.size(); ++i) {
    const auto& name = fit_names[i];
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      const std::string suggestion = yaml::did_you_mean(name, known);
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
