// The search's block evaluator: per-block costs from the cost model, memoized per (block type, used
// size, TUNE), and the incremental scoring of leaves, transfers and complete plans built from them.
// Internal to src/search.
#pragma once

#include <Kokkos_Core.hpp>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <list>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/search/blocks.hpp"
#include "wavel/search/detail/crossings.hpp"
#include "wavel/search/search.hpp"

namespace wavel::search::detail {

/// (cost, id) pair reduced deterministically: lower cost wins, then lower id.
struct CostId {
  double cost;
  int id;
};

/// Kokkos reducer ordered on (cost, id); Kokkos::MinLoc does not break ties deterministically.
struct MinCostId {
  using reducer = MinCostId;
  using value_type = CostId;
  using result_view_type = Kokkos::View<value_type, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;

  KOKKOS_INLINE_FUNCTION explicit MinCostId(value_type& value) : value_(&value) {}
  KOKKOS_INLINE_FUNCTION static bool less(const value_type& a, const value_type& b) {
    return a.cost < b.cost || (a.cost == b.cost && a.id < b.id);
  }
  KOKKOS_INLINE_FUNCTION void join(value_type& dest, const value_type& src) const {
    if (less(src, dest)) dest = src;
  }
#if KOKKOS_VERSION < 30700
  KOKKOS_INLINE_FUNCTION void join(volatile value_type& dest, const volatile value_type& src) const {
    if (src.cost < dest.cost || (src.cost == dest.cost && src.id < dest.id)) {
      dest.cost = src.cost;
      dest.id = src.id;
    }
  }
#endif
  KOKKOS_INLINE_FUNCTION void init(value_type& v) const {
    v.cost = std::numeric_limits<double>::infinity();
    v.id = INT_MAX;
  }
  KOKKOS_INLINE_FUNCTION value_type& reference() const { return *value_.data(); }
  result_view_type view() const { return value_; }
  KOKKOS_INLINE_FUNCTION bool references_scalar() const { return true; }

 private:
  result_view_type value_;
};

// Runs `body(space)` on Kokkos::Serial when asked or when `items` are too few to pay for waking
// the threads (a parallel region costs microseconds; a leaf's tune choice is a few items of
// nanoseconds each), else on the default host space; results never depend on which.
template <class Body>
void on_host_space(bool serial, std::size_t items, std::size_t min_parallel_items, Body&& body) {
#ifdef KOKKOS_ENABLE_SERIAL
  if (serial || items < min_parallel_items) {
    body(Kokkos::Serial());
    return;
  }
#else
  (void)serial;
  (void)items;
  (void)min_parallel_items;
#endif
  body(Kokkos::DefaultHostExecutionSpace());
}

/// One block alone on a used rectangle, from the cost model (decoder blocks already scaled by the
/// workload's layer subset, as cost::evaluate scales them).
struct BlockCost {
  double cycles = 0;
  std::int64_t resident = 0;  ///< weights + KV bytes per PE
  std::int64_t buffers = 0;   ///< double-buffered activations per PE
  int first_axis = -1;        ///< allreduce axis of the first and last GEMV (-1: none)
  int last_axis = -1;
  int branch_narrowing = 1;   ///< Tune::concurrent_branches: the strip width chosen (meshir::kBranchNarrowings)
  bool sibling_branches = false;  ///< Tune::sibling_branches chosen (the rule: PlanEvaluator::Impl::compute_scales)
};

/// A table entry: (block type, used width, used height, TUNE index).
using TableKey = std::tuple<int, std::int64_t, std::int64_t, int>;

/// MurmurHash3's 64-bit finaliser: every bit of x reaches the low bits, for tables indexed by them.
inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/// One block's costs by (used width, used height, TUNE). Each used size is a row of every distinct
/// placement's cost side by side, found by open addressing in one array: the search reads a size's
/// TUNEs together, so a row costs one cache miss instead of one per TUNE, and millions of entries
/// neither cost a heap node each nor scatter the heap the search's short-lived allocations share.
/// TUNEs that place the block alike (PlanEvaluator::Impl::same_placement) share one column: a
/// decode attention block has 36 distinct placements among 576 DeepSeek TUNEs, and rows of every
/// TUNE spent a sixth of such a search filling and faulting in copies.
class CostTable {
 public:
  /// Every TUNE its own column.
  explicit CostTable(int tunes);
  /// TUNE t in column column_of[t]; the columns must be 0 .. n-1, each used.
  explicit CostTable(std::vector<int> column_of);
  [[nodiscard]] int tunes() const { return static_cast<int>(column_of_.size()); }
  [[nodiscard]] const std::vector<int>& column_of() const { return column_of_; }
  /// The cost, or null when it was never emplaced (under this TUNE or one sharing its column).
  [[nodiscard]] const BlockCost* find(std::int64_t w, std::int64_t h, int tune) const {
    if (tune < 0 || tune >= tunes() || slots_.empty()) return nullptr;
    const std::uint64_t key = row_key(w, h);
    for (std::size_t i = slot_of(key);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i].key == key) {
        const BlockCost& c = costs_[slots_[i].row * columns_ + static_cast<std::size_t>(column_of_[static_cast<std::size_t>(tune)])];
        return std::isnan(c.cycles) ? nullptr : &c;
      }
      if (slots_[i].key == 0) return nullptr;
    }
  }
  /// Keeps an existing entry (equal keys have equal costs). Throws on a NaN cost, a size below 1
  /// or past 2^31, or a TUNE out of range.
  void emplace(std::int64_t w, std::int64_t h, int tune, const BlockCost& cost);
  [[nodiscard]] std::size_t size() const { return size_; }             ///< distinct costs held
  [[nodiscard]] std::size_t cost_slots() const { return costs_.size(); }  ///< costs held or reserved in rows

 private:
  struct Slot {
    std::uint64_t key = 0;  ///< 0: empty
    std::size_t row = 0;
  };
  static std::uint64_t row_key(std::int64_t w, std::int64_t h) {
    return (static_cast<std::uint64_t>(w) << 32) | static_cast<std::uint64_t>(h);  // nonzero: w >= 1
  }
  [[nodiscard]] std::size_t slot_of(std::uint64_t key) const {
    return static_cast<std::size_t>(mix64(key)) & (slots_.size() - 1);
  }
  std::vector<int> column_of_;
  std::size_t columns_ = 0;
  std::vector<Slot> slots_;
  std::vector<BlockCost> costs_;  ///< rows of columns_ costs; NaN cycles: not computed
  std::size_t rows_ = 0;
  std::size_t size_ = 0;
};

/// Block cost tables shared by the evaluators of one process, keyed by the exact content a cost
/// depends on (the block's ops, phase, layer scale, TUNE choices, wafer and parameters; never a
/// hash), so the parts of a pipeline, and the same model on other wafer counts, cost an identical
/// block once. Tables no evaluator holds are dropped least recently used first beyond a budget.
class BlockCostCache {
 public:
  explicit BlockCostCache(std::size_t max_entries = kDefaultMaxEntries) : max_entries_(max_entries) {}
  /// The table for this content (whose TUNEs lie in columns `column_of`), new and empty the first
  /// time; marks it most recently used. Throws if the content was seen with other columns.
  std::shared_ptr<CostTable> table(const std::string& content, const std::vector<int>& column_of);
  /// The same, every one of `tunes` TUNEs its own column.
  std::shared_ptr<CostTable> table(const std::string& content, int tunes);
  /// Drops unheld tables, least recently used first, while all tables' cost slots exceed the budget.
  void trim();
  [[nodiscard]] std::size_t tables() const { return order_.size(); }

  /// 32-byte costs (their vectors up to twice that) and a 16-byte index slot per row: at most
  /// about 140 MB of unheld tables.
  static constexpr std::size_t kDefaultMaxEntries = std::size_t{2} << 20;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<CostTable>>;
  std::size_t max_entries_;
  std::list<Entry> order_;  ///< most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

/// TUNE choices: K-tree group scales per axis and the feature entry axis (decode), each again with
/// every expert CUT that splits the experts evenly (MoE), and each of those again with the
/// operators that share an input fused when `kinds.fusion` (the blocks have some), and each of those
/// again with the epilogues split when `kinds.split_epilogues` (decode blocks that have one), and
/// each of those again with concurrent branches when `kinds.concurrent_branches` (MoE blocks with
/// shared experts).
std::vector<meshir::Tune> tune_choices(bool decode, const std::vector<double>& scales, std::int64_t experts,
                                       const std::vector<std::int64_t>& expert_groups,
                                       TuneKinds kinds = {false, false, false});

/// Used sizes TUNE may pick inside a side (fractions rounded up), each once.
std::vector<std::int64_t> used_sides(std::int64_t side, const std::vector<double>& fractions);

/// Used sizes derived from SRAM need in a w x h region, at a granularity of `step_pes`: member k of
/// each family (full width, full height, the region's aspect) has its free side(s) k x step_pes
/// (capped at the region). Family sizes grow with k; k runs from 1 to sram_family_members().
std::pair<std::int64_t, std::int64_t> sram_family_size(int family, std::int64_t k, std::int64_t w, std::int64_t h,
                                                       std::int64_t step_pes);
constexpr int kSramFamilies = 3;
std::int64_t sram_family_members(int family, std::int64_t w, std::int64_t h, std::int64_t step_pes);

}  // namespace wavel::search::detail

namespace wavel::search {

struct PlanEvaluator::Impl {
  wafer::WaferParams wafer;
  cost::CostParams params;
  bool decode = true;
  std::int64_t requests = 1;
  std::int64_t prompt_tokens = 0;
  std::int64_t microbatches = 1;
  std::int64_t prompt_chunks = 1;  ///< the workload's (workload::chunk_prompt): one chunk's blocks
  std::int64_t layers_total = 0;
  std::int64_t layer_scale = 1;
  workload::MoeRouting routing{1.0, 0.0};
  std::vector<Block> blocks;
  std::vector<workload::Layer> fused_blocks;  ///< blocks[i].ops with workload::fuse_shared_inputs, when fusing
  std::vector<double> block_scale;  ///< layer_scale for decoder blocks, 1 for embedding and head
  std::vector<int> representative;  ///< a block index per type
  std::vector<int> block_type;      ///< blocks[i].type, packed: the leaf sums read it per TUNE
  std::vector<meshir::Tune> tunes;
  std::vector<std::shared_ptr<detail::CostTable>> tables;  ///< per block type, private unless shared
  /// Per block type and TUNE, the first TUNE that places that type the same way (a fused, split or
  /// expert-CUT choice on a block with nothing to fuse, split or cut): the two share a table column.
  std::vector<std::vector<int>> same_placement;
  /// A type's table columns: one per distinct placement of same_placement, in order of first use.
  static std::vector<int> columns_of(const std::vector<int>& same);
  /// Per block type, the TUNEs that place it their own way (same_placement[t] == t), ascending: every
  /// cost of the type is one of theirs, so tables are filled and minimised over these alone.
  std::vector<std::vector<int>> own_placements;
  /// Per TUNE, the first TUNE equal to it apart from group scales: compute_missing places a block
  /// once for all of them.
  std::vector<int> scale_variant_of;
  std::int64_t computed = 0;
  bool serial = false;  ///< run the parallel loops on Kokkos::Serial (tests compare the two)
  bool pipeline_part = false;  ///< objectives() gives stage_objectives (SearchOptions::pipeline_part)
  /// A pipeline part's crossings to the wafers around it (set with pipeline_part; none otherwise):
  /// the solver adds their legs to the pass of every complete schedule of the part.
  detail::Crossings crossings;
  /// A block with a merged matmul is also costed with its products on strips (TuneKinds::sibling_branches).
  bool sibling_branches = false;

  Impl(const workload::Workload& w, const wafer::WaferParams& wf, const cost::CostParams& p, std::int64_t mb,
       const std::vector<double>& group_scales, const std::vector<std::int64_t>& expert_groups, TuneKinds kinds);

  /// Block i's ops as TUNE t places them.
  [[nodiscard]] const workload::Layer& ops_of(std::size_t i, const meshir::Tune& t) const {
    return t.fuse ? fused_blocks[i] : blocks[i].ops;
  }

  /// Takes each block type's table from `cache` (before any cost is computed), so evaluators of
  /// other settings and parts with identical blocks reuse each other's entries.
  void share_tables(detail::BlockCostCache& cache);
  [[nodiscard]] meshir::Schedule empty() const;
  /// One block alone on a w x h region, scored by the cost model itself.
  [[nodiscard]] detail::BlockCost compute(int type, std::int64_t w, std::int64_t h, int tune) const;
  /// compute() for several TUNEs that differ only in group scales (same scale_variant_of), in order.
  /// Where sibling_branches, a block with a merged matmul is costed with and without its products on
  /// strips and keeps the strips where they are faster by any route switch they may add at the
  /// block's ends and need no more resident bytes or buffers per PE: every leaf holding the block is
  /// then at least as fast and still fits, so the space without them stays a subset.
  [[nodiscard]] std::vector<detail::BlockCost> compute_scales(int type, std::int64_t w, std::int64_t h,
                                                              const std::vector<int>& tunes) const;
  /// placed_costs() for one sibling choice, at the fastest concurrent-branch width where the block
  /// has a branch.
  [[nodiscard]] std::vector<detail::BlockCost> narrowed_costs(const workload::Layer& block, std::int64_t w,
                                                              std::int64_t h, const std::vector<meshir::Tune>& ts) const;
  /// `block` placed alone on a w x h rectangle under each of `ts` (which differ only in group
  /// scales: placed once, meshir::regroup'ed for the others), costed.
  [[nodiscard]] std::vector<detail::BlockCost> placed_costs(const workload::Layer& block, std::int64_t w,
                                                            std::int64_t h, const std::vector<meshir::Tune>& ts) const;
  /// Computes the missing table entries in parallel; every entry is independent and pure.
  void ensure(std::vector<detail::TableKey> wanted);
  /// Costs `missing` (sorted, distinct, none in the tables) and stores them.
  void compute_missing(const std::vector<detail::TableKey>& missing);
  [[nodiscard]] bool has(int type, std::int64_t w, std::int64_t h, int tune) const;
  [[nodiscard]] const detail::BlockCost& get(int type, std::int64_t w, std::int64_t h, int tune) const;

  struct LeafCost {
    double cycles = 0;
    bool fits = false;
  };
  /// A leaf's running sums as its blocks join in order (leaf_of's rule, one block at a time).
  struct LeafSum {
    double cycles = 0;
    std::int64_t resident = 0, buffers = 0;
    int last_axis = -1;
  };
  /// Block `i` (costed `c`) joins `sum`: its cycles, a route switch if its first GEMV reduces along
  /// another axis than the leaf's last one, its resident bytes and buffers.
  void add_block(LeafSum& sum, int i, const detail::BlockCost& c) const;
  [[nodiscard]] bool fits(const LeafSum& sum) const;
  /// Blocks [a, b) one after another on a w x h used rectangle with one TUNE.
  [[nodiscard]] LeafCost leaf(int a, int b, std::int64_t w, std::int64_t h, int tune) const;
  /// The same from each block type's cost on that rectangle and TUNE (`by_type[type]`, looked up
  /// once per type rather than once per block).
  [[nodiscard]] LeafCost leaf_of(int a, int b, const detail::BlockCost* const* by_type) const;
  /// The transfer of block `after_block`'s output from one leaf's used rectangle into the next's
  /// (scaled as that block's steps).
  [[nodiscard]] double transfer(const meshir::Rect& from_used, const meshir::Rect& to_used, int after_block) const;
  /// Final objectives from (scaled) pass time and slowest stage, by the cost model's pipeline rule.
  [[nodiscard]] Objectives objectives(double pass, double bottleneck, std::int64_t pes) const;
  [[nodiscard]] meshir::Schedule build(const std::vector<Leaf>& leaves) const;
};

}  // namespace wavel::search
