// The CUT/TUNE search: per micro-batch count, a memoized dynamic program over (region shape, block
// range, depth) sub-problems. Partial results carry their interface (first leaf's region, last leaf's
// used rectangle) so the transfers between leaves are costed exactly as cost::evaluate costs them.
#include "wavel/search/search.hpp"

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_map>

#include "wavel/common/error.hpp"
#include "wavel/cost/model.hpp"
#include "wavel/meshir/verify.hpp"
#include "wavel/search/blocks.hpp"

namespace wavel::search {

namespace {

using meshir::Axis;
using meshir::Rect;

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

struct BlockCost {
  double cycles = 0;
  std::int64_t resident = 0;  ///< weights + KV bytes per PE
  std::int64_t buffers = 0;   ///< double-buffered activations per PE
  int first_axis = -1;        ///< allreduce axis of the first and last GEMV (-1: none)
  int last_axis = -1;
};

std::uint64_t table_key(int type, std::int64_t w, std::int64_t h, int tune) {
  return (static_cast<std::uint64_t>(type) << 52) | (static_cast<std::uint64_t>(w) << 32) |
         (static_cast<std::uint64_t>(h) << 12) | static_cast<std::uint64_t>(tune);
}

std::vector<meshir::Tune> tune_choices(bool decode, const std::vector<double>& scales, std::int64_t experts,
                                       const std::vector<std::int64_t>& expert_groups) {
  std::vector<meshir::Tune> tunes;
  if (decode) {
    for (Axis entry : {Axis::x, Axis::y}) {
      for (double sx : scales) {
        for (double sy : scales) tunes.push_back(meshir::Tune{sx, sy, entry});
      }
    }
  } else {
    for (double sx : scales) tunes.push_back(meshir::Tune{sx, 1.0, Axis::x});  // prefill reduces along X only
  }
  // MoE: each choice again with every expert CUT that splits the experts evenly.
  std::vector<meshir::Tune> out;
  for (std::int64_t g : expert_groups) {
    if (g > 1 && (experts < g || experts % g != 0)) continue;
    if (g > 1 && experts < 2) continue;
    for (auto t : tunes) {
      t.expert_groups = g;
      out.push_back(t);
    }
  }
  return out.empty() ? tunes : out;
}

// Used sizes TUNE may pick inside a side (fractions rounded up), each once.
std::vector<std::int64_t> used_sides(std::int64_t side, const std::vector<double>& fractions) {
  std::vector<std::int64_t> sides;
  for (double f : fractions) {
    const auto s = std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(f * static_cast<double>(side))), 1, side);
    if (std::find(sides.begin(), sides.end(), s) == sides.end()) sides.push_back(s);
  }
  return sides;
}

}  // namespace

struct PlanEvaluator::Impl {
  wafer::WaferParams wafer;
  cost::CostParams params;
  bool decode = true;
  std::int64_t requests = 1;
  std::int64_t prompt_tokens = 0;
  std::int64_t microbatches = 1;
  std::int64_t layers_total = 0;
  std::int64_t layer_scale = 1;
  double capacity_factor = 1.0;
  std::vector<Block> blocks;
  std::vector<int> representative;  ///< a block index per type
  std::vector<meshir::Tune> tunes;
  std::unordered_map<std::uint64_t, BlockCost> table;
  std::int64_t computed = 0;
  bool serial = false;  ///< run the parallel loops on Kokkos::Serial (tests compare the two)

  Impl(const workload::Workload& w, const wafer::WaferParams& wf, const cost::CostParams& p, std::int64_t mb,
       const std::vector<double>& group_scales, const std::vector<std::int64_t>& expert_groups)
      : wafer(wf), params(p), decode(w.shape.phase == workload::Phase::decode),
        requests(w.shape.concurrent_requests), prompt_tokens(w.shape.input_tokens), microbatches(mb),
        layers_total(w.model.num_layers * w.layer_scale), layer_scale(w.layer_scale),
        capacity_factor(w.moe_capacity_factor) {
    // One micro-batch's op graph; the KV cache of every request stays resident.
    blocks = split_blocks(workload::split_requests(w, mb));
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      if (blocks[i].type >= static_cast<int>(representative.size())) representative.push_back(static_cast<int>(i));
    }
    tunes = tune_choices(decode, group_scales, w.model.moe ? w.model.moe->num_experts : 0, expert_groups);
  }

  meshir::Schedule empty() const {
    meshir::Schedule s;
    s.name = "wavel";
    s.grid_w_pes = wafer.grid_w_pes;
    s.grid_h_pes = wafer.grid_h_pes;
    s.sram_per_pe_bytes = wafer.sram_per_pe_bytes;
    s.colours = wafer.routable_colours;
    for (const auto& pe : wafer.defective_pes) s.defective_pes.emplace_back(pe.x, pe.y);
    s.concurrent_requests = requests;
    s.microbatches = microbatches;
    s.layers_total = layers_total;
    s.layer_scale = layer_scale;
    return s;
  }

  // One block alone on a w x h region, scored by the cost model itself.
  BlockCost compute(int type, std::int64_t w, std::int64_t h, int tune) const {
    meshir::Schedule s = empty();
    const Rect rect{0, 0, w, h};
    s.regions = {rect};
    meshir::Placer placer(s, decode, capacity_factor);
    placer.place(blocks[static_cast<std::size_t>(representative[static_cast<std::size_t>(type)])].ops, 0, rect, 0,
                 tunes[static_cast<std::size_t>(tune)]);
    s.microbatches = 1;  // the block's own time, not a pipeline round
    s.concurrent_requests = 1;
    s.layer_scale = 1;   // blocks add up unscaled; objectives() scales a subset's pass and stages
    const auto c = cost::evaluate(s, wafer, params, decode, prompt_tokens);
    const auto sram = meshir::region_sram_per_pe(s, 0);
    BlockCost b;
    b.cycles = c.pass_cycles;
    b.resident = sram.resident_bytes;
    b.buffers = sram.buffer_bytes;
    for (const auto& op : s.ops) {
      if (op.kernel != meshir::Kernel::meshgemv || op.region != 0) continue;  // route switches are per region
      const int axis = op.reduce_axis == Axis::x ? 0 : 1;
      if (b.first_axis < 0) b.first_axis = axis;
      b.last_axis = axis;
    }
    return b;
  }

  // Computes the missing table entries in parallel; every entry is independent and pure.
  void ensure(const std::vector<std::tuple<int, std::int64_t, std::int64_t, int>>& wanted) {
    std::vector<std::tuple<int, std::int64_t, std::int64_t, int>> missing;
    for (const auto& k : wanted) {
      const auto key = table_key(std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k));
      if (table.find(key) == table.end()) missing.push_back(k);
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (missing.empty()) return;
    std::vector<BlockCost> out(missing.size());
    // Each entry places and costs a whole block: worth a thread from two entries on.
    on_host_space(serial, missing.size(), 2, [&](auto space) {
      Kokkos::parallel_for(
          "wavel::search::block_costs",
          Kokkos::RangePolicy<decltype(space)>(space, 0, static_cast<int>(missing.size())), [&](const int i) {
            const auto& [type, w, h, tune] = missing[static_cast<std::size_t>(i)];
            out[static_cast<std::size_t>(i)] = compute(type, w, h, tune);
          });
    });
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const auto& [type, w, h, tune] = missing[i];
      table.emplace(table_key(type, w, h, tune), out[i]);
    }
    computed += static_cast<std::int64_t>(missing.size());
  }

  const BlockCost& get(int type, std::int64_t w, std::int64_t h, int tune) const {
    return table.at(table_key(type, w, h, tune));
  }

  struct LeafCost {
    double cycles = 0;
    bool fits = false;
  };

  // Blocks [a, b) one after another on w x h with one tune: the block costs plus a route switch
  // wherever a GEMV reduces along a different axis than the region's previous GEMV.
  LeafCost leaf(int a, int b, std::int64_t w, std::int64_t h, int tune) const {
    LeafCost out;
    std::int64_t resident = 0, buffers = 0;
    int last_axis = -1;
    for (int i = a; i < b; ++i) {
      const BlockCost& c = get(blocks[static_cast<std::size_t>(i)].type, w, h, tune);
      out.cycles += c.cycles;
      if (last_axis >= 0 && c.first_axis >= 0 && c.first_axis != last_axis) out.cycles += params.route_switch_cycles;
      if (c.last_axis >= 0) last_axis = c.last_axis;
      resident += c.resident;
      buffers = std::max(buffers, c.buffers);
    }
    out.fits = resident + buffers <= wafer.sram_per_pe_bytes;
    return out;
  }

  double transfer(const Rect& from_region, const Rect& to_region, int after_block) const {
    return cost::transfer_cost(from_region, to_region,
                               static_cast<double>(blocks[static_cast<std::size_t>(after_block)].output_bytes), wafer,
                               params)
        .total_cycles;
  }

  // Final objectives from pass time and stage times.
  Objectives objectives(double pass, double bottleneck, std::int64_t pes) const {
    Objectives o;
    pass *= static_cast<double>(layer_scale);
    bottleneck *= static_cast<double>(layer_scale);
    const double mb = static_cast<double>(microbatches);
    const double clock = wafer.clock_hz;
    if (decode) {
      const double round = std::max(pass, mb * bottleneck);
      o.latency_s = round / clock;
      o.tokens_per_s = static_cast<double>(requests) / o.latency_s;
    } else {
      const double total = pass + (mb - 1.0) * bottleneck;
      o.latency_s = (pass + (mb - 1.0) / 2.0 * bottleneck) / clock;
      o.tokens_per_s = static_cast<double>(prompt_tokens * requests) / (total / clock);
    }
    o.pes = pes;
    return o;
  }

  meshir::Schedule build(const std::vector<Leaf>& leaves) const {
    meshir::Schedule s = empty();
    meshir::Placer placer(s, decode, capacity_factor);
    for (std::size_t l = 0; l < leaves.size(); ++l) {
      const Leaf& leaf = leaves[l];
      s.regions.push_back(leaf.region);
      const int region = static_cast<int>(s.regions.size()) - 1;  // expert CUTs append strip regions after it
      const Rect used{leaf.region.x, leaf.region.y, leaf.used_w, leaf.used_h};
      for (int i = leaf.first_block; i < leaf.end_block; ++i) {
        placer.place(blocks[static_cast<std::size_t>(i)].ops, region, used, static_cast<int>(l),
                     tunes[static_cast<std::size_t>(leaf.tune)]);
      }
    }
    return s;
  }
};

PlanEvaluator::PlanEvaluator(const workload::Workload& workload, const wafer::WaferParams& wafer,
                             const cost::CostParams& params, std::int64_t microbatches,
                             const std::vector<double>& group_scales, const std::vector<std::int64_t>& expert_groups)
    : impl_(new Impl(workload, wafer, params, microbatches, group_scales, expert_groups)) {}
PlanEvaluator::~PlanEvaluator() { delete impl_; }
const std::vector<meshir::Tune>& PlanEvaluator::tunes() const { return impl_->tunes; }
int PlanEvaluator::blocks() const { return static_cast<int>(impl_->blocks.size()); }

void PlanEvaluator::prepare(const std::vector<Leaf>& leaves) {
  std::vector<std::tuple<int, std::int64_t, std::int64_t, int>> wanted;
  for (const auto& leaf : leaves) {
    for (int i = leaf.first_block; i < leaf.end_block; ++i) {
      wanted.emplace_back(impl_->blocks[static_cast<std::size_t>(i)].type, leaf.used_w, leaf.used_h, leaf.tune);
    }
  }
  impl_->ensure(wanted);
}

Objectives PlanEvaluator::evaluate(const std::vector<Leaf>& leaves) const {
  double pass = 0, bottleneck = 0;
  std::int64_t pes = 0;
  for (std::size_t l = 0; l < leaves.size(); ++l) {
    const Leaf& leaf = leaves[l];
    const auto c = impl_->leaf(leaf.first_block, leaf.end_block, leaf.used_w, leaf.used_h, leaf.tune);
    if (!c.fits) return Objectives{0.0, std::numeric_limits<double>::infinity(), pes, 0};
    if (l > 0) pass += impl_->transfer(leaves[l - 1].region, leaf.region, leaf.first_block - 1);
    pass += c.cycles;
    bottleneck = std::max(bottleneck, c.cycles);
    pes += leaf.region.pes();
  }
  return impl_->objectives(pass, bottleneck, pes);
}

meshir::Schedule PlanEvaluator::build(const std::vector<Leaf>& leaves) const { return impl_->build(leaves); }

namespace {

// A partial schedule of a sub-problem, in coordinates relative to the sub-problem's corner.
struct Point {
  double pass = 0;    ///< all stages one after another, transfers inside included
  double stage = 0;   ///< slowest stage (transfers overlap with other micro-batches' compute)
  Rect entry;         ///< first leaf's region
  Rect exit;          ///< last leaf's region
  int plan = -1;
  Rect offset;        ///< where `plan` sits relative to the sub-problem (its own rectangle for a child)
};

// How to rebuild a point: a leaf, or (for CUTs) a group of two parts, each a plan placed at an offset
// rectangle relative to the point's sub-problem (a leaf takes its region size from that rectangle).
struct Plan {
  bool leaf = true;
  int a = 0, b = 0;                 ///< blocks
  std::int64_t used_w = 0, used_h = 0;
  int tune = 0;
  int parts[2] = {-1, -1};          ///< group: the earlier blocks' plan, then the later ones'
  Rect offsets[2];
};

Rect shifted(const Rect& r, std::int64_t dx, std::int64_t dy) { return Rect{r.x + dx, r.y + dy, r.w, r.h}; }

class Solver {
 public:
  Solver(PlanEvaluator::Impl& ev, const SearchOptions& options) : ev_(ev), opt_(options) {
    const auto& blocks = ev_.blocks;
    resident_prefix_.assign(blocks.size() + 1, 0);
    flops_prefix_.assign(blocks.size() + 1, 0.0);
    kernels_prefix_.assign(blocks.size() + 1, 0);
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      resident_prefix_[i + 1] = resident_prefix_[i] + blocks[i].resident_bytes;
      flops_prefix_[i + 1] = flops_prefix_[i] + static_cast<double>(blocks[i].flops);
      kernels_prefix_[i + 1] = kernels_prefix_[i] + blocks[i].kernels;
      max_output_bytes_ = std::max(max_output_bytes_, blocks[i].output_bytes);
    }
    // Largest transfer cost difference two interfaces can make at a parent: longest hop path and
    // one link of bandwidth, for the transfer in and the transfer out.
    transfer_margin_ = ev_.params.alpha_cycles_per_hop * static_cast<double>(ev_.wafer.grid_w_pes + ev_.wafer.grid_h_pes) +
                       static_cast<double>(max_output_bytes_) / static_cast<double>(ev_.wafer.link_bytes_per_cycle);
    has_defects_ = !ev_.wafer.defective_pes.empty();
  }

  // Starts a piece of work: where its statistics go, and its clock (the time limit is per piece).
  void begin(SearchStats* stats, std::chrono::steady_clock::time_point start) {
    stats_ = stats;
    start_ = start;
  }

  // The root of one piece: the root CUT options whose index is `chunk` modulo `chunks`, and (chunk
  // 0) the root as one leaf. Not memoized: the pieces of a root are disjoint.
  std::vector<Point> root_points(const Rect& rect, int b, int chunk, int chunks, const std::vector<Objectives>& incumbents) {
    ++stats_->subproblems;
    std::vector<Point> points;
    if (chunk == 0) points = leaf_points(rect, 0, b);
    if (b >= 2 && opt_.max_cut_depth > 0 && !out_of_time()) {
      cut_points(rect, 0, b, 0, points, RootSlice{chunk, chunks, &incumbents});
    }
    if (!opt_.exhaustive) points = filter(std::move(points), 0, b);
    return points;
  }

  const std::vector<Point>& solve(const Rect& rect, int a, int b, int depth) {
    ++stats_->subproblems;
    const bool positional = has_defects_ && contains_defect(rect);
    const auto key = std::make_tuple(rect.w, rect.h, a, b, depth, positional ? rect.x : -1, positional ? rect.y : -1);
    if (auto it = memo_.find(key); it != memo_.end()) {
      ++stats_->memo_hits;
      return it->second;
    }
    std::vector<Point> points = leaf_points(rect, a, b);
    if (b - a >= 2 && depth < opt_.max_cut_depth && !out_of_time()) cut_points(rect, a, b, depth, points, RootSlice{0, 1, nullptr});
    if (!opt_.exhaustive) points = filter(std::move(points), a, b);
    return memo_.emplace(key, std::move(points)).first->second;
  }

  // Size of the unpruned search tree below a sub-problem, whose nodes are partial schedules: every
  // leaf TUNE candidate, and every combination a CUT chains from its children's schedules.
  // Returns {complete schedules of the sub-problem, tree nodes}; doubles, since both explode.
  std::pair<double, double> tree_size(std::int64_t w, std::int64_t h, int a, int b, int depth) {
    const auto key = std::make_tuple(w, h, a, b, depth);
    if (auto it = tree_memo_.find(key); it != tree_memo_.end()) return it->second;
    const double leaves = static_cast<double>(ev_.tunes.size() * used_sides(w, opt_.used_fractions).size() *
                                              used_sides(h, opt_.used_fractions).size());
    double schedules = leaves, nodes = leaves;
    if (b - a >= 2 && depth < opt_.max_cut_depth) {
      for (const auto& c : cut_options(Rect{0, 0, w, h}, a, b, /*root=*/false)) {
        double chained = 1;
        for (std::size_t i = 0; i < c.rects.size(); ++i) {
          const auto [n, t] = tree_size(c.rects[i].w, c.rects[i].h, c.bounds[i], c.bounds[i + 1], depth + 1);
          nodes += t;
          chained *= n;
          if (i > 0) nodes += chained;
        }
        schedules += chained;
      }
    }
    return tree_memo_.emplace(key, std::make_pair(schedules, nodes)).first->second;
  }

  const Plan& plan(int id) const { return plans_[static_cast<std::size_t>(id)]; }

  // Leaves of a plan in block order, at absolute coordinates; `rect` is where the plan sits.
  void leaves_of(int id, const Rect& rect, std::vector<Leaf>& out) const {
    const Plan& p = plan(id);
    if (p.leaf) {
      out.push_back(Leaf{rect, p.used_w, p.used_h, p.tune, p.a, p.b});
      return;
    }
    for (int i = 0; i < 2; ++i) leaves_of(p.parts[i], shifted(p.offsets[i], rect.x, rect.y), out);
  }

 private:
  struct CutOption {
    std::vector<Rect> rects;   ///< children in block order, relative to the parent's corner
    std::vector<int> bounds;   ///< block boundaries: a, then each child's end
  };

  bool out_of_time() {
    if (opt_.time_limit_s <= 0) return false;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed > opt_.time_limit_s) stats_->timed_out = true;
    return stats_->timed_out;
  }

  bool contains_defect(const Rect& r) const {
    for (const auto& pe : ev_.wafer.defective_pes) {
      if (r.contains(pe.x, pe.y)) return true;
    }
    return false;
  }

  // The block boundary that splits [a, b)'s resident bytes closest to `ratio` (work follows area).
  int split_point(int a, int b, double ratio) const {
    const double total = static_cast<double>(resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)]);
    int best = a + 1;
    double best_gap = std::numeric_limits<double>::infinity();
    for (int k = a + 1; k < b; ++k) {
      const double part = static_cast<double>(resident_prefix_[static_cast<std::size_t>(k)] - resident_prefix_[static_cast<std::size_t>(a)]);
      const double gap = std::abs(part - ratio * total);
      if (gap < best_gap) {
        best_gap = gap;
        best = k;
      }
    }
    return best;
  }

  // Divisions of a side: two parts at each cut ratio, and equal strips.
  std::vector<std::vector<double>> divisions() const {
    std::vector<std::vector<double>> out;
    for (double r : opt_.cut_ratios) out.push_back({r, 1.0 - r});
    for (std::int64_t n : opt_.strip_counts) out.push_back(std::vector<double>(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n)));
    return out;
  }

  // CUT along X or Y by each division, the work split to match the areas, the earlier blocks on the
  // low side or (below the root) the high side. At the root the high-side variants mirror the
  // low-side ones exactly (the model is reflection-invariant) unless defects break the symmetry.
  std::vector<CutOption> cut_options(const Rect& rect, int a, int b, bool root) {
    std::vector<CutOption> options;
    for (Axis axis : {Axis::x, Axis::y}) {
      const std::int64_t side = axis == Axis::x ? rect.w : rect.h;
      for (const auto& parts : divisions()) {
        if (static_cast<int>(parts.size()) > b - a) continue;
        std::vector<std::int64_t> cuts{0};
        double cumulative = 0;
        for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
          cumulative += parts[i];
          cuts.push_back(std::llround(cumulative * static_cast<double>(side)));
        }
        cuts.push_back(side);
        bool ok = true;
        for (std::size_t i = 1; i < cuts.size(); ++i) ok = ok && cuts[i] > cuts[i - 1];
        if (!ok) continue;
        for (bool low_first : {true, false}) {
          if (!low_first && root && !has_defects_) {
            ++stats_->pruned_symmetry;
            continue;
          }
          CutOption c;
          c.bounds.push_back(a);
          const std::size_t n = parts.size();
          for (std::size_t i = 0; i < n; ++i) {
            // Child i (in block order) takes the i-th piece from the low side, or from the high side.
            const std::size_t piece = low_first ? i : n - 1 - i;
            const std::int64_t lo = cuts[piece], hi = cuts[piece + 1];
            c.rects.push_back(axis == Axis::x ? Rect{lo, 0, hi - lo, rect.h} : Rect{0, lo, rect.w, hi - lo});
            if (i + 1 < n) {
              double area_before = 0;
              for (std::size_t j = 0; j <= i; ++j) area_before += static_cast<double>(c.rects[j].pes());
              c.bounds.push_back(split_point(a, b, area_before / static_cast<double>(rect.pes())));
            }
          }
          c.bounds.push_back(b);
          for (std::size_t i = 1; i < c.bounds.size(); ++i) ok = ok && c.bounds[i] > c.bounds[i - 1];
          const bool duplicate = std::any_of(options.begin(), options.end(), [&](const CutOption& o) {
            return o.bounds == c.bounds && o.rects == c.rects;
          });
          if (ok && !duplicate) options.push_back(c);
        }
      }
    }
    return options;
  }

  std::vector<Point> leaf_points(const Rect& rect, int a, int b) {
    std::vector<Point> points;
    const auto widths = used_sides(rect.w, opt_.used_fractions);
    const auto heights = used_sides(rect.h, opt_.used_fractions);
    const int tunes = static_cast<int>(ev_.tunes.size());
    std::vector<int> types;
    for (int i = a; i < b; ++i) types.push_back(ev_.blocks[static_cast<std::size_t>(i)].type);
    std::sort(types.begin(), types.end());
    types.erase(std::unique(types.begin(), types.end()), types.end());
    std::vector<std::tuple<int, std::int64_t, std::int64_t, int>> wanted;
    for (auto w : widths) {
      for (auto h : heights) {
        if (contains_defect_in(Rect{rect.x, rect.y, w, h})) continue;
        for (int t = 0; t < tunes; ++t) {
          for (int type : types) wanted.emplace_back(type, w, h, t);
        }
      }
    }
    ev_.ensure(wanted);
    for (auto w : widths) {
      for (auto h : heights) {
        const Rect used{0, 0, w, h};
        if (contains_defect_in(Rect{rect.x, rect.y, w, h})) continue;
        // Fastest tune that fits, ties to the lower index: a deterministic parallel reduction.
        CostId best{std::numeric_limits<double>::infinity(), INT_MAX};
        const PlanEvaluator::Impl& ev = ev_;
        on_host_space(ev.serial, static_cast<std::size_t>(tunes), 4096, [&](auto space) {
          Kokkos::parallel_reduce(
              "wavel::search::leaf_tune", Kokkos::RangePolicy<decltype(space)>(space, 0, tunes),
              [&](const int t, CostId& acc) {
                const auto c = ev.leaf(a, b, w, h, t);
                const CostId mine{c.fits ? c.cycles : std::numeric_limits<double>::infinity(), t};
                if (MinCostId::less(mine, acc)) acc = mine;
              },
              MinCostId(best));
        });
        stats_->candidates_evaluated += tunes;
        if (!std::isfinite(best.cost)) continue;
        if (opt_.exhaustive) {
          // Keep every feasible tune: exhaustive mode does no dominance pruning.
          for (int t = 0; t < tunes; ++t) {
            const auto c = ev_.leaf(a, b, w, h, t);
            if (c.fits) points.push_back(leaf_point(rect, a, b, used, t, c.cycles));
          }
        } else {
          stats_->pruned_dominance += tunes - 1;  // the other tunes of this used size are dominated
          points.push_back(leaf_point(rect, a, b, used, best.id, best.cost));
        }
      }
    }
    return points;
  }

  bool contains_defect_in(const Rect& r) const { return has_defects_ && contains_defect(r); }

  Point leaf_point(const Rect& rect, int a, int b, const Rect& used, int tune, double cycles) {
    Plan p;
    p.leaf = true;
    p.a = a;
    p.b = b;
    p.used_w = used.w;
    p.used_h = used.h;
    p.tune = tune;
    plans_.push_back(p);
    Point pt;
    pt.offset = Rect{0, 0, rect.w, rect.h};
    pt.pass = cycles;
    pt.stage = cycles;
    pt.entry = Rect{0, 0, rect.w, rect.h};
    pt.exit = pt.entry;
    pt.plan = static_cast<int>(plans_.size()) - 1;
    return pt;
  }

  double lower_bound_pass(int a, int b, std::int64_t pes) const {
    const double flops = flops_prefix_[static_cast<std::size_t>(b)] - flops_prefix_[static_cast<std::size_t>(a)];
    const double kernels = static_cast<double>(kernels_prefix_[static_cast<std::size_t>(b)] - kernels_prefix_[static_cast<std::size_t>(a)]);
    return kernels * ev_.params.kernel_overhead_cycles +
           flops / (2.0 * static_cast<double>(ev_.wafer.simd_fp16_lanes) * static_cast<double>(pes));
  }

  // Which root options a piece takes, and the best points other pieces have found so far.
  struct RootSlice {
    int chunk;
    int chunks;
    const std::vector<Objectives>* incumbents;
  };

  void cut_points(const Rect& rect, int a, int b, int depth, std::vector<Point>& points, const RootSlice& slice) {
    const std::int64_t sram = ev_.wafer.sram_per_pe_bytes;
    const auto options = cut_options(rect, a, b, depth == 0);
    for (std::size_t index = 0; index < options.size(); ++index) {
      if (static_cast<int>(index % static_cast<std::size_t>(slice.chunks)) != slice.chunk) continue;
      const CutOption& c = options[index];
      // SRAM: a child that cannot hold its blocks' weights and KV even using all its PEs.
      bool fits = true;
      for (std::size_t i = 0; i < c.rects.size(); ++i) {
        const std::int64_t need = resident_prefix_[static_cast<std::size_t>(c.bounds[i + 1])] -
                                  resident_prefix_[static_cast<std::size_t>(c.bounds[i])];
        fits = fits && need <= c.rects[i].pes() * sram;
      }
      if (!fits) {
        ++stats_->pruned_sram;
        continue;
      }
      if (!opt_.exhaustive && bound_pruned(c, points)) {
        ++stats_->pruned_bound;
        continue;
      }
      if (!opt_.exhaustive && slice.incumbents != nullptr && incumbent_beats(c, rect, *slice.incumbents)) {
        ++stats_->pruned_incumbent;
        continue;
      }
      // Chain the children in block order; after each link, drop what is dominated in every context.
      std::vector<Point> chain;
      for (std::size_t i = 0; i < c.rects.size(); ++i) {
        const Rect& r = c.rects[i];
        const std::vector<Point>& part = solve(shifted(r, rect.x, rect.y), c.bounds[i], c.bounds[i + 1], depth + 1);
        if (i == 0) {
          for (const auto& p : part) {
            chain.push_back(p);
            chain.back().entry = shifted(p.entry, r.x, r.y);
            chain.back().exit = shifted(p.exit, r.x, r.y);
            chain.back().offset = r;
          }
          continue;
        }
        std::vector<Point> next;
        next.reserve(chain.size() * part.size());
        for (const auto& p1 : chain) {
          for (const auto& p2 : part) {
            const Rect to = shifted(p2.entry, r.x, r.y);
            const double t = ev_.transfer(p1.exit, to, c.bounds[i] - 1);
            Plan plan;
            plan.leaf = false;
            plan.a = c.bounds[0];
            plan.b = c.bounds[i + 1];
            plan.parts[0] = p1.plan;
            plan.offsets[0] = p1.offset;
            plan.parts[1] = p2.plan;
            plan.offsets[1] = r;
            plans_.push_back(plan);
            Point q;
            q.pass = p1.pass + t + p2.pass;
            q.stage = std::max(p1.stage, p2.stage);
            q.entry = p1.entry;
            q.exit = shifted(p2.exit, r.x, r.y);
            q.plan = static_cast<int>(plans_.size()) - 1;
            q.offset = Rect{0, 0, rect.w, rect.h};
            next.push_back(q);
            ++stats_->candidates_evaluated;
          }
        }
        chain = opt_.exhaustive || i + 1 == c.rects.size() ? std::move(next) : filter(std::move(next), a, c.bounds[i + 1]);
      }
      points.insert(points.end(), chain.begin(), chain.end());
    }
  }

  // Lower bounds on an option's pass (its children one after another) and slowest stage.
  std::pair<double, double> lower_bounds(const CutOption& c) const {
    double pass_lb = 0, stage_lb = 0;
    for (std::size_t j = 0; j < c.rects.size(); ++j) {
      pass_lb += lower_bound_pass(c.bounds[j], c.bounds[j + 1], c.rects[j].pes());
      for (int i = c.bounds[j]; i < c.bounds[j + 1]; ++i) {
        stage_lb = std::max(stage_lb, lower_bound_pass(i, i + 1, c.rects[j].pes()));
      }
    }
    return {pass_lb, stage_lb};
  }

  // An option is hopeless if a point already found here beats its lower bound by more than any
  // difference the two interfaces could make to the transfers at a parent.
  bool bound_pruned(const CutOption& c, const std::vector<Point>& points) const {
    const auto [pass_lb, stage_lb] = lower_bounds(c);
    for (const auto& p : points) {
      if (p.pass + 2.0 * transfer_margin_ <= pass_lb && p.stage <= stage_lb) return true;
    }
    return false;
  }

  // A root option is hopeless if a schedule already found strictly dominates the best objectives it
  // could reach: compute-and-launch lower bounds on its pass and stage, and its PEs, which are the
  // footprint's (the leaves' regions tile it, and a schedule counts the union of its regions). Safe,
  // so pruning by incumbents never changes the front, only the work.
  bool incumbent_beats(const CutOption& c, const Rect& rect, const std::vector<Objectives>& incumbents) const {
    if (incumbents.empty()) return false;
    const auto [pass_lb, stage_lb] = lower_bounds(c);
    const Objectives best = ev_.objectives(pass_lb, stage_lb, rect.pes());
    return std::any_of(incumbents.begin(), incumbents.end(), [&](const Objectives& o) { return dominates(o, best); });
  }

  // Largest change moving one end of a transfer of `block`'s output from region p to region q can
  // make to its cost: alpha per hop the centre moves (one more per axis for rounding), and the link
  // term through the narrowest side.
  double end_margin(const Rect& p, const Rect& q, int block) const {
    if (p == q || block < 0 || block >= static_cast<int>(ev_.blocks.size())) return 0.0;
    const std::int64_t moved = std::llabs((2 * p.x + p.w) - (2 * q.x + q.w)) / 2 + 1 +
                               std::llabs((2 * p.y + p.h) - (2 * q.y + q.h)) / 2 + 1;
    const double bytes = static_cast<double>(ev_.blocks[static_cast<std::size_t>(block)].output_bytes);
    const double narrow_p = static_cast<double>(std::min(p.w, p.h));
    const double narrow_q = static_cast<double>(std::min(q.w, q.h));
    return ev_.params.alpha_cycles_per_hop * static_cast<double>(moved) +
           bytes / static_cast<double>(ev_.wafer.link_bytes_per_cycle) * std::abs(1.0 / narrow_p - 1.0 / narrow_q);
  }

  // p is at least as good as q wherever the sub-problem [a, b) is used: no slower stage, and a pass
  // shorter by more than a different first and last region can add to the transfers in and out.
  // (Both use the same PEs: a sub-problem's regions tile its rectangle.)
  bool dominates_everywhere(const Point& p, const Point& q, int a, int b) const {
    if (p.stage > q.stage) return false;
    return p.pass + end_margin(p.entry, q.entry, a - 1) + end_margin(p.exit, q.exit, b - 1) <= q.pass;
  }

  // Drops points dominated in every context (of mutually dominating points, the earlier stays).
  std::vector<Point> filter(std::vector<Point> points, int a, int b) {
    std::vector<std::size_t> order(points.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
      return std::make_tuple(points[i].pass, points[i].stage, i) < std::make_tuple(points[j].pass, points[j].stage, j);
    });
    std::vector<Point> kept;
    for (std::size_t i : order) {
      const bool dominated = std::any_of(kept.begin(), kept.end(),
                                         [&](const Point& k) { return dominates_everywhere(k, points[i], a, b); });
      if (dominated) {
        ++stats_->pruned_dominance;
      } else {
        kept.push_back(points[i]);
      }
    }
    return kept;
  }

  PlanEvaluator::Impl& ev_;
  SearchOptions opt_;
  SearchStats* stats_ = nullptr;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::int64_t> resident_prefix_;
  std::vector<double> flops_prefix_;
  std::vector<std::int64_t> kernels_prefix_;
  std::int64_t max_output_bytes_ = 0;
  double transfer_margin_ = 0;
  bool has_defects_ = false;
  std::map<std::tuple<std::int64_t, std::int64_t, int, int, int, std::int64_t, std::int64_t>, std::vector<Point>> memo_;
  std::map<std::tuple<std::int64_t, std::int64_t, int, int, int>, std::pair<double, double>> tree_memo_;
  std::vector<Plan> plans_;
};

// Footprints the whole schedule may occupy: the grid, or its top-left 3/4, 1/2 or 1/4 per side.
std::vector<Rect> footprints(const wafer::WaferParams& wafer) {
  std::vector<Rect> roots;
  for (int quarters : {4, 3, 2, 1}) {
    const Rect r{0, 0, (wafer.grid_w_pes * quarters + 3) / 4, (wafer.grid_h_pes * quarters + 3) / 4};
    if (r.w >= 1 && r.h >= 1 && std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
  }
  return roots;
}

// Micro-batch counts: every exact split of the requests. Serving R requests as R / R' groups of R'
// one after another is never faster than R / R' micro-batches pipelined over the same schedule, so
// trying every divisor keeps the search at least as fast as any grouping of the requests.
std::vector<std::int64_t> microbatch_choices(std::int64_t requests) { return workload::request_divisors(requests); }

}  // namespace

SearchOptions options_from(const config::SearchConfig& search) {
  SearchOptions o;
  o.exhaustive = search.exhaustive;
  o.cut_ratios = search.cut_ratios;
  o.strip_counts = search.strip_counts;
  o.max_cut_depth = search.max_cut_depth;
  o.group_scales = search.group_scales;
  o.used_fractions = search.used_fractions;
  o.time_limit_s = search.time_limit_s;
  o.root_chunks = search.root_chunks;
  o.expert_groups = search.expert_groups;
  return o;
}

std::vector<SearchPiece> search_pieces(const workload::WorkloadShape& shape, const wafer::WaferParams& wafer,
                                       const SearchOptions& options) {
  std::vector<SearchPiece> pieces;
  const int roots = static_cast<int>(footprints(wafer).size());
  const int chunks = static_cast<int>(std::max<std::int64_t>(1, options.root_chunks));
  for (std::int64_t mb : microbatch_choices(shape.concurrent_requests)) {
    for (int f = 0; f < roots; ++f) {
      for (int c = 0; c < chunks; ++c) pieces.push_back(SearchPiece{mb, f, c, chunks});
    }
  }
  return pieces;
}

std::vector<SearchCandidate> seed_candidates(const workload::Workload& workload, const wafer::WaferParams& wafer,
                                             const cost::CostParams& params,
                                             const std::vector<std::pair<std::string, meshir::Schedule>>& seeds) {
  const bool decode = workload.shape.phase == workload::Phase::decode;
  std::vector<SearchCandidate> out;
  for (const auto& [name, schedule] : seeds) {
    const auto c = cost::evaluate(schedule, wafer, params, decode, workload.shape.input_tokens);
    // A seed that does not fit or does not verify (e.g. a region on a defective PE) is not a schedule.
    if (c.sram_headroom < 0 ||
        !meshir::verify(schedule, name, {}, [](const meshir::PlacedOp& op) { return cost::colours_needed(op); }).empty()) {
      continue;
    }
    SearchCandidate cand;
    cand.objectives = Objectives{c.tokens_per_s, c.latency_s, c.pes_used, 0};
    cand.source = "seed:" + name;
    cand.microbatches = schedule.microbatches;
    cand.sram_headroom = c.sram_headroom;
    out.push_back(std::move(cand));
  }
  return out;
}

// The cached state of one (setting, micro-batch count): block costs and sub-problem memo stay valid
// for every piece of it, so a rank that runs several pieces of it in a row shares them.
struct SearchWorkspace::Impl {
  std::string key;
  std::unique_ptr<PlanEvaluator> evaluator;
  std::unique_ptr<Solver> solver;
};

SearchWorkspace::SearchWorkspace() : impl_(std::make_unique<Impl>()) {}
SearchWorkspace::~SearchWorkspace() = default;

PieceResult SearchWorkspace::run(const std::string& setting_key, const workload::Workload& workload,
                                 const wafer::WaferParams& wafer, const cost::CostParams& params,
                                 const SearchOptions& options, const SearchPiece& piece,
                                 const std::vector<Objectives>& incumbents) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key = setting_key + "/mb=" + std::to_string(piece.microbatches);
  if (impl_->key != key || !impl_->solver) {
    impl_->solver.reset();
    impl_->evaluator = std::make_unique<PlanEvaluator>(workload, wafer, params, piece.microbatches, options.group_scales,
                                                       options.expert_groups);
    impl_->evaluator->impl().serial = options.serial;
    impl_->solver = std::make_unique<Solver>(impl_->evaluator->impl(), options);
    impl_->key = key;
  }
  PlanEvaluator& evaluator = *impl_->evaluator;
  PlanEvaluator::Impl& ev = evaluator.impl();
  Solver& solver = *impl_->solver;
  PieceResult out;
  solver.begin(&out.stats, start);
  const std::int64_t computed_before = ev.computed;
  const auto roots = footprints(wafer);
  if (piece.footprint < 0 || piece.footprint >= static_cast<int>(roots.size())) {
    throw InternalError("search piece names footprint " + std::to_string(piece.footprint));
  }
  const Rect root = roots[static_cast<std::size_t>(piece.footprint)];
  const int blocks = evaluator.blocks();
  std::int64_t resident = 0;
  for (const auto& b : ev.blocks) resident += b.resident_bytes;
  if (resident > root.pes() * wafer.sram_per_pe_bytes) {
    if (piece.chunk == 0) ++out.stats.pruned_sram;  // the whole footprint, counted once
    return out;
  }
  if (piece.chunk == 0) {
    const double cap = 9.0e18;  // saturate: the count only needs to show the scale
    out.stats.exhaustive_tree_nodes = static_cast<std::int64_t>(std::min(cap, solver.tree_size(root.w, root.h, 0, blocks, 0).second));
  }
  const bool decode = workload.shape.phase == workload::Phase::decode;
  const std::vector<Point> points = solver.root_points(root, blocks, piece.chunk, piece.chunks, incumbents);
  std::vector<Objectives> objs;
  for (std::size_t i = 0; i < points.size(); ++i) {
    Objectives o = ev.objectives(points[i].pass, points[i].stage, root.pes());
    o.id = static_cast<std::int64_t>(i);
    objs.push_back(o);
  }
  // Only points on this piece's own front can reach the setting's front: build and score those.
  for (const auto& o : pareto_front(objs)) {
    SearchCandidate cand;
    solver.leaves_of(points[static_cast<std::size_t>(o.id)].plan, root, cand.leaves);
    const auto c = cost::evaluate(evaluator.build(cand.leaves), wafer, params, decode, workload.shape.input_tokens);
    cand.objectives = Objectives{c.tokens_per_s, c.latency_s, c.pes_used, 0};
    cand.source = "search";
    cand.microbatches = piece.microbatches;
    cand.sram_headroom = c.sram_headroom;
    out.candidates.push_back(std::move(cand));
  }
  out.stats.block_costs = ev.computed - computed_before;
  out.stats.nodes_visited = out.stats.candidates_evaluated;
  out.stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

void accumulate(SearchStats& total, const SearchStats& part) {
  const double cap = 9.0e18;
  total.nodes_visited += part.nodes_visited;
  total.exhaustive_tree_nodes = static_cast<std::int64_t>(
      std::min(cap, static_cast<double>(total.exhaustive_tree_nodes) + static_cast<double>(part.exhaustive_tree_nodes)));
  total.subproblems += part.subproblems;
  total.pruned_sram += part.pruned_sram;
  total.pruned_bound += part.pruned_bound;
  total.pruned_incumbent += part.pruned_incumbent;
  total.pruned_dominance += part.pruned_dominance;
  total.pruned_symmetry += part.pruned_symmetry;
  total.memo_hits += part.memo_hits;
  total.candidates_evaluated += part.candidates_evaluated;
  total.block_costs += part.block_costs;
  total.timed_out = total.timed_out || part.timed_out;
  total.wall_s += part.wall_s;
}

SearchResult assemble(const workload::Workload& workload, const wafer::WaferParams& wafer,
                      const cost::CostParams& params, const SearchOptions& options,
                      const std::vector<std::pair<std::string, meshir::Schedule>>& seeds,
                      const std::vector<SearchCandidate>& candidates, const SearchStats& stats) {
  SearchResult result;
  result.stats = stats;
  std::vector<Objectives> all;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    all.push_back(candidates[i].objectives);
    all.back().id = static_cast<std::int64_t>(i);
  }
  const auto front = pareto_front(all);
  std::map<std::int64_t, std::unique_ptr<PlanEvaluator>> builders;  // one per micro-batch count on the front
  for (const auto& o : front) {
    const auto& c = candidates[static_cast<std::size_t>(o.id)];
    FrontPoint p;
    p.objectives = o;
    p.source = c.source;
    p.microbatches = c.microbatches;
    p.sram_headroom = c.sram_headroom;
    if (c.source == "search") {
      auto& builder = builders[c.microbatches];
      if (!builder) {
        builder = std::make_unique<PlanEvaluator>(workload, wafer, params, c.microbatches, options.group_scales,
                                                  options.expert_groups);
      }
      p.schedule = builder->build(c.leaves);
      p.schedule.name = "wavel";
    } else {
      const std::string name = c.source.substr(5);
      const auto seed = std::find_if(seeds.begin(), seeds.end(), [&](const auto& s) { return s.first == name; });
      if (seed == seeds.end()) throw InternalError("front point from unknown seed " + name);
      p.schedule = seed->second;
      p.schedule.name = name;
    }
    int stages = 0;  // pipeline stages, not regions: the expert CUT's strips belong to their block's stage
    for (const auto& op : p.schedule.ops) stages = std::max(stages, op.stage + 1);
    p.stages = stages;
    result.front.push_back(std::move(p));
  }
  // Reference: zero throughput, twice the slowest front latency, every usable PE.
  double worst_latency = 0;
  for (const auto& p : result.front) worst_latency = std::max(worst_latency, p.objectives.latency_s);
  result.reference = HypervolumeReference{2.0 * worst_latency, wafer.usable_pes()};
  result.hypervolume = normalized_hypervolume(front, result.reference);
  return result;
}

SearchResult search_setting(const workload::Workload& workload, const wafer::WaferParams& wafer,
                            const cost::CostParams& params, const SearchOptions& options,
                            const std::vector<std::pair<std::string, meshir::Schedule>>& seeds) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<SearchCandidate> candidates = seed_candidates(workload, wafer, params, seeds);
  SearchStats stats;
  SearchWorkspace workspace;
  for (const auto& piece : search_pieces(workload.shape, wafer, options)) {
    std::vector<Objectives> incumbents;
    for (const auto& c : candidates) incumbents.push_back(c.objectives);
    auto part = workspace.run("", workload, wafer, params, options, piece, pareto_front(incumbents));
    accumulate(stats, part.stats);
    for (auto& c : part.candidates) candidates.push_back(std::move(c));
  }
  stats.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return assemble(workload, wafer, params, options, seeds, candidates, stats);
}

}  // namespace wavel::search
