// Which measurements each value of a params file was fitted on, in order (a params file's `fits:`),
// and the rule that keeps one generation's constants from being paired with the other's hop cost.
#pragma once

#include <string>
#include <vector>

namespace wavel::cost {

/// One calibration step behind a params file.
struct FitStep {
  std::string wafer;               ///< the wafer preset whose measurements were fitted
  std::string data;                ///< what was fitted, in words (kernel files, a reference, a derivation)
  std::vector<std::string> names;  ///< the parameters this step set (registry names)
};

/// The `fits:` section (YAML text, appended to a params file), one entry per step, oldest first.
std::string fits_to_yaml(const std::vector<FitStep>& fits);

/// Reads a params file's `fits:` section (empty when absent). ConfigError (file:line:col) for an
/// unknown wafer or parameter name or a malformed entry.
std::vector<FitStep> parse_fits(const std::string& text, const std::string& file_label);
std::vector<FitStep> load_fits(const std::string& path);

/// Empty when the steps pair constants consistently, otherwise why not. The hop cost in use is the
/// one fitted last (alpha_cycles_per_hop); every later step must be on that hop cost's generation,
/// because its constants were fitted with it. Without any hop-cost fit, every step shares one wafer.
std::string generation_pairing_problem(const std::vector<FitStep>& fits);

}  // namespace wavel::cost
