// Search options small enough for a unit test, shared by the tests that compare two spaces.
#pragma once

#include "wavel/search/options.hpp"

namespace wavel::test {

// One CUT level (halves and thirds), one group scale, whole and half used sides.
inline search::SearchOptions one_level_options() {
  search::SearchOptions o;
  o.cut_ratios = {0.5};
  o.strip_counts = {3};
  o.max_cut_depth = 1;
  o.group_scales = {1.0};
  o.used_fractions = {1.0, 0.5};
  return o;
}

}  // namespace wavel::test
