// CUT/TUNE schedule search for one setting: guillotine CUTs split a region and its blocks of work,
// TUNE picks each leaf's used size, K-tree groups and layout; P x P square layouts in snake order
// chain consecutive blocks over fixed slots; exact dynamic programming over sub-problems with SRAM,
// bound, incumbent, dominance, symmetry and memoization pruning; a Pareto front over the selected
// objectives (throughput, latency, PEs). Block evaluator: detail/evaluator.hpp; solver:
// detail/solver.hpp; pieces and front assembly: search.cpp.
#pragma once

#include <atomic>
#include <exception>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wavel/cost/params.hpp"
#include "wavel/meshir/placer.hpp"
#include "wavel/meshir/schedule.hpp"
#include "wavel/search/options.hpp"
#include "wavel/search/pareto.hpp"
#include "wavel/wafer/wafer.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::search {

/// Thrown out of a search whose stop_flag was raised; the piece produced nothing.
using Cancelled = wavel::Cancelled;

/// What the search did, counted per pruning rule (docs/search.md defines each).
struct SearchStats {
  std::int64_t nodes_visited = 0;          ///< partial schedules generated: leaves (used size, best TUNE) and combinations
  double exhaustive_tree_log10 = -std::numeric_limits<double>::infinity();  ///< log10 of the unpruned tree's nodes
  std::int64_t cut_options = 0;            ///< CUT options met (mirrors not generated excluded), before pruning
  std::int64_t subproblems = 0;            ///< (region, block range, depth) sub-problems entered, memo hits included
  std::int64_t pruned_sram = 0;            ///< CUT options, footprints and layouts that cannot hold their blocks
  std::int64_t pruned_bound = 0;           ///< CUT options whose lower bound a point of the same sub-problem beats
  std::int64_t pruned_incumbent = 0;       ///< root CUT options and square slot counts an incumbent strictly dominates
  std::int64_t pruned_dominance = 0;       ///< partial schedules dropped as dominated in their sub-problem
  std::int64_t pruned_tune = 0;            ///< leaf TUNE options slower than the leaf's best (same interface)
  std::int64_t pruned_symmetry = 0;        ///< mirrored root CUTs not generated
  std::int64_t memo_hits = 0;              ///< sub-problems answered from the memo
  std::int64_t tunes_scored = 0;           ///< leaf TUNE options scored (sums of memoized block costs)
  std::int64_t candidates_evaluated = 0;   ///< complete schedules scored (a piece's root points)
  std::int64_t block_costs = 0;            ///< per-block cost-model evaluations (the memoized table)
  bool timed_out = false;
  double wall_s = 0;                       ///< timing only: not part of the results

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("nodes_visited", "1", r.nodes_visited);
    v("exhaustive_tree_log10", "log10", r.exhaustive_tree_log10);
    v("cut_options", "1", r.cut_options);
    v("subproblems", "1", r.subproblems);
    v("pruned_sram", "1", r.pruned_sram);
    v("pruned_bound", "1", r.pruned_bound);
    v("pruned_incumbent", "1", r.pruned_incumbent);
    v("pruned_dominance", "1", r.pruned_dominance);
    v("pruned_tune", "1", r.pruned_tune);
    v("pruned_symmetry", "1", r.pruned_symmetry);
    v("memo_hits", "1", r.memo_hits);
    v("tunes_scored", "1", r.tunes_scored);
    v("candidates_evaluated", "1", r.candidates_evaluated);
    v("block_costs", "1", r.block_costs);
    v("timed_out", "bool", r.timed_out);
    v("wall_s", "s", r.wall_s);
  }
};

/// One schedule on the front.
struct FrontPoint {
  Objectives objectives;
  std::string source;                      ///< "search", or "seed:<baseline>"
  std::int64_t microbatches = 1;
  std::int64_t prompt_chunks = 1;
  std::int64_t stages = 1;
  double sram_headroom = 0;
  meshir::Schedule schedule;
};

/// The outcome for one setting.
struct SearchResult {
  std::vector<FrontPoint> front;           ///< sorted by (-throughput, latency, PEs, id)
  std::size_t best = 0;                    ///< index of the highest-throughput point (front[0])
  double hypervolume = 0;                  ///< normalized; reference in docs/search.md
  HypervolumeReference reference;
  SearchStats stats;
};

/// A leaf of a complete plan: blocks [first_block, end_block) on `region` using used_w x used_h PEs
/// at offset (used_dx, used_dy) from its top-left corner (a corner of the region), with TUNE `tune`.
struct Leaf {
  meshir::Rect region;
  std::int64_t used_w = 0, used_h = 0;
  int tune = 0;
  int first_block = 0, end_block = 0;
  std::int64_t used_dx = 0, used_dy = 0;

  [[nodiscard]] meshir::Rect used() const { return meshir::Rect{region.x + used_dx, region.y + used_dy, used_w, used_h}; }
};

/// One unit of a setting's search, fixed by the setting and options alone (never by the rank
/// count), so any number of ranks splits a sweep into the same pieces and finds the same front.
struct SearchPiece {
  std::int64_t microbatches = 1;
  std::int64_t prompt_chunks = 1;  ///< prefill: token chunks per prompt (workload::chunk_prompt)
  int footprint = 0;  ///< the grid, its top-left 3/4, 1/2, 1/4 per side, the SRAM footprints, then the P x P square layouts
  int chunk = 0;      ///< root CUT options hashed (search.seed) to `chunk` of `chunks`, square sides by index modulo `chunks`; chunk 0 also the root as one leaf
  int chunks = 1;
};

/// Prompt chunk counts the search tries (prefill): 1 and the configured counts that divide the
/// prompt, ascending; {1} in decode. The space without chunking is always a subset.
std::vector<std::int64_t> prompt_chunk_choices(const workload::WorkloadShape& shape, const SearchOptions& options);

/// The pieces of one setting, in the order a single process runs them.
std::vector<SearchPiece> search_pieces(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                       const SearchOptions& options);

/// The size of a setting's search before it runs, without searching: the search's own time depends
/// on pruning, so the size is given against the default search options' on the same setting.
struct SearchSizeEstimate {
  std::int64_t pieces = 0;                ///< tasks the sweep hands out for this setting
  std::int64_t top_cut_options = 0;       ///< CUT options in the top two levels, over footprints and microbatch counts
  std::int64_t default_top_cut_options = 0;  ///< the same with the default search options
  bool at_least = false;  ///< counting stopped past kCountedMultiple x the default: the size is at least this
  static constexpr std::int64_t kCountedMultiple = 20;
  [[nodiscard]] double relative_to_default() const {
    return default_top_cut_options > 0 ? static_cast<double>(top_cut_options) / static_cast<double>(default_top_cut_options)
                                       : 1.0;
  }
};
SearchSizeEstimate estimate_search_size(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                        const cost::CostParams& params, const SearchOptions& options,
                                        const SearchOptions& defaults);

/// A complete schedule found by a piece (rebuilt from its leaves) or a seed (rebuilt by name).
/// A pipeline part's crossings to the wafers around it: what the on-wafer legs of the crossing in
/// and of the crossing out add to the joined pipeline (cost::leg_cycles), and the link's own time
/// for the crossing out (its latency and bytes at the link's bandwidth).
struct PartCrossings {
  double in_leg_cycles = 0;
  double out_leg_cycles = 0;
  double out_link_cycles = 0;

  /// What a part's pass carries in its objectives.
  [[nodiscard]] double legs_cycles() const { return in_leg_cycles + out_leg_cycles; }

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("in_leg_cycles", "cycles", r.in_leg_cycles);
    v("out_leg_cycles", "cycles", r.out_leg_cycles);
    v("out_link_cycles", "cycles", r.out_link_cycles);
  }
};

struct SearchCandidate {
  Objectives objectives;                 ///< from cost::evaluate; id unused
  std::string source;                    ///< "search", or "seed:<baseline>"
  std::int64_t microbatches = 1;
  std::int64_t prompt_chunks = 1;
  double sram_headroom = 0;
  double pass_cycles = 0;                ///< from cost::evaluate: what a multi-wafer pipeline adds up
  double stage_cycles = 0;               ///< its slowest stage: what paces such a pipeline
  PartCrossings crossings;               ///< a pipeline part's (its objectives' latency includes the legs, pass_cycles not)
  std::vector<Leaf> leaves;              ///< search candidates only

  template <class Self, class Visit>
  static void fields(Self& r, Visit&& v) {
    v("objectives", "", r.objectives);
    v("source", "", r.source);
    v("microbatches", "1", r.microbatches);
    v("prompt_chunks", "1", r.prompt_chunks);
    v("sram_headroom", "1", r.sram_headroom);
    v("pass_cycles", "cycles", r.pass_cycles);
    v("stage_cycles", "cycles", r.stage_cycles);
    v("crossings", "", r.crossings);
    v("leaves", "", r.leaves);
  }
};

struct PieceResult {
  std::vector<SearchCandidate> candidates;  ///< the piece's own front
  SearchStats stats;
};

/// A pipeline part's schedule's crossings (see SearchCandidate::crossings): all 0 unless
/// options.pipeline_part and `w` is a pipeline stage; a side with no crossing is 0.
PartCrossings part_crossings(const meshir::Schedule& part, const workload::Workload& w, const SearchOptions& options,
                             const wafer::WaferParams& wafer, const cost::CostParams& params);

/// Scores seed schedules; the ones that do not fit or do not verify are left out. A pipeline part's
/// (options.pipeline_part) take stage_objectives, with their crossing legs in the pass.
std::vector<SearchCandidate> seed_candidates(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                             const cost::CostParams& params,
                                             const std::vector<std::pair<std::string, meshir::Schedule>>& seeds,
                                             const SearchOptions& options = {});

/// Runs pieces; keeps the last (setting, micro-batch count)'s block costs and memo between calls.
class SearchWorkspace {
 public:
  SearchWorkspace();
  ~SearchWorkspace();
  SearchWorkspace(const SearchWorkspace&) = delete;
  SearchWorkspace& operator=(const SearchWorkspace&) = delete;
  /// `setting_key` names the setting (same key, same workload); `incumbents` are schedules found so
  /// far, used only to skip root options they provably beat, so the result never depends on them.
  PieceResult run(const std::string& setting_key, const workload::Workload& workload, const wafer::WaferParams& wafer,
                  const cost::CostParams& params, const SearchOptions& options, const SearchPiece& piece,
                  const std::vector<Objectives>& incumbents);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// Adds a piece's counters to a setting's.
void accumulate(SearchStats& total, const SearchStats& part);

/// The setting's front from seed candidates then piece candidates, in piece order (ids follow
/// that order, so ties break the same way for any split).
SearchResult assemble(const workload::Workload& workload, const wafer::WaferParams& wafer,
                      const cost::CostParams& params, const SearchOptions& options,
                      const std::vector<std::pair<std::string, meshir::Schedule>>& seeds,
                      const std::vector<SearchCandidate>& candidates, const SearchStats& stats);

/// Searches one setting. `seeds` (name, schedule) are scored with the cost model and enter the
/// front beside the searched points, so the front is never worse than them.
SearchResult search_setting(const workload::Workload& workload, const wafer::WaferParams& wafer,
                            const cost::CostParams& params, const SearchOptions& options,
                            const std::vector<std::pair<std::string, meshir::Schedule>>& seeds);

/// Scores complete plans of one setting and micro-batch count from memoized per-block costs:
/// the search's inner loop, exposed for benchmarks and tests.
class PlanEvaluator {
 public:
  PlanEvaluator(const workload::Workload& workload, const wafer::WaferParams& wafer, const cost::CostParams& params,
                std::int64_t microbatches, const std::vector<double>& group_scales = {1.0, 0.5, 2.0},
                const std::vector<std::int64_t>& expert_groups = {1, 2, 4, 8}, TuneKinds kinds = {});
  ~PlanEvaluator();
  PlanEvaluator(const PlanEvaluator&) = delete;
  PlanEvaluator& operator=(const PlanEvaluator&) = delete;

  /// The TUNE choices leaves may use.
  [[nodiscard]] const std::vector<meshir::Tune>& tunes() const;
  [[nodiscard]] int blocks() const;
  /// Fills the memo for these leaves (parallel over missing entries); evaluate() needs it.
  void prepare(const std::vector<Leaf>& leaves);
  /// Objectives of the plan whose leaves run in this order (one pipeline stage each); infeasible
  /// plans (SRAM) get zero throughput.
  [[nodiscard]] Objectives evaluate(const std::vector<Leaf>& leaves) const;
  /// The plan as MeshIR.
  [[nodiscard]] meshir::Schedule build(const std::vector<Leaf>& leaves) const;

  struct Impl;
  /// The memoized tables, for the search itself.
  Impl& impl() { return *impl_; }

 private:
  Impl* impl_;
};

/// The evaluator the search uses for one (micro-batch count, prompt chunks) of a setting or part:
/// one chunk's blocks (workload::chunk_prompt) with the options' TUNE choices.
std::unique_ptr<PlanEvaluator> make_evaluator(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                              const cost::CostParams& params, const SearchOptions& options,
                                              std::int64_t microbatches, std::int64_t prompt_chunks);

}  // namespace wavel::search
