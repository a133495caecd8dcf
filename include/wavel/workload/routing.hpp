// How a MoE layer's routed rows spread over its experts and over the groups an expert CUT makes.
#pragma once

#include <cstdint>
#include <vector>

namespace wavel::workload {

/// workloads.moe_capacity_factor when the config gives none.
inline constexpr double kDefaultMoeCapacityFactor = 1.25;

/// The routing a MoE setting assumes: a systematic skew of the experts' loads and the busiest
/// group's fluctuation above its expected rows.
struct MoeRouting {
  /// A group of experts serves at most this x its expected share of the routed rows.
  double capacity_factor = kDefaultMoeCapacityFactor;
  /// Zipf exponent of the experts' loads: the e-th busiest expert's share is proportional to
  /// (e + 1)^-skew. 0: uniform routing.
  double skew = 0.0;
};

/// Rows of each of `experts` experts (busiest first) out of `routed` rows of `tokens` tokens, each
/// token routed to distinct experts, so no expert takes more than `tokens` (or routed / experts,
/// rounded up, if that is more): the Zipf shares with the excess of capped experts spread over the
/// others in proportion (one pass: the capped experts are the busiest), rounded to integers that
/// sum to `routed` (largest remainders, ties to the busier expert). Uniform routing gives every
/// expert routed / experts, the first routed % experts one more. O(experts log experts).
std::vector<std::int64_t> expert_rows(const MoeRouting& routing, std::int64_t experts, std::int64_t routed,
                                      std::int64_t tokens);

/// The experts of each of `groups` groups of experts / groups experts (groups must divide
/// experts), as indices into `rows`: the busiest expert first, each to the group with the fewest rows
/// so far that has room (ties to the lower group).
std::vector<std::vector<std::int64_t>> balance_groups(const std::vector<std::int64_t>& rows, std::int64_t groups);

/// `total` split over parts in proportion to `weights` (largest remainders, ties to the earlier part).
std::vector<std::int64_t> split_in_proportion(std::int64_t total, const std::vector<std::int64_t>& weights);

}  // namespace wavel::workload
