// How well the cost model agrees with the simulator: MAPE and Spearman rank correlation over groups of
// pairs, checked against the targets, with the physics that differ named where a target is missed.
#pragma once

#include <string>
#include <vector>

namespace wavel::driver {

/// Targets before any fitting (issue 12).
inline constexpr double kTargetSpearman = 0.95;
inline constexpr double kTargetMapePct = 10.0;

/// Spearman rank correlation (average ranks for ties); NaN for fewer than two points or no spread.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

/// Mean of |model - sim| / sim in percent over pairs with sim > 0; NaN when there are none.
double mape_pct(const std::vector<double>& model, const std::vector<double>& sim);

/// One group of pairs and its agreement.
struct Agreement {
  std::string scope;      ///< e.g. "setting 3 (front and baselines)", "kernel meshgemv"
  std::string kernel;     ///< the kernel for per-kernel rows; "" otherwise
  std::size_t pairs = 0;
  double mape_pct = 0;
  double spearman = 0;    ///< NaN when undefined (one pair, or no spread)
  bool meets_targets = false;  ///< MAPE <= 10 % and (Spearman >= 0.95 or undefined)
  std::string differs;    ///< where missed: the physics the simulator and the model treat differently
};

/// Agreement of `model` against `sim` (same length) for `scope`.
Agreement agreement(const std::string& scope, const std::string& kernel, const std::vector<double>& model,
                    const std::vector<double>& sim);

/// What the simulator models differently from the cost model for `kernel` ("" or "schedule": the
/// composition), in one sentence.
std::string physics_that_differ(const std::string& kernel);

}  // namespace wavel::driver
