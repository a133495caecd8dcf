// Held-out split, log-space least-squares fit (bounded Nelder-Mead with restarts), validation tables.
#include "wavel/calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <sstream>
#include <tuple>
#include <utility>

#include "wavel/common/error.hpp"
#include "wavel/config/schema.hpp"

namespace wavel::calibrate {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
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

// Maps a parameter to an unbounded-below search coordinate y = ln(p + shift). Working in logs makes a
// step a relative change, which suits parameters that span decades (cycles) and ones near 1 alike;
// the shift of one unit lets parameters whose lower bound is 0 reach it.
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
  [[nodiscard]] double to_y(double value) const { return std::log(value + shift); }
  [[nodiscard]] double to_value(double y) const {
    return std::clamp(std::exp(y) - shift, info->min_value, info->max_value);
  }
};

using Point = std::vector<double>;

class NelderMead {
 public:
  NelderMead(std::vector<Coordinate> coords, std::function<double(const cost::CostParams&)> objective,
             cost::CostParams base, int max_iterations)
      : coords_(std::move(coords)), objective_(std::move(objective)), base_(base), max_iterations_(max_iterations) {}

  cost::CostParams params_at(const Point& y) const {
    cost::CostParams p = base_;
    for (std::size_t i = 0; i < coords_.size(); ++i) p.*(coords_[i].info->field) = coords_[i].to_value(y[i]);
    return p;
  }

  double evaluate(const Point& y) {
    ++evaluations;
    return objective_(params_at(y));
  }

  /// One run from a fresh simplex around `best` (updated in place). Returns true if it stopped on a
  /// tolerance, false on the iteration cap.
  bool run(Point& best, double& best_f, const FitOptions& options) {
    const std::size_t n = coords_.size();
    std::vector<Point> x(n + 1, best);
    std::vector<double> f(n + 1, best_f);
    for (std::size_t i = 0; i < n; ++i) {
      // Step up unless that leaves the box: clamping the vertex back would flatten the simplex.
      const Coordinate& c = coords_[i];
      double step = options.initial_step;
      if (best[i] + step > c.hi) {
        const double room_up = c.hi - best[i];
        const double room_down = best[i] - c.lo;
        if (room_down >= step) {
          step = -step;
        } else {
          step = room_up >= room_down ? room_up : -room_down;  // a narrow box: use the roomier side
        }
      }
      x[i + 1][i] += step;
      f[i + 1] = evaluate(x[i + 1]);
    }
    std::vector<std::size_t> order(n + 1);
    while (true) {
      // Stable order on (f, vertex slot) so ties never depend on anything but the data.
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return f[a] < f[b]; });
      const Point& xb = x[order[0]];
      const double fb = f[order[0]];
      const double fw = f[order[n]];
      double diameter = 0;
      for (std::size_t v = 1; v <= n; ++v) {
        for (std::size_t i = 0; i < n; ++i) diameter = std::max(diameter, std::abs(x[order[v]][i] - xb[i]));
      }
      if (diameter <= options.x_tolerance || (std::isfinite(fw) && fw - fb <= options.f_tolerance * fb)) {
        best = xb;
        best_f = fb;
        return true;
      }
      if (iterations >= max_iterations_) {
        best = xb;
        best_f = fb;
        return false;
      }
      ++iterations;

      const std::size_t worst = order[n];
      Point centroid(n, 0.0);
      for (std::size_t v = 0; v < n; ++v) {
        for (std::size_t i = 0; i < n; ++i) centroid[i] += x[order[v]][i];
      }
      for (double& c : centroid) c /= static_cast<double>(n);
      auto along = [&](double t) {  // centroid + t (centroid - worst), clamped into the box
        Point p(n);
        for (std::size_t i = 0; i < n; ++i) {
          p[i] = std::clamp(centroid[i] + t * (centroid[i] - x[worst][i]), coords_[i].lo, coords_[i].hi);
        }
        return p;
      };

      auto replace_worst = [&](Point p, double fp) {
        x[worst] = std::move(p);
        f[worst] = fp;
      };

      Point xr = along(1.0);
      const double fr = evaluate(xr);
      if (fr < fb) {
        Point xe = along(2.0);
        const double fe = evaluate(xe);
        if (fe < fr) {
          replace_worst(std::move(xe), fe);
        } else {
          replace_worst(std::move(xr), fr);
        }
        continue;
      }
      if (fr < f[order[n - 1]]) {
        replace_worst(std::move(xr), fr);
        continue;
      }
      const bool outside = fr < fw;
      Point xc = along(outside ? 0.5 : -0.5);
      const double fc = evaluate(xc);
      if (outside ? fc <= fr : fc < fw) {
        replace_worst(std::move(xc), fc);
        continue;
      }
      // Shrink every vertex halfway towards the best.
      const std::size_t b = order[0];
      for (std::size_t v = 0; v <= n; ++v) {
        if (v == b) continue;
        for (std::size_t i = 0; i < n; ++i) x[v][i] = x[b][i] + 0.5 * (x[v][i] - x[b][i]);
        f[v] = evaluate(x[v]);
      }
    }
  }

  int iterations = 0;
  int evaluations = 0;

 private:
  std::vector<Coordinate> coords_;
  std::function<double(const cost::CostParams&)> objective_;
  cost::CostParams base_;
  int max_iterations_;
};

std::string param_list() {
  std::string names;
  for (const auto& p : cost::param_registry()) names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

// The named registry entries, in registry order; rejects unknown and repeated names.
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

double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params) {
  return log_objective(set, predict, params, held_out_mask(set));
}

double log_objective(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                     const std::vector<bool>& held_out) {
  double sum = 0;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    if (held_out[i]) continue;
    const double predicted = predict(set.points[i], params);
    if (!predictable(predicted)) return kInf;
    const double r = std::log(predicted) - std::log(set.points[i].tpr_tokens_per_s);
    sum += r * r;
  }
  return sum;
}

ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params) {
  return validate(set, predict, params, held_out_mask(set));
}

ValidationReport validate(const ReferenceSet& set, const Predictor& predict, const cost::CostParams& params,
                          const std::vector<bool>& held_out) {
  if (held_out.size() != set.points.size()) throw InternalError("validate: one held-out flag per point needed");
  ValidationReport report;
  std::vector<double> all, train, test;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    PointResult r;
    r.measured_tokens_per_s = set.points[i].tpr_tokens_per_s;
    r.predicted_tokens_per_s = predict(set.points[i], params);
    r.rel_error = (r.predicted_tokens_per_s - r.measured_tokens_per_s) / r.measured_tokens_per_s;
    r.held_out = held_out[i];
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
  const auto chosen = resolve_fit_names(fit_names);
  for (const auto* p : chosen) {
    const double value = start.*(p->field);
    if (!(value >= p->min_value && value <= p->max_value)) {
      throw UsageError("start value of " + p->name + " (" + fmt(value) + " " + p->units + ") is outside its bounds [" +
                       fmt(p->min_value) + ", " + fmt(p->max_value) + "]");
    }
  }

  const std::vector<bool> held_out = options.held_out.empty() ? held_out_mask(set) : options.held_out;
  CalibrationResult result;
  result.start = start;
  result.fitted = start;
  for (const auto* p : chosen) result.fit_names.push_back(p->name);
  result.before = validate(set, predict, start, held_out);

  // More unknowns than equations has a continuum of exact fits: refuse instead of reporting one.
  if (result.before.train_points < chosen.size()) {
    throw DataError({Diagnostic{set.file, 0, 0, "points",
                                "only " + std::to_string(result.before.train_points) +
                                    " training points (after holding out " +
                                    std::to_string(result.before.test_points) + ") for " +
                                    std::to_string(chosen.size()) +
                                    " parameters to fit; add measurements or fit fewer parameters"}});
  }
  std::vector<Diagnostic> unpredictable;
  for (std::size_t i = 0; i < set.points.size(); ++i) {
    const auto& r = result.before.points[i];
    if (!r.held_out && !predictable(r.predicted_tokens_per_s)) {
      unpredictable.push_back(Diagnostic{set.file, set.points[i].line, set.points[i].column,
                                         "points[" + std::to_string(i) + "]",
                                         "the cost model predicts " + fmt(r.predicted_tokens_per_s) +
                                             " tokens/s at the starting parameters; a log-space fit needs a "
                                             "positive prediction"});
    }
  }
  if (!unpredictable.empty()) throw DataError(std::move(unpredictable));

  result.objective_start = log_objective(set, predict, start, held_out);
  result.objective_final = result.objective_start;
  result.converged = true;
  if (chosen.empty()) {
    result.after = result.before;
    return result;
  }

  std::vector<Coordinate> coords;
  for (const auto* p : chosen) coords.emplace_back(*p);
  NelderMead search(coords, [&](const cost::CostParams& p) { return log_objective(set, predict, p, held_out); }, start,
                    options.max_iterations_per_parameter * static_cast<int>(coords.size()));
  Point best(coords.size());
  for (std::size_t i = 0; i < coords.size(); ++i) best[i] = coords[i].to_y(start.*(coords[i].info->field));
  double best_f = result.objective_start;

  // Nelder-Mead can stall on a collapsed simplex; a fresh simplex around the best point either
  // confirms the minimum or moves on.
  bool converged = search.run(best, best_f, options);
  for (int restart = 0; converged && restart < options.max_restarts; ++restart) {
    const double before_restart = best_f;
    ++result.restarts;
    converged = search.run(best, best_f, options);
    if (!(best_f < before_restart - options.f_tolerance * before_restart)) break;
  }
  result.iterations = search.iterations;
  result.evaluations = search.evaluations;
  result.converged = converged;
  // Keep the start bit for bit unless the search really found something better.
  if (best_f < result.objective_start) {
    result.fitted = search.params_at(best);
    result.objective_final = log_objective(set, predict, result.fitted, held_out);
  }
  result.after = validate(set, predict, result.fitted, held_out);
  return result;
}

std::vector<std::string> parameters_on_bounds(const CalibrationResult& result) {
  std::vector<std::string> out;
  for (const auto& p : cost::param_registry()) {
    if (std::find(result.fit_names.begin(), result.fit_names.end(), p.name) == result.fit_names.end()) continue;
    const double v = result.fitted.*(p.field);
    const auto near = [v](double bound) { return std::abs(v - bound) <= 1e-6 * std::max(1.0, std::abs(bound)); };
    if (near(p.min_value) || near(p.max_value)) out.push_back(p.name);
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
    measured.push_back(r.measured_tokens_per_s);
    predicted.push_back(r.predicted_tokens_per_s);
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
