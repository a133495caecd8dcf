// Held-out split, log-space least-squares fits of reference and kernel points, validation tables.
#include "wavel/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/common/yaml_schema.hpp"

namespace wavel::calibrate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool predictable(double predicted) { return std::isfinite(predicted) && predicted > 0; }

std::string fmt(double value) {
  std::ostringstream out;
  out.precision(6);
  out << value;
  return out.str();
}

double mean_pct(const std::vector<double>& abs_rel_errors) {
  if (abs_rel_errors.empty()) return kNaN;
  // Summed in point order so every rank and every run gives the same bits.
  double sum = 0;
  for (double e : abs_rel_errors) sum += e;
  return 100.0 * sum / static_cast<double>(abs_rel_errors.size());
}

}  // namespace

std::vector<bool> held_out_mask(const ReferenceSet& set) {
  std::map<std::pair<std::string, workload::Phase>, std::vector<std::size_t>> groups;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    groups[{set.points[i].model, set.points[i].phase}].push_back(i);
  }
  std::vector<bool> held_out(set.points.size(), false);
  for (auto& [key, members] : groups) {
    std::stable_sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) {
      const auto& pa = set.points[a];
      const auto& pb = set.points[b];
      return std::make_tuple(pa.grid_pes, pa.tokens(), pa.line, a) <
             std::make_tuple(pb.grid_pes, pb.tokens(), pb.line, b);
    });
    for (std::size_t r = 1; r + 1 < members.size(); r += 2) held_out[members[r]] = true;
  }
  return held_out;
}

LogFitProblem reference_problem(const ReferenceSet& set, const Predictor& predict, const std::vector<bool>& held_out) {
  if (held_out.size() != set.points.size()) throw InternalError("calibrate: one held-out flag per point needed");
  LogFitProblem problem;
  for (const auto& p : set.points) problem.measured.push_back(p.tpr_tokens_per_s);
  problem.held_out = held_out;
  problem.predict = [&set, predict](std::size_t i, const cost::CostParams& params) { return predict(set.points[i], params); };
  return problem;
}

double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params) {
  return log_objective(set, predict, params, held_out_mask(set));
}

double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                     const std::vector<bool>& held_out) {
  return log_objective(reference_problem(set, predict, held_out), params);
}

double rel_error(double predicted, double measured) { return (predicted - measured) / measured; }

double mape_pct(const std::vector<double>& predicted, const std::vector<double>& measured) {
  if (predicted.size() != measured.size()) throw InternalError("mape_pct: one prediction per measurement needed");
  std::vector<double> errors;
  for (std::size_t i = 0; i < predicted.size(); ++i) errors.push_back(std::abs(rel_error(predicted[i], measured[i])));
  return mean_pct(errors);
}

ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params) {
  return validate(set, predict, params, held_out_mask(set));
}

ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                          const std::vector<bool>& held_out) {
  return validate(reference_problem(set, predict, held_out), params);
}

ValidationReport validate(const LogFitProblem& problem, const cost::CostParams& params) {
  ValidationReport report;
  std::vector<double> all, train, test;
  for (std::size_t i = 0; i < problem.measured.size(); ++i) {
    PointResult r;
    r.measured = problem.measured[i];
    r.predicted = problem.predict(i, params);
    r.rel_error = rel_error(r.predicted, r.measured);
    r.held_out = problem.held_out[i];
    all.push_back(std::abs(r.rel_error));
    (r.held_out ? test : train).push_back(std::abs(r.rel_error));
    report.points.push_back(r);
  }
  report.mape_pct = mean_pct(all);
  report.train_mape_pct = mean_pct(train);
  report.test_mape_pct = mean_pct(test);
  report.train_points = train.size();
  report.test_points = test.size();
  return report;
}

CalibrationResult calibrate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& start,
                            const std::vector<std::string>& fit_names, const FitOptions& options) {
  const std::vector<bool> held_out = options.held_out.empty() ? held_out_mask(set) : options.held_out;
  std::vector<int> lines, columns;
  for (const auto& p : set.points) {
    lines.push_back(p.line);
    columns.push_back(p.column);
  }
  return calibrate(reference_problem(set, predict, held_out), PointSource{set.file, lines, columns}, start, fit_names,
                   options);
}

CalibrationResult calibrate(const LogFitProblem& problem, const PointSource& source, const cost::CostParams& start,
                            const std::vector<std::string>& fit_names, const FitOptions& options) {
  const auto chosen = resolve_fit_names(fit_names);
  for (const auto* p : chosen) {
    const double value = start.*(p->field);
    if (!(value >= p->min_value && value <= p->max_value)) {
      throw UsageError("start value of " + p->name + " (" + fmt(value) + " " + p->units + ") is outside its bounds [" +
                       fmt(p->min_value) + ", " + fmt(p->max_value) + "]");
    }
  }
  CalibrationResult result;
  result.start = start;
  result.fitted = start;
  for (const auto* p : chosen) result.fit_names.push_back(p->name);
  result.before = validate(problem, start);

  // More unknowns than equations has a continuum of exact fits: refuse instead of reporting one.
  if (result.before.train_points < chosen.size()) {
    throw DataError({Diagnostic{source.file, 0, 0, "points",
                                "only " + std::to_string(result.before.train_points) +
                                    " training points (after holding out " +
                                    std::to_string(result.before.test_points) + ") for " +
                                    std::to_string(chosen.size()) +
                                    " parameters to fit; add measurements or fit fewer parameters"}});
  }
  std::vector<Diagnostic> unpredictable;
  for (std::size_t i = 0; i < problem.measured.size(); ++i) {
    const auto& r = result.before.points[i];
    if (!r.held_out && !predictable(r.predicted)) {
      unpredictable.push_back(Diagnostic{source.file, i < source.lines.size() ? source.lines[i] : 0,
                                         i < source.columns.size() ? source.columns[i] : 0,
                                         "points[" + std::to_string(i) + "]",
                                         "the cost model predicts " + fmt(r.predicted) +
                                             " at the starting parameters; a log-space fit needs a positive prediction"});
    }
  }
  if (!unpredictable.empty()) throw DataError(std::move(unpredictable));

  const LeastSquaresOutcome fit = fit_log_least_squares(problem, start, chosen, options.solver);
  static_cast<SolveStats&>(result) = fit;
  result.fitted = fit.fitted;
  result.after = validate(problem, result.fitted);
  return result;
}

std::vector<std::string> parameters_on_bounds(const CalibrationResult& result) {
  std::vector<std::string> out;
  for (const auto& p : cost::param_registry()) {
    if (std::find(result.fit_names.begin(), result.fit_names.end(), p.name) == result.fit_names.end()) continue;
    if (on_bound(result.fitted.*(p.field), ParamBounds{p.min_value, p.max_value})) out.push_back(p.name);
  }
  return out;
}

std::vector<std::string> bound_messages(const CalibrationResult& result) {
  std::vector<std::string> out;
  for (const auto& name : parameters_on_bounds(result)) {
    for (const auto& info : cost::param_registry()) {
      if (info.name == name) {
        out.push_back(bound_warning(name, result.fitted.*(info.field), {info.min_value, info.max_value}, info.units));
      }
    }
  }
  return out;
}

io::Table validation_table(const ReferenceSet& set, const ValidationReport& report) {
  if (report.points.size() != set.points.size()) {
    throw InternalError("validation report has " + std::to_string(report.points.size()) + " points, reference set " +
                        std::to_string(set.points.size()));
  }
  std::vector<std::string> model, phase;
  std::vector<std::int64_t> grid, tokens, held_out;
  std::vector<double> measured, predicted, rel_error;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    const auto& p = set.points[i];
    const auto& r = report.points[i];
    model.push_back(p.model);
    phase.emplace_back(workload::to_string(p.phase));
    grid.push_back(p.grid_pes);
    measured.push_back(r.measured);
    predicted.push_back(r.predicted);
    rel_error.push_back(r.rel_error);
    tokens.push_back(p.tokens());
    held_out.push_back(r.held_out ? 1 : 0);
  }
  io::Table table;
  table.name = "validation";
  table.columns = {
      {"model", "", model},
      {"phase", "", phase},
      {"grid", "PEs", grid},  // side P of the square P x P region
      {"measured_tokens_per_s", "tokens/s", measured},
      {"predicted_tokens_per_s", "tokens/s", predicted},
      {"rel_error", "1", rel_error},
      {"context_or_input_tokens", "tokens", tokens},
      {"held_out", "1", held_out},
  };
  return table;
}

io::Table calibration_table(const CalibrationResult& result) {
  std::vector<std::string> name, units;
  std::vector<double> start, fitted, min, max;
  for (const auto& p : cost::param_registry()) {
    if (std::find(result.fit_names.begin(), result.fit_names.end(), p.name) == result.fit_names.end()) continue;
    name.push_back(p.name);
    units.push_back(p.units);
    start.push_back(result.start.*(p.field));
    fitted.push_back(result.fitted.*(p.field));
    min.push_back(p.min_value);
    max.push_back(p.max_value);
  }
  // Each row has its own units, given by the units column.
  const std::string per_row = "see units column";
  io::Table table;
  table.name = "calibration";
  table.columns = {
      {"name", "", name}, {"units", "", units}, {"start", per_row, start},
      {"fitted", per_row, fitted}, {"min", per_row, min}, {"max", per_row, max},
  };
  return table;
}

}  // namespace wavel::calibrate
