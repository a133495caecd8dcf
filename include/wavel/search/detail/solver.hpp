// The CUT/TUNE solver: a memoized dynamic program over (region shape, block range, depth) sub-problems
// with SRAM, bound, incumbent, dominance and symmetry pruning, and the P x P square layouts in snake
// order as a chain over fixed slots. Internal to src/search.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "wavel/search/detail/evaluator.hpp"

namespace wavel::search::detail {

/// A partial schedule of a sub-problem, in coordinates relative to the sub-problem's corner.
struct Point {
  double pass = 0;         ///< all stages one after another, transfers inside (and a root's crossing legs) included
  double stage = 0;        ///< slowest stage (transfers overlap with other micro-batches' compute)
  meshir::Rect entry;      ///< first leaf's used rectangle
  meshir::Rect exit;       ///< last leaf's used rectangle
  int plan = -1;
  meshir::Rect offset;     ///< where `plan` sits relative to the sub-problem (its own rectangle for a child)
  std::int64_t pes = 0;    ///< PEs of its regions
};

/// How to rebuild a point: a leaf, or a group of two parts, each a plan placed at an offset
/// rectangle relative to the point's sub-problem (a leaf takes its region from that rectangle).
struct Plan {
  bool leaf = true;
  int a = 0, b = 0;  ///< blocks
  std::int64_t used_w = 0, used_h = 0;
  std::int64_t used_dx = 0, used_dy = 0;  ///< the used rectangle's offset in the leaf's region
  int tune = 0;
  int parts[2] = {-1, -1};  ///< group: the earlier blocks' plan, then the later ones'
  meshir::Rect offsets[2];
};

/// The solver's plans by id, in pages that never move: a search keeps millions, and one growing
/// array spent a tenth of a dense decode search copying them into larger buffers.
class PlanStore {
 public:
  [[nodiscard]] std::size_t size() const { return size_; }
  void push_back(const Plan& p) {
    if (size_ % kPagePlans == 0) pages_.emplace_back(new Plan[kPagePlans]);
    pages_.back()[size_ % kPagePlans] = p;
    ++size_;
  }
  const Plan& operator[](std::size_t id) const { return pages_[id / kPagePlans][id % kPagePlans]; }

 private:
  static constexpr std::size_t kPagePlans = 4096;
  std::vector<std::unique_ptr<Plan[]>> pages_;
  std::size_t size_ = 0;
};

/// log10(10^a + 10^b), exact for sizes far beyond any integer type.
double log10_add(double a, double b);

/// Hash of a tuple of integers, each field mixed in turn (mix64), for the solver's memos.
struct TupleHash {
  template <typename... T>
  std::size_t operator()(const std::tuple<T...>& key) const {
    std::uint64_t h = 0x9e3779b97f4a7c15ULL;
    std::apply([&](const auto&... field) { ((h = mix64(h ^ static_cast<std::uint64_t>(field))), ...); }, key);
    return static_cast<std::size_t>(h);
  }
};

class Solver {
 public:
  Solver(PlanEvaluator::Impl& ev, const SearchOptions& options);

  /// Starts a piece of work: where its statistics go, and its clock (the time limit is per piece).
  void begin(SearchStats* stats, std::chrono::steady_clock::time_point start);

  /// The root of one rectangular footprint: the root CUT options assigned to `chunk` of `chunks`,
  /// and (chunk 0) the root as one leaf. Not memoized: the pieces of a root are disjoint.
  std::vector<Point> root_points(const meshir::Rect& rect, int chunk, int chunks,
                                 const std::vector<Objectives>& incumbents);

  /// Complete schedules on the first k P x P slots in snake order, k = 1, 2, ..., each slot one leaf
  /// holding consecutive blocks (every TUNE, the whole square used).
  std::vector<Point> square_points(std::int64_t side, const std::vector<Objectives>& incumbents);

  /// log10 of the unpruned tree's nodes below a rectangular footprint (every leaf used size and
  /// TUNE, every combination a CUT chains), and below a square layout.
  double tree_log10(const meshir::Rect& rect);
  double square_tree_log10(std::int64_t side);

  /// CUT options in the first two levels below a footprint: the root's, and each child's of each
  /// root option. Cheap, and it grows with the cut positions as the whole search does (squared).
  /// Counting stops once it passes `limit`.
  std::int64_t top_cut_options(const meshir::Rect& rect, std::int64_t limit);

  /// Leaves of a plan in block order, at absolute coordinates; `rect` is where the plan sits.
  void leaves_of(int id, const meshir::Rect& rect, std::vector<Leaf>& out) const;

 private:
  struct CutOption {
    std::vector<meshir::Rect> rects;  ///< children in block order, relative to the parent's corner
    std::vector<int> bounds;          ///< block boundaries: a, then each child's end
  };
  struct RootSlice {
    int chunk;
    int chunks;
    const std::vector<Objectives>* incumbents;
  };

  const std::vector<Point>& solve(const meshir::Rect& rect, int a, int b, int depth);
  bool out_of_time();
  /// Throws Cancelled if the options' stop flag is raised.
  void check_stop() const;
  bool contains_defect(const meshir::Rect& r) const;
  int split_point(int a, int b, double ratio) const;
  std::vector<std::vector<meshir::Rect>> divisions(std::int64_t w, std::int64_t h) const;
  std::vector<std::vector<int>> boundaries(const std::vector<meshir::Rect>& rects, int a, int b, std::int64_t area,
                                           bool root) const;
  std::vector<std::vector<meshir::Rect>> sram_cuts(const meshir::Rect& rect, int a, int b) const;
  std::vector<CutOption> cut_options(const meshir::Rect& rect, int a, int b, bool root, bool mirrors);
  std::vector<std::pair<std::int64_t, std::int64_t>> used_sizes(std::int64_t w, std::int64_t h, int a, int b) const;
  std::vector<std::pair<std::int64_t, std::int64_t>> anchors(const meshir::Rect& rect, std::int64_t used_w,
                                                              std::int64_t used_h) const;
  std::vector<Point> leaf_points(const meshir::Rect& rect, int a, int b);
  CostId best_tune(int a, int b, std::int64_t w, std::int64_t h, const std::vector<int>& types);
  Point leaf_point(const meshir::Rect& rect, int a, int b, const meshir::Rect& used, int tune, double cycles);
  void cut_points(const meshir::Rect& rect, int a, int b, int depth, std::vector<Point>& points,
                  const RootSlice& slice);
  /// Adds a pipeline part's crossing legs (PlanEvaluator::Impl::crossings) to the pass of complete
  /// schedules (root points, whose rectangles are the wafer's own).
  void add_crossings(std::vector<Point>& points) const;
  double min_block(int type, std::int64_t w, std::int64_t h, int depth);
  std::pair<double, double> lower_bounds(const CutOption& c, int depth);
  bool bound_pruned(const CutOption& c, const std::vector<Point>& points, double pass_lb, double stage_lb,
                    bool root) const;
  bool incumbent_beats(double pass_lb, double stage_lb, std::int64_t pes,
                       const std::vector<Objectives>& incumbents) const;
  double reach_margin(const meshir::Rect& p, const meshir::Rect& region, int after_block) const;
  double end_margin(const meshir::Rect& p, const meshir::Rect& q, int after_block) const;
  bool dominates_everywhere(const Point& p, const Point& q, int a, int b) const;
  std::vector<Point> filter(std::vector<Point> points, int a, int b, bool root);
  std::pair<double, double> tree_size(std::int64_t w, std::int64_t h, int a, int b, int depth);

  PlanEvaluator::Impl& ev_;
  SearchOptions opt_;
  SearchStats* stats_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::int64_t> resident_prefix_;
  bool has_defects_ = false;
  wafer::DefectIndex defects_;
  // Memos looked up once per node of the tree: hashed, as an ordered map's walk was 30 % of
  // tree_size. Only found and added to, never iterated, so their order cannot reach a result.
  std::unordered_map<std::tuple<std::int64_t, std::int64_t, int, int, int, std::int64_t, std::int64_t>, std::vector<Point>,
                     TupleHash>
      memo_;
  std::unordered_map<std::tuple<std::int64_t, std::int64_t, int, int, int>, std::pair<double, double>, TupleHash> tree_memo_;
  std::unordered_map<std::tuple<int, std::int64_t, std::int64_t, int>, double, TupleHash> min_block_memo_;
  /// Fastest fitting TUNE of blocks [a, b) on a used size, by leaf_key: the same leaf recurs under
  /// many regions and depths, and its choice depends on nothing else.
  std::unordered_map<std::uint64_t, CostId> leaf_best_;
  std::vector<const BlockCost*> by_tune_;  ///< best_tune's scratch: each TUNE's cost per block type
  /// Per set of block types (sorted): the TUNEs whose placements differ, the first of each kind. A
  /// TUNE that places every one of those types as an earlier TUNE does (same_placement) costs the
  /// same and loses the tie, so best_tune skips it.
  std::map<std::vector<int>, std::vector<int>> distinct_tunes_;
  const std::vector<int>& distinct_tunes(const std::vector<int>& types);
  PlanStore plans_;
};

}  // namespace wavel::search::detail
