// Maps workload op graphs onto regions as MeshIR ops: kernels, layouts, K-tree groups, re-layouts
// and transfers. Baselines and the search both build schedules through it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "wavel/meshir/schedule.hpp"
#include "wavel/workload/workload.hpp"

namespace wavel::meshir {

/// TUNE choices for a region that do not change its rectangle.
struct Tune {
  double group_scale_x = 1.0;   ///< K-tree group along X = round(scale x sqrt(used width)), clamped to [1, width]
  double group_scale_y = 1.0;   ///< same along Y
  Axis entry_features = Axis::x;  ///< decode: axis holding the features of the activation entering the region
  std::int64_t expert_groups = 1; ///< MoE: the expert CUT splits the region into this many strips of experts
  bool fuse = false;              ///< the leaf's blocks with operators that share an input fused
                                  ///< (workload::fuse_shared_inputs); the caller hands the Placer those blocks
  /// Decode: an elementwise op with a scalar loop (SiLU.mul) runs split over both axes, each PE on its
  /// own piece of the copy it holds, and an allgather along the replicated axis restores the layout.
  bool split_epilogues = false;
  /// MoE: the ops of a block that depend on no routed expert (the shared experts) run on a strip of
  /// their own beside the expert strips, in the routed experts' steps (concurrent branches).
  bool concurrent_branches = false;
  /// The branch's strip: its FLOPs-balanced width divided by this (a grouped GEMM's per-expert loops
  /// make a routed FLOP slower than a shared one, so the balance by FLOPs is an upper end).
  std::int64_t branch_narrowing = 1;
  /// Prefill: an attention section (scores, softmax, values) runs as this many head groups, each on
  /// its own cell of the used rectangle, in the same steps (split heads; 1: the whole rectangle).
  std::int64_t head_groups = 1;
  /// The products of a merged matmul (workload::Op::merged: Q/K/V, gate/up, MLA's projections) run
  /// side by side on strips of the leaf in one step, its input multicast to them and their outputs
  /// brought back in one step (dense concurrent branches). Chosen where the block is costed.
  bool sibling_branches = false;

  friend bool operator==(const Tune& a, const Tune& b) {
    return a.group_scale_x == b.group_scale_x && a.group_scale_y == b.group_scale_y &&
           a.entry_features == b.entry_features && a.expert_groups == b.expert_groups && a.fuse == b.fuse &&
           a.split_epilogues == b.split_epilogues && a.concurrent_branches == b.concurrent_branches &&
           a.branch_narrowing == b.branch_narrowing && a.head_groups == b.head_groups &&
           a.sibling_branches == b.sibling_branches;
  }
};

/// The branch strip's widths a block's costing tries (search::PlanEvaluator keeps the fastest that
/// fits): the FLOPs-balanced width divided by these.
inline constexpr std::int64_t kBranchNarrowings[] = {1, 2, 4};

/// The K-tree group size for a line of `pes` PEs under `scale`.
std::int64_t tree_group(std::int64_t pes, double scale);
/// A placed op's K-tree group under `tune`: along its reduce axis for an allreduce or a MeshGEMV, 0
/// (none) for every other kernel. The Placer sets every op's group with it.
std::int64_t tree_group_for(const PlacedOp& op, const Tune& tune);
/// Every op's group under `tune`. Group scales change nothing else a placement holds, so a schedule
/// placed under one TUNE and regrouped to another that differs only in its scales equals the one
/// placed under that other (the search costs a placement at every scale this way).
void regroup(Schedule& s, const Tune& tune);

/// `tunes`, then each again with fusion on (if `fuse`), then all of those again with split epilogues
/// on (if `split`), then all again with concurrent branches (if `branches`): each kind doubles the
/// choices before it, the plain ones first.
std::vector<Tune> with_kinds(std::vector<Tune> tunes, bool fuse, bool split, bool branches = false);

/// True if Tune::split_epilogues splits `op`: a decode elementwise op with a scalar loop.
bool splits_epilogue(const workload::Op& op, bool decode);
/// True if some op of `block` is one splits_epilogue splits.
bool has_split_epilogue(const workload::Layer& block, bool decode);

/// The ops of `block` after its MoE section [dispatch, combine] that depend on none of it (the shared
/// experts), in op order, if they form one branch: one value enters it from before the section and
/// only its last op is read after it. Empty otherwise.
std::vector<std::size_t> beside_routed(const workload::Layer& block, std::size_t dispatch, std::size_t combine);
/// True if `block` has an MoE section of several experts with ops beside it (Tune::concurrent_branches).
bool has_concurrent_branch(const workload::Layer& block);

/// The first op of an attention section of `block` (scores, softmax, values in a row, the softmax
/// reading the scores and the values the softmax), or -1.
int attention_section(const workload::Layer& block);
/// True if Tune::head_groups = `groups` splits `block`'s attention: prefill, an attention section
/// whose heads (and head-rows) `groups` divides.
bool splits_heads(const workload::Layer& block, bool decode, std::int64_t groups);
/// The cells of split heads: `groups` rectangles tiling `used` in a grid of gx x gy cells (gx gy =
/// groups), the grid whose longest cell side is shortest (a MeshGEMM's ring), ties to fewer columns;
/// empty if no grid fits.
std::vector<Rect> head_cells(const Rect& used, std::int64_t groups);

/// True if Tune::sibling_branches may run `op` as its products on strips: a matmul merged from
/// several, reading one input.
bool splits_siblings(const workload::Op& op);
/// True if Tune::sibling_branches changes `block`: some op of it splits_siblings.
bool has_sibling_branches(const workload::Layer& block);
/// The strips of a merged matmul's products: `used` cut along `axis` (X: columns) in proportion to
/// the products' widths, each at least one PE; empty if the side is shorter than the products.
std::vector<Rect> sibling_strips(const Rect& used, const std::vector<workload::Op::Part>& parts, Axis axis);

/// OpWork copied from a workload op.
OpWork work_of(const workload::Op& op);

/// Appends ops to a schedule one step at a time, carrying the activation from block to block.
class Placer {
 public:
  /// `routing`: how the routed rows spread over experts and expert groups (workload::MoeRouting).
  /// `named`: false leaves op names empty, for a schedule that is only costed (the search's block
  /// table builds millions; a name is most of an op's heap allocations).
  Placer(Schedule& schedule, bool decode, workload::MoeRouting routing = {1.0, 0.0}, bool named = true)
      : s_(schedule), decode_(decode), routing_(routing), named_(named) {}

  /// Places every op of `block` on region `region` (its `used` sub-rectangle), as pipeline `stage`.
  /// If the incoming activation lives in another region, a transfer is placed first; inside a region,
  /// a producer whose layout differs from its consumer's gets a re-layout. With tune.expert_groups > 1
  /// a routed-expert section (dispatch .. combine) is placed by the expert CUT on new strip regions;
  /// with tune.concurrent_branches the ops beside it (beside_routed) get a strip of their own too.
  void place(const workload::Layer& block, int region, Rect used, int stage, const Tune& tune);

 private:
  int append(PlacedOp op);
  /// append(), or with `same_step` into the step of the op placed last (a sibling's).
  int add(PlacedOp op, bool same_step);
  /// Places one op; with `same_step` in the step of the op placed last (a sibling strip's). A split
  /// epilogue's piece is followed by its allgather unless `gather_now` is false (the caller gathers).
  int place_op(const workload::Op& op, const std::string& name, int region, const Rect& used, int stage,
               const Tune& tune, const std::vector<int>& inputs, bool same_step, bool gather_now = true);
  /// Appends the allgather of split piece `piece` (in the last op's step with `same_step`).
  int gather(int piece, Axis entry, bool same_step);
  /// The expert CUT of section [dispatch, combine] into `groups` strips, and the ops of `branch`
  /// (beside_routed) on a strip of their own in the same steps; returns the routed combine and sets
  /// `placed` for the branch's ops (its last one: the combine bringing its output back).
  int place_experts(const workload::Layer& block, std::size_t dispatch, std::size_t combine,
                    const std::vector<std::size_t>& branch, const std::function<int(int)>& resolve,
                    std::vector<int>& placed, int region, Rect used, int stage, const Tune& tune, std::int64_t groups);
  /// Split heads: the attention section at `first` (attention_section) as tune.head_groups head
  /// groups on `cells` of `used` (head_cells), each taking its share of Q, K and V in one step and
  /// returning its output in one step; sets `placed` for the section's three ops (the first cell's
  /// return, which the next op reads).
  void place_heads(const workload::Layer& block, std::size_t first, const std::function<int(int)>& resolve,
                   std::vector<int>& placed, int region, Rect used, const std::vector<Rect>& cells, int stage,
                   const Tune& tune);
  /// Sibling branches: merged matmul `op` as its products on strips of `used`, the input multicast
  /// in one step, the products in one step, the outputs back to the leaf in one step; returns the
  /// first product's return (the op the consumers read), or -1 (placing nothing) where no strips fit.
  int place_siblings(const workload::Op& op, const std::string& block_name, int input, int region, Rect used,
                     int stage, const Tune& tune);
  /// The region of a cell or strip inside leaf region `leaf`: one placed earlier on the same
  /// rectangle (it holds every layer's share, as the leaf holds every layer's weights), else a new one.
  int cell_region(const Rect& cell, int leaf);
  int relayout(int producer, const Layout& target, const std::string& consumer);
  void move_input_to(int region, const Rect& used, int stage, const Tune& tune);

  Schedule& s_;
  bool decode_;
  workload::MoeRouting routing_;
  bool named_ = true;
  int next_step_ = 0;
  int block_input_ = -1;
  std::size_t block_first_op_ = 0;  ///< the first op place() appended for the current block
  std::vector<int> inputs_;  ///< place()'s scratch for an op's resolved inputs
};

}  // namespace wavel::meshir
