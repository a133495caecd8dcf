// Cross-validation and parameter-uncertainty reporting shared by `validate` and `calibrate`.
#pragma once

#include <string>
#include <vector>

#include "wavel/calibrate/crossval.hpp"
#include "wavel/io/results.hpp"

namespace wavel::driver {

/// Both cross-validations of a reference set, as tables, HDF5 attributes and printable text.
struct CrossValidationReport {
  std::vector<io::Table> tables;        ///< cv_model, cv_grid
  std::vector<io::Attribute> attributes;  ///< cv_model_mape_pct, cv_model_max_abs_error_pct, cv_grid_...
  std::string text;       ///< the per-point table and the MAPEs (data: stdout)
  std::string warnings;   ///< "warning: ..." lines for fold parameters on a bound (notes: stderr)
};

/// Refits `fit_names` from `start` per fold (leave one model out, leave one grid out).
CrossValidationReport cross_validation_report(const calibrate::ReferenceSet& set, const calibrate::Predictor& predict,
                                              const cost::CostParams& start, const std::vector<std::string>& fit_names);

/// "warning: NAME ended on its bound B" lines for fitted parameters on a bound (empty if none).
std::string bound_warnings(const calibrate::CalibrationResult& result);

}  // namespace wavel::driver
