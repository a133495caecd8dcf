// Pareto filtering and a slicing hypervolume (exact for three objectives).
#include "wavel/search/pareto.hpp"

#include <algorithm>
#include <tuple>

namespace wavel::search {

namespace {

bool equal_in(const Objectives& a, const Objectives& b, const ObjectiveSet& s) {
  return (!s.throughput || a.tokens_per_s == b.tokens_per_s) && (!s.latency || a.latency_s == b.latency_s) &&
         (!s.pes || a.pes == b.pes);
}

}  // namespace

bool no_worse(const Objectives& a, const Objectives& b, const ObjectiveSet& s) {
  return (!s.throughput || a.tokens_per_s >= b.tokens_per_s) && (!s.latency || a.latency_s <= b.latency_s) &&
         (!s.pes || a.pes <= b.pes);
}

bool dominates(const Objectives& a, const Objectives& b, const ObjectiveSet& s) {
  const bool better = (s.throughput && a.tokens_per_s > b.tokens_per_s) || (s.latency && a.latency_s < b.latency_s) ||
                      (s.pes && a.pes < b.pes);
  return no_worse(a, b, s) && better;
}

Objectives stage_objectives(double pass_cycles, double stage_cycles, std::int64_t pes, double clock_hz) {
  return Objectives{stage_cycles > 0 ? clock_hz / stage_cycles : 0.0, pass_cycles / clock_hz, pes, 0};
}

std::vector<Objectives> pareto_front(std::vector<Objectives> points, const ObjectiveSet& set) {
  std::sort(points.begin(), points.end(), [](const Objectives& a, const Objectives& b) {
    return std::make_tuple(-a.tokens_per_s, a.latency_s, a.pes, a.id) <
           std::make_tuple(-b.tokens_per_s, b.latency_s, b.pes, b.id);
  });
  std::vector<Objectives> front;
  for (const auto& p : points) {
    bool keep = true;
    for (const auto& f : front) {
      if (equal_in(f, p, set) || dominates(f, p, set)) {
        keep = false;
        break;
      }
    }
    if (keep) front.push_back(p);
  }
  return front;
}

double normalized_hypervolume(const std::vector<Objectives>& front, const HypervolumeReference& ref) {
  double max_tps = 0;
  for (const auto& p : front) max_tps = std::max(max_tps, p.tokens_per_s);
  if (front.empty() || max_tps <= 0 || ref.latency_ref_s <= 0 || ref.pes_ref <= 0) return 0.0;
  // Slice along PEs: between consecutive PE levels, the dominated area in (throughput, latency) is
  // that of the points using at most that many PEs.
  std::vector<std::int64_t> levels;
  for (const auto& p : front) {
    if (p.pes < ref.pes_ref) levels.push_back(p.pes);
  }
  std::sort(levels.begin(), levels.end());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  double volume = 0;
  for (std::size_t i = 0; i < levels.size(); ++i) {
    const std::int64_t next = i + 1 < levels.size() ? levels[i + 1] : ref.pes_ref;
    std::vector<std::pair<double, double>> pts;  // (latency, throughput)
    for (const auto& p : front) {
      if (p.pes <= levels[i] && p.latency_s < ref.latency_ref_s) pts.emplace_back(p.latency_s, p.tokens_per_s);
    }
    std::sort(pts.begin(), pts.end());
    double area = 0, best_tps = 0;
    for (std::size_t j = 0; j < pts.size(); ++j) {
      best_tps = std::max(best_tps, pts[j].second);
      const double next_latency = j + 1 < pts.size() ? pts[j + 1].first : ref.latency_ref_s;
      area += best_tps * (next_latency - pts[j].first);
    }
    volume += area * static_cast<double>(next - levels[i]);
  }
  return volume / (max_tps * ref.latency_ref_s * static_cast<double>(ref.pes_ref));
}

}  // namespace wavel::search
