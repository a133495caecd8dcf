// Hardware what-if: the wafer keys a config may sweep, and the hardware points they expand to.
#pragma once

#include <string>
#include <vector>

#include "wavel/config/config.hpp"
#include "wavel/common/yaml_schema.hpp"

namespace wavel::config {

/// One wafer key a sweep may vary.
struct HardwareAxis {
  std::string key;      ///< the wafer key (`defect_rate` included)
  std::string units;
  bool integer = true;
  double min_value = 0;
  double max_value = 0;  ///< grid sides: at most the fabric's (checked against the preset)
  bool hardware_time = false;  ///< true: a cycle count of the hardware itself, so the cost
                               ///< parameter of the same name follows it (alpha_cycles_per_hop)
};

/// The sweepable keys, in the order points are labelled and expanded.
const std::vector<HardwareAxis>& hardware_axes();

/// Fraction of grid PEs wafer.defect_rate may take (above it hardly any rectangle is defect-free).
constexpr double kMaxDefectRate = 0.01;

/// Reads `sweep`, `sweep_mode`, `defect_rate` and `defect_seed` of the `wafer` section (`node`)
/// against the base wafer `base` (its listed defects already read).
void read_wafer_sweep(yaml::Validator& v, const yaml::Node& node, const wafer::WaferParams& base, WaferSweep& sweep);

/// The hardware points of a sweep over `base` (whose own defects are replaced by the sweep's listed
/// ones and its random map): one point, the base, without axes. Random defects are drawn here.
std::vector<HardwarePoint> hardware_points(const wafer::WaferParams& base, const cost::CostParams& params,
                                           const WaferSweep& sweep);

/// The value of hardware axis `key` on wafer `w`; `defect_rate` is the rate its defects were drawn at
/// (a wafer holds the drawn PEs, not the rate). Throws InternalError for a key not in hardware_axes().
double hardware_value(const wafer::WaferParams& w, const std::string& key, double defect_rate);

/// The defect count a rate gives on a grid: round(rate x PEs).
std::int64_t defect_count(double rate, std::int64_t grid_w, std::int64_t grid_h);

}  // namespace wavel::config
