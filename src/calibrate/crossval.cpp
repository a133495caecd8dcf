// Leave-one-model-out and leave-one-grid-out refits, and the residual covariance of a fit.
#include "wavel/calibrate/crossval.hpp"

#include <Eigen/Cholesky>
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "wavel/common/error.hpp"

namespace wavel::calibrate {

namespace {

std::string fold_key(const ReferencePoint& p, FoldBy by) {
  return by == FoldBy::model ? p.model : std::to_string(p.grid_pes);
}

const cost::ParamInfo& info_of(const std::string& name) {
  for (const auto& p : cost::param_registry()) {
    if (p.name == name) return p;
  }
  throw InternalError("unknown parameter " + name);
}

}  // namespace

std::string to_string(FoldBy by) { return by == FoldBy::model ? "leave-one-model-out" : "leave-one-grid-out"; }

CrossValidation cross_validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& start,
                               const std::vector<std::string>& fit_names, FoldBy by, const FitOptions& options) {
  CrossValidation cv;
  cv.by = by;
  const std::size_t n = set.points.size();
  cv.fold.resize(n);
  cv.predicted.assign(n, std::numeric_limits<double>::quiet_NaN());
  cv.rel_error.assign(n, std::numeric_limits<double>::quiet_NaN());
  std::set<std::string> keys;
  for (std::size_t i = 0; i < n; ++i) {
    cv.fold[i] = fold_key(set.points[i], by);
    keys.insert(cv.fold[i]);
  }
  double sum = 0;
  std::size_t counted = 0;
  for (const std::string& key : keys) {
    FitOptions fold_options = options;
    fold_options.held_out.assign(n, false);
    std::size_t training = 0;
    for (std::size_t i = 0; i < n; ++i) {
      fold_options.held_out[i] = cv.fold[i] == key;
      training += fold_options.held_out[i] ? 0 : 1;
    }
    if (training < fit_names.size() || training == 0) continue;
    const CalibrationResult fit = calibrate(set, predict, start, fit_names, fold_options);
    for (const auto& m : bound_messages(fit)) cv.bound_warnings.push_back(key + ": " + m);
    ++cv.folds;
    for (std::size_t i = 0; i < n; ++i) {
      if (!fold_options.held_out[i]) continue;
      const auto& r = fit.after.points[i];
      cv.predicted[i] = r.predicted;
      cv.rel_error[i] = r.rel_error;
      sum += std::abs(r.rel_error);
      cv.max_abs_error_pct = std::max(cv.max_abs_error_pct, 100.0 * std::abs(r.rel_error));
      ++counted;
    }
  }
  cv.mape_pct = counted == 0 ? std::numeric_limits<double>::quiet_NaN() : 100.0 * sum / static_cast<double>(counted);
  return cv;
}

io::Table cross_validation_table(const ReferenceSet& set, const CrossValidation& cv) {
  std::vector<std::string> model, phase, fold;
  std::vector<std::int64_t> grid;
  std::vector<double> measured;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    model.push_back(set.points[i].model);
    phase.emplace_back(workload::to_string(set.points[i].phase));
    grid.push_back(set.points[i].grid_pes);
    fold.push_back(cv.fold[i]);
    measured.push_back(set.points[i].tpr_tokens_per_s);
  }
  io::Table t;
  t.name = cv.by == FoldBy::model ? "cv_model" : "cv_grid";
  t.columns = {{"model", "", model},
               {"phase", "", phase},
               {"grid", "PEs", grid},
               {"fold", "", fold},
               {"measured_tokens_per_s", "tokens/s", measured},
               {"predicted_tokens_per_s", "tokens/s", cv.predicted},
               {"rel_error", "1", cv.rel_error}};
  return t;
}

ParamUncertainty estimate_uncertainty(const ReferenceSet& set, const Predictor& predict,
                                      const CalibrationResult& result, const std::vector<bool>& held_out) {
  LogFitProblem problem;
  for (const auto& p : set.points) problem.measured.push_back(p.tpr_tokens_per_s);
  problem.held_out = held_out;
  problem.predict = [&set, &predict](std::size_t i, const cost::CostParams& params) {
    return predict(set.points[i], params);
  };
  return estimate_uncertainty(problem, set.file, result);
}

ParamUncertainty estimate_uncertainty(const LogFitProblem& problem, const std::string& file,
                                      const CalibrationResult& result) {
  ParamUncertainty u;
  const auto on_bound = parameters_on_bounds(result);
  for (const auto& name : result.fit_names) {
    if (std::find(on_bound.begin(), on_bound.end(), name) != on_bound.end()) {
      u.fixed.push_back(name);
    } else {
      u.names.push_back(name);
      u.ln_values.push_back(std::log(result.fitted.*(info_of(name).field)));
    }
  }
  std::vector<std::size_t> train;
  for (std::size_t i = 0; i < problem.measured.size(); ++i) {
    if (!problem.held_out[i]) train.push_back(i);
  }
  u.points = train.size();
  const std::size_t p = u.names.size();
  if (train.size() <= p) {
    throw DataError({Diagnostic{file, 0, 0, "points",
                                std::to_string(train.size()) + " training points cannot give the uncertainty of " +
                                    std::to_string(p) + " parameters; at least one more point than parameters is needed"}});
  }
  const auto residual = [&](const cost::CostParams& params, std::size_t i) {
    return std::log(problem.predict(i, params)) - std::log(problem.measured[i]);
  };
  double ssr = 0;
  for (std::size_t i : train) ssr += std::pow(residual(result.fitted, i), 2);
  const double s2 = ssr / static_cast<double>(train.size() - p);
  constexpr double kStep = 1e-3;  // in ln p: 0.1 %
  Eigen::MatrixXd jac(static_cast<Eigen::Index>(train.size()), static_cast<Eigen::Index>(p));
  for (std::size_t j = 0; j < p; ++j) {
    cost::CostParams up = result.fitted, down = result.fitted;
    up.*(info_of(u.names[j]).field) = std::exp(u.ln_values[j] + kStep);
    down.*(info_of(u.names[j]).field) = std::exp(u.ln_values[j] - kStep);
    for (std::size_t r = 0; r < train.size(); ++r) {
      jac(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(j)) =
          (residual(up, train[r]) - residual(down, train[r])) / (2 * kStep);
    }
  }
  if (p > 0) {
    const Eigen::LLT<Eigen::MatrixXd> jtj(jac.transpose() * jac);
    if (jtj.info() != Eigen::Success) {
      throw DataError({Diagnostic{file, 0, 0, "points",
                                  "the fitted parameters are not identifiable from these points (singular J^T J)"}});
    }
    const Eigen::MatrixXd covariance = s2 * jtj.solve(Eigen::MatrixXd::Identity(jac.cols(), jac.cols()));
    u.ln_covariance.assign(p, std::vector<double>(p));
    for (std::size_t a = 0; a < p; ++a) {
      for (std::size_t b = 0; b < p; ++b) {
        u.ln_covariance[a][b] = covariance(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b));
      }
    }
  }
  u.method = "residual covariance s^2 (J^T J)^-1 in ln p at the fit, " + std::to_string(train.size()) +
             " training points, " + std::to_string(p) + " free parameters";
  return u;
}

}  // namespace wavel::calibrate
