// The wafer section's figures, declared once: the reader, the resolved YAML, the what-if axes (which
// of them a sweep may vary, and how far) and docs/config.md's wafer table come from this table.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "wavel/config/keys.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::config::detail {

struct WaferKey {
  std::string name;
  std::string unit;
  std::string meaning;
  bool integer = true;
  double lo = 0, hi = 0;  ///< bounds when read (the grid sides: up to the fabric less its border)
  bool lo_exclusive = false;
  std::function<double(const wafer::WaferParams&)> get;
  std::function<void(wafer::WaferParams&, double)> set;
  bool read_by_hand = false;  ///< the grid sides: bounded by the fabric read before them
  int sweep_rank = -1;        ///< position among the what-if axes (labels and expansion order); -1: not swept
  double sweep_lo = 0, sweep_hi = 0;  ///< a sweep's bounds (grid sides: up to the base fabric's)
  bool hardware_time = false;  ///< a hardware cycle count: the cost parameter of the same name follows it
};

/// The figures of a wafer, in the resolved YAML's order.
const std::vector<WaferKey>& wafer_keys();

/// The wafer section's other keys (preset first, then the defects and the sweep): name and docs.
const std::vector<KeyDoc>& wafer_other_keys();

/// The row of `name`, or nullptr.
const WaferKey* find_wafer_key(const std::string& name);

}  // namespace wavel::config::detail
