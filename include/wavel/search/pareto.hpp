// Pareto fronts over (throughput, latency, PEs), their hypervolume, and the deterministic
// (cost, id) ordering every reduction in the search uses.
#pragma once

#include <cstdint>
#include <vector>

namespace wavel::search {

/// One evaluated complete schedule, in the objectives the front is built on.
struct Objectives {
  double tokens_per_s = 0;   ///< maximise
  double latency_s = 0;      ///< minimise (TPOT in decode, mean TTFT in prefill)
  std::int64_t pes = 0;      ///< minimise
  std::int64_t id = 0;       ///< tie-breaker: lower wins among equal points

  /// What travels between ranks (the id is each front's own).
  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("tokens_per_s", "tokens/s", r.tokens_per_s);
    v("latency_s", "s", r.latency_s);
    v("pes", "PEs", r.pes);
  }
};

/// A pipeline part's objectives: the rate of its slowest stage (clock / stage cycles, in the
/// throughput slot), its pass in seconds (in the latency slot) and its PEs. A joined pipeline's
/// round or makespan grows with the sum of its parts' passes and the largest of their stages
/// (cost::pipeline), so the best joined pipeline can be made of parts on these fronts.
Objectives stage_objectives(double pass_cycles, double stage_cycles, std::int64_t pes, double clock_hz);

/// Which objectives a front is built on (search.objectives); the others are carried, not compared.
struct ObjectiveSet {
  bool throughput = true;
  bool latency = true;
  bool pes = true;
};

/// a is no worse than b in every selected objective (equal points included).
bool no_worse(const Objectives& a, const Objectives& b, const ObjectiveSet& set = {});

/// a dominates b: no worse in every selected objective and better in at least one.
bool dominates(const Objectives& a, const Objectives& b, const ObjectiveSet& set = {});

/// The non-dominated points, sorted by (-tokens_per_s, latency_s, pes, id); of points equal in the
/// selected objectives only the first in that order stays.
std::vector<Objectives> pareto_front(std::vector<Objectives> points, const ObjectiveSet& set = {});

/// Reference point of the hypervolume: zero throughput, `latency_ref_s`, `pes_ref`.
struct HypervolumeReference {
  double latency_ref_s = 0;
  std::int64_t pes_ref = 0;
};

/// Volume dominated by the front inside the box [0, max throughput] x [latency, latency_ref] x
/// [pes, pes_ref], divided by that box's volume (so 1 is a single point at zero latency and zero PEs).
/// Points beyond the reference contribute nothing.
double normalized_hypervolume(const std::vector<Objectives>& front, const HypervolumeReference& ref);

}  // namespace wavel::search
