// Routed rows over experts (a Zipf skew, capped by the tokens) and experts over an expert CUT's groups.
#include "wavel/workload/routing.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

#include "wavel/common/error.hpp"

namespace wavel::workload {

std::vector<std::int64_t> split_in_proportion(std::int64_t total, const std::vector<std::int64_t>& weights) {
  std::vector<std::int64_t> out(weights.size(), 0);
  const double sum = static_cast<double>(std::accumulate(weights.begin(), weights.end(), std::int64_t{0}));
  if (weights.empty() || total <= 0) return out;
  std::vector<double> exact(weights.size());
  for (std::size_t i = 0; i < weights.size(); ++i) {
    exact[i] = sum > 0 ? static_cast<double>(total) * static_cast<double>(weights[i]) / sum
                       : static_cast<double>(total) / static_cast<double>(weights.size());
  }
  std::vector<std::int64_t> floors(exact.size());
  std::int64_t given = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) {
    floors[i] = static_cast<std::int64_t>(std::floor(exact[i]));
    given += floors[i];
  }
  std::vector<std::size_t> order(exact.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return exact[a] - static_cast<double>(floors[a]) > exact[b] - static_cast<double>(floors[b]);
  });
  for (std::size_t i = 0; i < exact.size(); ++i) out[i] = floors[i];
  for (std::size_t j = 0; given < total && j < order.size(); ++j, ++given) ++out[order[j]];
  return out;
}

std::vector<std::int64_t> expert_rows(const MoeRouting& routing, std::int64_t experts, std::int64_t routed,
                                      std::int64_t tokens) {
  if (experts < 1 || routed < 0 || tokens < 0) throw InternalError("workload::expert_rows: negative sizes");
  const auto e = static_cast<std::size_t>(experts);
  // The cap holds every row even when the tokens could not (a routed count that is no multiple of them).
  tokens = std::max(tokens, (routed + experts - 1) / experts);
  // Water-filling in one pass: the weights descend, so the capped experts are a prefix; expert k is
  // capped when its share of what the uncapped ones take exceeds the cap.
  std::vector<double> weight(e), suffix(e + 1, 0.0), share(e, 0.0);
  for (std::size_t i = 0; i < e; ++i) weight[i] = std::pow(static_cast<double>(i + 1), -routing.skew);
  for (std::size_t i = e; i-- > 0;) suffix[i] = suffix[i + 1] + weight[i];
  const double cap = static_cast<double>(tokens);
  std::size_t capped = 0;
  while (capped < e) {
    const double left = static_cast<double>(routed) - cap * static_cast<double>(capped);
    if (left * weight[capped] / suffix[capped] <= cap) break;
    share[capped++] = cap;
  }
  const double left = static_cast<double>(routed) - cap * static_cast<double>(capped);
  for (std::size_t i = capped; i < e; ++i) share[i] = suffix[capped] > 0 ? left * weight[i] / suffix[capped] : 0.0;
  // Integers summing to routed, busiest first (the shares descend, so ties go to the busier).
  std::vector<std::int64_t> out(e);
  std::int64_t given = 0;
  for (std::size_t i = 0; i < e; ++i) {
    out[i] = std::min<std::int64_t>(tokens, static_cast<std::int64_t>(std::floor(share[i] + 1e-9)));
    given += out[i];
  }
  std::vector<std::size_t> order(e);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return share[a] - static_cast<double>(out[a]) > share[b] - static_cast<double>(out[b]);
  });
  for (std::size_t pass = 0; given < routed && pass < 2; ++pass) {
    for (std::size_t j = 0; j < e && given < routed; ++j) {
      if (out[order[j]] < tokens) {
        ++out[order[j]];
        ++given;
      }
    }
  }
  return out;
}

std::vector<std::vector<std::int64_t>> balance_groups(const std::vector<std::int64_t>& rows, std::int64_t groups) {
  const auto g = static_cast<std::size_t>(std::max<std::int64_t>(1, groups));
  const std::size_t e = rows.size();
  std::vector<std::vector<std::int64_t>> out(g);
  std::vector<std::int64_t> load(g, 0);
  std::vector<std::size_t> order(e);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rows[a] > rows[b]; });
  // Groups with room in a min-heap by (load, index): O(experts log groups).
  using Entry = std::pair<std::int64_t, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> open;
  for (std::size_t k = 0; k < g; ++k) {
    if (e / g + (k < e % g ? 1 : 0) > 0) open.emplace(0, k);
  }
  for (const std::size_t x : order) {
    const auto [was, best] = open.top();
    open.pop();
    out[best].push_back(static_cast<std::int64_t>(x));
    load[best] = was + rows[x];
    if (out[best].size() < e / g + (best < e % g ? 1 : 0)) open.emplace(load[best], best);
  }
  return out;
}

}  // namespace wavel::workload
