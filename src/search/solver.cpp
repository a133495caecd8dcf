// The CUT/TUNE solver. Partial results carry their interface (first leaf's used rectangle, last
// leaf's used rectangle) so the transfers between leaves are costed exactly as cost::evaluate costs them. Lower
// bounds come from the memoized block-cost table: a block costs at least its cheapest feasible used
// size and TUNE anywhere it could end up below a sub-problem, and a transfer at least its launch and
// its bytes over the widest links the two children allow. The space it walks is space.cpp, the
// pruning rules pruning.cpp, the square layouts squares.cpp.
#include "wavel/search/detail/solver.hpp"

#include <algorithm>
#include <set>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace wavel::search::detail {

namespace {

using meshir::Axis;
using meshir::Rect;

constexpr double kInf = std::numeric_limits<double>::infinity();

Rect shifted(const Rect& r, std::int64_t dx, std::int64_t dy) { return Rect{r.x + dx, r.y + dy, r.w, r.h}; }

// Which chunk takes root option `index`: a hash of the seed and the index, so the split (and with it
// the order in which pruning meets points) follows search.seed, never the rank count.
int chunk_of(std::int64_t seed, std::size_t index, int chunks) {
  std::uint64_t z = static_cast<std::uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(index) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<int>(z % static_cast<std::uint64_t>(chunks));
}

}  // namespace

double log10_add(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double hi = std::max(a, b), lo = std::min(a, b);
  // Below 10^-16 the smaller adds nothing: 1 + x rounds to exactly 1 (x < 2^-53), so skip the pow.
  if (lo - hi < -16.0) return hi;
  return hi + std::log10(1.0 + std::pow(10.0, lo - hi));
}

Solver::Solver(PlanEvaluator::Impl& ev, const SearchOptions& options) : ev_(ev), opt_(options) {
  const auto& blocks = ev_.blocks;
  resident_prefix_.assign(blocks.size() + 1, 0);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    resident_prefix_[i + 1] = resident_prefix_[i] + blocks[i].resident_bytes;
  }
  has_defects_ = !ev_.wafer.defective_pes.empty();
  if (has_defects_) defects_ = wafer::DefectIndex(ev_.wafer);
}

void Solver::begin(SearchStats* stats, std::chrono::steady_clock::time_point start) {
  stats_ = stats;
  start_ = start;
}

std::vector<Point> Solver::root_points(const Rect& rect, int chunk, int chunks, const std::vector<Objectives>& incumbents) {
  const int b = static_cast<int>(ev_.blocks.size());
  ++stats_->subproblems;
  std::vector<Point> points;
  if (chunk == 0) {
    points = leaf_points(rect, 0, b);
    add_crossings(points);
  }
  if (b >= 2 && opt_.max_cut_depth > 0 && !out_of_time()) cut_points(rect, 0, b, 0, points, RootSlice{chunk, chunks, &incumbents});
  if (!opt_.exhaustive) points = filter(std::move(points), 0, b, true);
  return points;
}

const std::vector<Point>& Solver::solve(const Rect& rect, int a, int b, int depth) {
  check_stop();
  ++stats_->subproblems;
  const bool positional = has_defects_ && contains_defect(rect);
  const auto key = std::make_tuple(rect.w, rect.h, a, b, depth, positional ? rect.x : -1, positional ? rect.y : -1);
  if (auto it = memo_.find(key); it != memo_.end()) {
    ++stats_->memo_hits;
    return it->second;
  }
  std::vector<Point> points = leaf_points(rect, a, b);
  if (b - a >= 2 && depth < opt_.max_cut_depth && !out_of_time()) cut_points(rect, a, b, depth, points, RootSlice{0, 1, nullptr});
  if (!opt_.exhaustive) points = filter(std::move(points), a, b, false);
  return memo_.emplace(key, std::move(points)).first->second;
}

double Solver::tree_log10(const Rect& rect) {
  return tree_size(rect.w, rect.h, 0, static_cast<int>(ev_.blocks.size()), 0).second;
}

std::int64_t Solver::top_cut_options(const Rect& rect, std::int64_t limit) {
  const int blocks = static_cast<int>(ev_.blocks.size());
  if (blocks < 2 || opt_.max_cut_depth <= 0) return 0;
  const auto root = cut_options(Rect{0, 0, rect.w, rect.h}, 0, blocks, true, /*mirrors=*/false);
  std::map<std::tuple<std::int64_t, std::int64_t, int, int>, std::int64_t> below;
  std::int64_t count = static_cast<std::int64_t>(root.size());
  for (const auto& c : root) {
    for (std::size_t i = 0; i < c.rects.size(); ++i) {
      const int a = c.bounds[i], b = c.bounds[i + 1];
      if (b - a < 2 || opt_.max_cut_depth < 2) continue;
      const auto key = std::make_tuple(c.rects[i].w, c.rects[i].h, a, b);
      auto it = below.find(key);
      if (it == below.end()) {
        check_stop();
        const auto n = static_cast<std::int64_t>(cut_options(Rect{0, 0, c.rects[i].w, c.rects[i].h}, a, b, false, true).size());
        it = below.emplace(key, n).first;
      }
      count += it->second;
      if (count > limit) return count;
    }
  }
  return count;
}

// Size of the unpruned search tree below a sub-problem, whose nodes are partial schedules: every
// leaf used size and TUNE, and every combination a CUT chains from its children's schedules.
// Returns log10 of {complete schedules of the sub-problem, tree nodes}.
std::pair<double, double> Solver::tree_size(std::int64_t w, std::int64_t h, int a, int b, int depth) {
  check_stop();
  const auto key = std::make_tuple(w, h, a, b, depth);
  if (auto it = tree_memo_.find(key); it != tree_memo_.end()) return it->second;
  // Shapes only: every distinct corner with all_anchors, else one (defects are not looked at here).
  std::size_t placements = 0;
  for (const auto& [uw, uh] : used_sizes(w, h, a, b)) {
    placements += opt_.all_anchors ? static_cast<std::size_t>((uw < w ? 2 : 1) * (uh < h ? 2 : 1)) : 1;
  }
  const double leaves = std::log10(static_cast<double>(ev_.tunes.size() * std::max<std::size_t>(1, placements)));
  double schedules = leaves, nodes = leaves;
  if (b - a >= 2 && depth < opt_.max_cut_depth) {
    for (const auto& c : cut_options(Rect{0, 0, w, h}, a, b, depth == 0, /*mirrors=*/true)) {
      double chained = 0;
      for (std::size_t i = 0; i < c.rects.size(); ++i) {
        const auto [s, t] = tree_size(c.rects[i].w, c.rects[i].h, c.bounds[i], c.bounds[i + 1], depth + 1);
        nodes = log10_add(nodes, t);
        chained += s;
        if (i > 0) nodes = log10_add(nodes, chained);
      }
      schedules = log10_add(schedules, chained);
    }
  }
  return tree_memo_.emplace(key, std::make_pair(schedules, nodes)).first->second;
}

void Solver::leaves_of(int id, const Rect& rect, std::vector<Leaf>& out) const {
  const Plan& p = plans_[static_cast<std::size_t>(id)];
  if (p.leaf) {
    out.push_back(Leaf{rect, p.used_w, p.used_h, p.tune, p.a, p.b, p.used_dx, p.used_dy});
    return;
  }
  for (int i = 0; i < 2; ++i) leaves_of(p.parts[i], shifted(p.offsets[i], rect.x, rect.y), out);
}

bool Solver::out_of_time() {
  check_stop();
  if (opt_.time_limit_s <= 0) return false;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed > opt_.time_limit_s) stats_->timed_out = true;
  return stats_->timed_out;
}

void Solver::check_stop() const {
  // Outside any parallel region, and memo entries are only added once complete, so a throw here
  // leaves the solver consistent.
  if (opt_.stop_flag != nullptr && opt_.stop_flag->load(std::memory_order_relaxed) != 0) throw Cancelled{};
}

bool Solver::contains_defect(const Rect& r) const {
  return has_defects_ && defects_.count(r.x, r.y, r.w, r.h) > 0;
}

const std::vector<int>& Solver::distinct_tunes(const std::vector<int>& types) {
  if (const auto it = distinct_tunes_.find(types); it != distinct_tunes_.end()) return it->second;
  std::vector<int> out;
  std::set<std::vector<int>> seen;
  for (int t = 0; t < static_cast<int>(ev_.tunes.size()); ++t) {
    std::vector<int> placement;
    for (int type : types) placement.push_back(ev_.same_placement[static_cast<std::size_t>(type)][static_cast<std::size_t>(t)]);
    if (seen.insert(std::move(placement)).second) out.push_back(t);
  }
  return distinct_tunes_.emplace(types, std::move(out)).first->second;
}

// The fastest TUNE that fits blocks [a, b) on a w x h used rectangle, ties to the lower index: a
// deterministic parallel reduction over the TUNEs that place the blocks differently, each type's
// cost looked up once per TUNE.
CostId Solver::best_tune(int a, int b, std::int64_t w, std::int64_t h, const std::vector<int>& types) {
  const std::vector<int>& tunes = distinct_tunes(types);
  const auto n = static_cast<int>(tunes.size());
  const std::size_t ntypes = ev_.representative.size();
  by_tune_.assign(tunes.size() * ntypes, nullptr);  // types outside [a, b) stay null
  for (int type : types) {
    for (int i = 0; i < n; ++i) {
      by_tune_[static_cast<std::size_t>(i) * ntypes + static_cast<std::size_t>(type)] =
          &ev_.get(type, w, h, tunes[static_cast<std::size_t>(i)]);
    }
  }
  CostId best{kInf, INT_MAX};
  const PlanEvaluator::Impl& ev = ev_;
  const BlockCost* const* costs = by_tune_.data();
  const int* ids = tunes.data();
  on_host_space(ev.serial, tunes.size(), 4096, [&](auto space) {
    Kokkos::parallel_reduce(
        "wavel::search::leaf_tune", Kokkos::RangePolicy<decltype(space)>(space, 0, n),
        [&](const int i, CostId& acc) {
          const auto c = ev.leaf_of(a, b, costs + static_cast<std::size_t>(i) * ntypes);
          const CostId mine{c.fits ? c.cycles : kInf, ids[i]};
          if (MinCostId::less(mine, acc)) acc = mine;
        },
        MinCostId(best));
  });
  stats_->tunes_scored += n;
  return best;
}

namespace {

// (a, b, used width, used height) in 64 bits, or 0 when a field does not fit (then nothing is memoized).
std::uint64_t leaf_key(int a, int b, std::int64_t w, std::int64_t h) {
  if (a < 0 || b >= (1 << 12) || w < 1 || h < 1 || w >= (1 << 20) || h >= (1 << 20)) return 0;
  return (static_cast<std::uint64_t>(a) << 52) | (static_cast<std::uint64_t>(b) << 40) |
         (static_cast<std::uint64_t>(w) << 20) | static_cast<std::uint64_t>(h);
}

}  // namespace

std::vector<Point> Solver::leaf_points(const Rect& rect, int a, int b) {
  std::vector<Point> points;
  const auto sizes = used_sizes(rect.w, rect.h, a, b);
  const int tunes = static_cast<int>(ev_.tunes.size());
  std::vector<int> types;
  for (int i = a; i < b; ++i) types.push_back(ev_.blocks[static_cast<std::size_t>(i)].type);
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  // A used rectangle whose PEs cannot hold the blocks' weights and KV cache is no candidate
  // (per-PE residency is at least the even share), so its costs are never computed. Nor is one
  // that no corner of the region can hold free of defective PEs (MeshIR's rule for used rectangles).
  const std::int64_t need = resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)];
  const auto holds = [&](std::int64_t w, std::int64_t h) { return need <= w * h * ev_.wafer.sram_data_per_pe_bytes(); };
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> placements;
  std::vector<TableKey> wanted;
  const auto known = [&](std::int64_t w, std::int64_t h) {
    const std::uint64_t key = leaf_key(a, b, w, h);
    return key != 0 && leaf_best_.count(key) != 0;
  };
  for (const auto& [w, h] : sizes) {
    placements.push_back(holds(w, h) ? anchors(rect, w, h) : std::vector<std::pair<std::int64_t, std::int64_t>>{});
    if (placements.back().empty()) continue;
    if (!opt_.exhaustive && known(w, h)) continue;  // its choice is memoized: no costs needed
    for (int type : types) {  // a type's TUNEs lie side by side (detail::CostTable); the others share theirs
      for (const int t : ev_.own_placements[static_cast<std::size_t>(type)]) {
        if (!ev_.has(type, w, h, t)) wanted.emplace_back(type, w, h, t);
      }
    }
  }
  ev_.ensure(std::move(wanted));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    // Plain copies: C++17 lambdas cannot capture structured bindings (clang refuses).
    const int w = sizes[i].first;
    const int h = sizes[i].second;
    if (placements[i].empty()) continue;
    const std::uint64_t key = opt_.exhaustive ? 0 : leaf_key(a, b, w, h);
    CostId best{kInf, INT_MAX};
    if (const auto it = key != 0 ? leaf_best_.find(key) : leaf_best_.end(); it != leaf_best_.end()) {
      best = it->second;
    } else {
      best = best_tune(a, b, w, h, types);
      if (key != 0) leaf_best_.emplace(key, best);
    }
    if (!std::isfinite(best.cost)) continue;
    for (const auto& [dx, dy] : placements[i]) {
      const Rect used{dx, dy, w, h};
      if (opt_.exhaustive) {
        // Keep every feasible tune: exhaustive mode does no dominance pruning.
        for (int t = 0; t < tunes; ++t) {
          const auto c = ev_.leaf(a, b, w, h, t);
          if (c.fits) points.push_back(leaf_point(rect, a, b, used, t, c.cycles));
        }
      } else {
        stats_->pruned_tune += tunes - 1;  // same region and interface, slower or equal: dominated
        points.push_back(leaf_point(rect, a, b, used, best.id, best.cost));
      }
    }
  }
  return points;
}

Point Solver::leaf_point(const Rect& rect, int a, int b, const Rect& used, int tune, double cycles) {
  Plan p;
  p.a = a;
  p.b = b;
  p.used_w = used.w;
  p.used_h = used.h;
  p.used_dx = used.x;
  p.used_dy = used.y;
  p.tune = tune;
  plans_.push_back(p);
  ++stats_->nodes_visited;
  Point pt;
  pt.offset = Rect{0, 0, rect.w, rect.h};
  pt.pass = cycles;
  pt.stage = cycles;
  pt.entry = used;  // transfers start and end on the used PEs
  pt.exit = used;
  pt.plan = static_cast<int>(plans_.size()) - 1;
  pt.pes = rect.pes();
  return pt;
}

void Solver::cut_points(const Rect& rect, int a, int b, int depth, std::vector<Point>& points, const RootSlice& slice) {
  const std::int64_t sram = ev_.wafer.sram_data_per_pe_bytes();
  const bool root = slice.incumbents != nullptr;
  const auto options = cut_options(rect, a, b, depth == 0, /*mirrors=*/depth > 0);
  for (std::size_t index = 0; index < options.size(); ++index) {
    if (root && chunk_of(opt_.seed, index, slice.chunks) != slice.chunk) continue;
    const CutOption& c = options[index];
    ++stats_->cut_options;
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
    if (!opt_.exhaustive) {
      const auto [pass_lb, stage_lb] = lower_bounds(c, depth);
      if (!std::isfinite(pass_lb)) {  // a block fits in no leaf its child can make
        ++stats_->pruned_sram;
        continue;
      }
      if (bound_pruned(c, points, pass_lb, stage_lb, root)) {
        ++stats_->pruned_bound;
        continue;
      }
      if (root && incumbent_beats(pass_lb, stage_lb, rect.pes(), *slice.incumbents)) {
        ++stats_->pruned_incumbent;
        continue;
      }
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
          q.pes = rect.pes();
          next.push_back(q);
          ++stats_->nodes_visited;
        }
      }
      chain = opt_.exhaustive || i + 1 == c.rects.size() ? std::move(next) : filter(std::move(next), a, c.bounds[i + 1], false);
    }
    if (root) add_crossings(chain);
    points.insert(points.end(), chain.begin(), chain.end());
  }
}

void Solver::add_crossings(std::vector<Point>& points) const {
  if (!ev_.crossings.any()) return;
  for (Point& p : points) p.pass += ev_.crossings.legs(p.entry, p.exit, ev_.wafer, ev_.params);
}

}  // namespace wavel::search::detail
