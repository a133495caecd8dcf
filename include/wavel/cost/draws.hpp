// Parameter draws from a fit's uncertainty, and a schedule's throughput under each draw (Kokkos).
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/wafer/wafer.hpp"

namespace wavel::cost {

/// F with F F^T = `covariance`: the Cholesky factor over the parameters of non-zero variance (lower
/// triangular), else pivoted LDL^T's P^T L D^1/2 (pivots within 1e-10 of zero, rounding, taken as
/// 0); std::nullopt if the matrix is not positive semi-definite.
std::optional<std::vector<std::vector<double>>> covariance_factor(const std::vector<std::vector<double>>& covariance);

/// The distribution with `pinned` parameters held at their value: the covariance of the others
/// conditioned on them (Schur complement), so no draw moves a pinned parameter. Unknown names are
/// ignored (they carry no uncertainty anyway).
ParamUncertaintySpec pin(const ParamUncertaintySpec& spec, const std::vector<std::string>& pinned);

/// `draws` parameter sets: ln p = ln center + L z with L L^T the spec's covariance and z standard
/// normal from a counter-based generator keyed by (seed, draw, parameter), so every rank and thread
/// count draws the same sets. Each drawn value is clamped into its registry bounds. Empty when the
/// spec has no parameters or draws is 0. Throws DataError if the covariance is not positive
/// semi-definite.
std::vector<CostParams> draw_params(const CostParams& center, const ParamUncertaintySpec& spec, std::int64_t draws,
                                    std::uint64_t seed);

/// tokens/s of `schedule` under each parameter set, evaluated in parallel (Kokkos host space);
/// entry i belongs to params[i].
std::vector<double> tokens_per_s_under(const meshir::Schedule& schedule, const wafer::WaferParams& wafer,
                                       const std::vector<CostParams>& params, bool decode, std::int64_t prompt_tokens);

/// A central 90 % interval: the 5th and 95th percentiles (linear interpolation between order
/// statistics). NaN bounds for no samples or any non-finite sample.
struct Interval {
  double lo = 0;
  double hi = 0;
};
Interval interval_90(std::vector<double> samples);

}  // namespace wavel::cost
