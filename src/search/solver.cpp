// The CUT/TUNE solver. Partial results carry their interface (first leaf's used rectangle, last
// leaf's used rectangle) so the transfers between leaves are costed exactly as cost::evaluate costs them. Lower
// bounds come from the memoized block-cost table: a block costs at least its cheapest feasible used
// size and TUNE anywhere it could end up below a sub-problem, and a transfer at least its launch and
// its bytes over the widest links the two children allow.
#include "wavel/search/detail/solver.hpp"

#include <algorithm>
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
  return hi + std::log10(1.0 + std::pow(10.0, lo - hi));
}

Solver::Solver(PlanEvaluator::Impl& ev, const SearchOptions& options) : ev_(ev), opt_(options) {
  const auto& blocks = ev_.blocks;
  resident_prefix_.assign(blocks.size() + 1, 0);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    resident_prefix_[i + 1] = resident_prefix_[i] + blocks[i].resident_bytes;
  }
  has_defects_ = !ev_.wafer.defective_pes.empty();
}

void Solver::begin(SearchStats* stats, std::chrono::steady_clock::time_point start) {
  stats_ = stats;
  start_ = start;
}

std::vector<Point> Solver::root_points(const Rect& rect, int chunk, int chunks, const std::vector<Objectives>& incumbents) {
  const int b = static_cast<int>(ev_.blocks.size());
  ++stats_->subproblems;
  std::vector<Point> points;
  if (chunk == 0) points = leaf_points(rect, 0, b);
  if (b >= 2 && opt_.max_cut_depth > 0 && !out_of_time()) cut_points(rect, 0, b, 0, points, RootSlice{chunk, chunks, &incumbents});
  if (!opt_.exhaustive) points = filter(std::move(points), 0, b, true);
  return points;
}

const std::vector<Point>& Solver::solve(const Rect& rect, int a, int b, int depth) {
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

// Size of the unpruned search tree below a sub-problem, whose nodes are partial schedules: every
// leaf used size and TUNE, and every combination a CUT chains from its children's schedules.
// Returns log10 of {complete schedules of the sub-problem, tree nodes}.
std::pair<double, double> Solver::tree_size(std::int64_t w, std::int64_t h, int a, int b, int depth) {
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
  if (opt_.time_limit_s <= 0) return false;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (elapsed > opt_.time_limit_s) stats_->timed_out = true;
  return stats_->timed_out;
}

bool Solver::contains_defect(const Rect& r) const {
  if (!has_defects_) return false;
  for (const auto& pe : ev_.wafer.defective_pes) {
    if (r.contains(pe.x, pe.y)) return true;
  }
  return false;
}

// The block boundary that splits [a, b)'s resident bytes closest to `ratio` (work follows area).
int Solver::split_point(int a, int b, double ratio) const {
  const double total = static_cast<double>(resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)]);
  int best = a + 1;
  double best_gap = kInf;
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

// Divisions of a w x h rectangle along X then Y: two parts at each cut ratio, equal strips, each
// as its parts from the low side to the high side (relative to the rectangle's corner).
std::vector<std::vector<Rect>> Solver::divisions(std::int64_t w, std::int64_t h) const {
  std::vector<std::vector<double>> fractions;
  for (double r : opt_.cut_ratios) fractions.push_back({r, 1.0 - r});
  for (std::int64_t n : opt_.strip_counts) {
    fractions.push_back(std::vector<double>(static_cast<std::size_t>(n), 1.0 / static_cast<double>(n)));
  }
  std::vector<std::vector<Rect>> out;
  for (Axis axis : {Axis::x, Axis::y}) {
    const std::int64_t side = axis == Axis::x ? w : h;
    std::vector<std::vector<std::int64_t>> all_cuts;
    for (const auto& parts : fractions) {
      std::vector<std::int64_t> cuts{0};
      double cumulative = 0;
      for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        cumulative += parts[i];
        cuts.push_back(std::llround(cumulative * static_cast<double>(side)));
      }
      cuts.push_back(side);
      all_cuts.push_back(std::move(cuts));
    }
    // Two-way CUTs at absolute positions: every multiple of search.cut_step_pes inside the side.
    for (std::int64_t p = opt_.cut_step_pes; opt_.cut_step_pes > 0 && p < side; p += opt_.cut_step_pes) {
      all_cuts.push_back({0, p, side});
    }
    for (const auto& cuts : all_cuts) {
      if (std::count(all_cuts.begin(), all_cuts.begin() + (&cuts - all_cuts.data()), cuts) > 0) continue;
      bool ok = true;
      for (std::size_t i = 1; i < cuts.size(); ++i) ok = ok && cuts[i] > cuts[i - 1];
      if (!ok) continue;
      std::vector<Rect> rects;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
        const std::int64_t lo = cuts[i], len = cuts[i + 1] - cuts[i];
        rects.push_back(axis == Axis::x ? Rect{lo, 0, len, h} : Rect{0, lo, w, len});
      }
      out.push_back(std::move(rects));
    }
  }
  return out;
}

// Block boundaries for children with these areas: consecutive blocks at the boundaries closest to
// the area fractions (by resident bytes); with search.sram_boundaries also the two SRAM fills, each
// child in turn (from the first, or from the last) taking as many blocks as its PEs hold, leaving one
// for each child still to come. Each list runs a, then each child's end.
std::vector<std::vector<int>> Solver::boundaries(const std::vector<Rect>& rects, int a, int b, std::int64_t area,
                                                 bool root) const {
  std::vector<std::vector<int>> out;
  const std::size_t n = rects.size();
  std::vector<int> bounds{a};
  double area_before = 0;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    area_before += static_cast<double>(rects[i].pes());
    bounds.push_back(split_point(a, b, area_before / static_cast<double>(area)));
  }
  bounds.push_back(b);
  out.push_back(bounds);
  if (!opt_.sram_boundaries || !root) return out;
  const std::int64_t sram = ev_.wafer.sram_per_pe_bytes;
  const auto held = [&](int from, int to) {
    return resident_prefix_[static_cast<std::size_t>(to)] - resident_prefix_[static_cast<std::size_t>(from)];
  };
  std::vector<int> low{a};
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const int last = b - static_cast<int>(n - 1 - i);  // leave one block per child to come
    int k = low.back() + 1;
    while (k < last && held(low.back(), k + 1) <= rects[i].pes() * sram) ++k;
    low.push_back(k);
  }
  low.push_back(b);
  out.push_back(low);
  std::vector<int> high{b};
  for (std::size_t i = n - 1; i > 0; --i) {
    const int first = a + static_cast<int>(i);  // leave one block per child before
    int k = high.back() - 1;
    while (k > first && held(k - 1, high.back()) <= rects[i].pes() * sram) --k;
    high.push_back(k);
  }
  high.push_back(a);
  std::reverse(high.begin(), high.end());
  out.push_back(high);
  return out;
}

// Root two-way CUTs derived from SRAM need (search.sram_cuts = n): for the n block boundaries k that
// split [a, b) into n + 1 near-equal runs, the position along each axis where the first part has just
// the PEs to hold blocks [a, k)'s weights and KV cache. Only at the root, so the regions below stay
// those of divisions() (which the lower bound enumerates).
std::vector<std::vector<Rect>> Solver::sram_cuts(const Rect& rect, int a, int b) const {
  std::vector<std::vector<Rect>> out;
  const std::int64_t n = opt_.sram_cuts;
  const std::int64_t sram = ev_.wafer.sram_per_pe_bytes;
  for (Axis axis : {Axis::x, Axis::y}) {
    const std::int64_t side = axis == Axis::x ? rect.w : rect.h;
    const std::int64_t across = axis == Axis::x ? rect.h : rect.w;
    for (std::int64_t j = 1; j <= n && b - a >= 2; ++j) {
      const int k = std::clamp(a + static_cast<int>(std::llround(static_cast<double>(j * (b - a)) / static_cast<double>(n + 1))),
                               a + 1, b - 1);
      const std::int64_t need = resident_prefix_[static_cast<std::size_t>(k)] - resident_prefix_[static_cast<std::size_t>(a)];
      const std::int64_t p = std::max<std::int64_t>(1, (need + across * sram - 1) / (across * sram));
      if (p >= side) continue;
      std::vector<Rect> parts = axis == Axis::x ? std::vector<Rect>{Rect{0, 0, p, rect.h}, Rect{p, 0, side - p, rect.h}}
                                                : std::vector<Rect>{Rect{0, 0, rect.w, p}, Rect{0, p, rect.w, side - p}};
      if (std::find(out.begin(), out.end(), parts) == out.end()) out.push_back(std::move(parts));
    }
  }
  return out;
}

// CUT by each division and each of its block boundaries (the SRAM fills at the root only), the
// earlier blocks on the low side or the high side. At the root the high-side variants mirror the
// low-side ones exactly (the model is reflection-invariant) unless defects break the symmetry:
// without `mirrors` they are not generated.
std::vector<Solver::CutOption> Solver::cut_options(const Rect& rect, int a, int b, bool root, bool mirrors) {
  std::vector<CutOption> options;
  std::vector<std::vector<Rect>> all = divisions(rect.w, rect.h);
  if (root) {
    for (auto& parts : sram_cuts(rect, a, b)) all.push_back(std::move(parts));
  }
  for (const auto& parts : all) {
    if (static_cast<int>(parts.size()) > b - a) continue;
    for (bool low_first : {true, false}) {
      if (!low_first && !mirrors && !has_defects_) {
        ++stats_->pruned_symmetry;
        continue;
      }
      std::vector<Rect> rects;
      const std::size_t n = parts.size();
      for (std::size_t i = 0; i < n; ++i) rects.push_back(parts[low_first ? i : n - 1 - i]);
      for (auto& bounds : boundaries(rects, a, b, rect.pes(), root)) {
        bool ok = true;
        for (std::size_t i = 1; i < bounds.size(); ++i) ok = ok && bounds[i] > bounds[i - 1];
        const bool duplicate = std::any_of(options.begin(), options.end(), [&](const CutOption& o) {
          return o.bounds == bounds && o.rects == rects;
        });
        if (ok && !duplicate) options.push_back(CutOption{rects, std::move(bounds)});
      }
    }
  }
  return options;
}

// Used sizes of a leaf holding blocks [a, b) in a w x h region: every pair of the fractions' sides,
// then (search.sram_used_step_pes) the smallest member of each SRAM family that holds the blocks'
// weights and KV cache. Each size once, in this order.
std::vector<std::pair<std::int64_t, std::int64_t>> Solver::used_sizes(std::int64_t w, std::int64_t h, int a,
                                                                       int b) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (auto uw : used_sides(w, opt_.used_fractions)) {
    for (auto uh : used_sides(h, opt_.used_fractions)) sizes.emplace_back(uw, uh);
  }
  const std::int64_t step = opt_.sram_used_step_pes;
  const std::int64_t need = resident_prefix_[static_cast<std::size_t>(b)] - resident_prefix_[static_cast<std::size_t>(a)];
  for (int family = 0; family < kSramFamilies && step > 0; ++family) {
    const std::int64_t members = sram_family_members(family, w, h, step);
    for (std::int64_t k = 1; k <= members; ++k) {
      const auto size = sram_family_size(family, k, w, h, step);
      if (need > size.first * size.second * ev_.wafer.sram_per_pe_bytes) continue;
      if (std::find(sizes.begin(), sizes.end(), size) == sizes.end()) sizes.push_back(size);
      break;
    }
  }
  return sizes;
}

// Offsets of a used_w x used_h rectangle at the corners of `rect` (top-left, top-right, bottom-left,
// bottom-right; each distinct one once) whose PEs are all free of defects: the first of them, or
// every one with search.all_anchors. Without defects the first is the top-left corner.
std::vector<std::pair<std::int64_t, std::int64_t>> Solver::anchors(const Rect& rect, std::int64_t used_w,
                                                                    std::int64_t used_h) const {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  const std::int64_t right = rect.w - used_w, bottom = rect.h - used_h;
  for (const auto& corner : {std::make_pair<std::int64_t, std::int64_t>(0, 0), std::make_pair(right, std::int64_t{0}),
                             std::make_pair(std::int64_t{0}, bottom), std::make_pair(right, bottom)}) {
    if (std::find(out.begin(), out.end(), corner) != out.end()) continue;
    if (contains_defect(Rect{rect.x + corner.first, rect.y + corner.second, used_w, used_h})) continue;
    out.push_back(corner);
    if (!opt_.all_anchors) break;
  }
  return out;
}

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
  const auto holds = [&](std::int64_t w, std::int64_t h) { return need <= w * h * ev_.wafer.sram_per_pe_bytes; };
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> placements;
  std::vector<TableKey> wanted;
  for (const auto& [w, h] : sizes) {
    placements.push_back(holds(w, h) ? anchors(rect, w, h) : std::vector<std::pair<std::int64_t, std::int64_t>>{});
    if (placements.back().empty()) continue;
    for (int t = 0; t < tunes; ++t) {
      for (int type : types) wanted.emplace_back(type, w, h, t);
    }
  }
  ev_.ensure(std::move(wanted));
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const auto [w, h] = sizes[i];
    if (placements[i].empty()) continue;
    // Fastest tune that fits, ties to the lower index: a deterministic parallel reduction.
    CostId best{kInf, INT_MAX};
    const PlanEvaluator::Impl& ev = ev_;
    on_host_space(ev.serial, static_cast<std::size_t>(tunes), 4096, [&](auto space) {
      Kokkos::parallel_reduce(
          "wavel::search::leaf_tune", Kokkos::RangePolicy<decltype(space)>(space, 0, tunes),
          [&](const int t, CostId& acc) {
            const auto c = ev.leaf(a, b, w, h, t);
            const CostId mine{c.fits ? c.cycles : kInf, t};
            if (MinCostId::less(mine, acc)) acc = mine;
          },
          MinCostId(best));
    });
    stats_->tunes_scored += tunes;
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

// The least a block of `type` can cost anywhere below a w x h sub-problem at `depth`: over the used
// sizes of the sub-problem as a leaf and of every region its CUTs can make, and every TUNE under which
// the block alone fits in SRAM (a leaf holding it needs at least that). Infinite: it fits nowhere.
double Solver::min_block(int type, std::int64_t w, std::int64_t h, int depth) {
  const auto key = std::make_tuple(type, w, h, depth);
  if (auto it = min_block_memo_.find(key); it != min_block_memo_.end()) return it->second;
  // Regions too small for the block's weights and KV cache (and every region inside them) cannot
  // hold it: no cost is computed there.
  const std::int64_t sram = ev_.wafer.sram_per_pe_bytes;
  const std::int64_t need = ev_.blocks[static_cast<std::size_t>(ev_.representative[static_cast<std::size_t>(type)])].resident_bytes;
  if (need > w * h * sram) return min_block_memo_.emplace(key, kInf).first->second;
  const int tunes = static_cast<int>(ev_.tunes.size());
  // Every size a leaf holding the block may use here: the fractions' sides, and every member of the
  // SRAM families that holds the block (a leaf with more blocks takes a larger member).
  std::vector<std::pair<std::int64_t, std::int64_t>> sizes;
  for (auto uw : used_sides(w, opt_.used_fractions)) {
    for (auto uh : used_sides(h, opt_.used_fractions)) sizes.emplace_back(uw, uh);
  }
  for (int family = 0; family < kSramFamilies && opt_.sram_used_step_pes > 0; ++family) {
    const std::int64_t members = sram_family_members(family, w, h, opt_.sram_used_step_pes);
    for (std::int64_t k = 1; k <= members; ++k) sizes.push_back(sram_family_size(family, k, w, h, opt_.sram_used_step_pes));
  }
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<TableKey> wanted;
  for (const auto& [uw, uh] : sizes) {
    if (need > uw * uh * sram) continue;
    for (int t = 0; t < tunes; ++t) wanted.emplace_back(type, uw, uh, t);
  }
  ev_.ensure(std::move(wanted));
  double best = kInf;
  for (const auto& [uw, uh] : sizes) {
    if (need > uw * uh * sram) continue;
    for (int t = 0; t < tunes; ++t) {
      const BlockCost& c = ev_.get(type, uw, uh, t);
      if (c.resident + c.buffers <= ev_.wafer.sram_per_pe_bytes) best = std::min(best, c.cycles);
    }
  }
  if (depth < opt_.max_cut_depth) {
    for (const auto& parts : divisions(w, h)) {
      for (const auto& r : parts) best = std::min(best, min_block(type, r.w, r.h, depth + 1));
    }
  }
  return min_block_memo_.emplace(key, best).first->second;
}

// Lower bounds on a CUT option's pass (its children one after another, and the transfers between
// them) and on its slowest stage (every block lies in some leaf).
std::pair<double, double> Solver::lower_bounds(const CutOption& c, int depth) {
  double pass_lb = 0, stage_lb = 0;
  for (std::size_t j = 0; j < c.rects.size(); ++j) {
    for (int i = c.bounds[j]; i < c.bounds[j + 1]; ++i) {
      const double m = min_block(ev_.blocks[static_cast<std::size_t>(i)].type, c.rects[j].w, c.rects[j].h, depth + 1);
      pass_lb += m;
      stage_lb = std::max(stage_lb, m);
    }
    if (j > 0) {
      // Leaves inside the children are no wider than them: the transfer uses at most this many links.
      const std::int64_t lanes = std::min({c.rects[j - 1].w, c.rects[j - 1].h, c.rects[j].w, c.rects[j].h});
      const Rect same{0, 0, lanes, lanes};
      pass_lb += ev_.transfer(same, same, c.bounds[j] - 1);
    }
  }
  return {pass_lb, stage_lb};
}

// Below the root, a point found here beats every point of the option wherever the sub-problem is
// used only if it is faster by more than the most the option's first and last regions (somewhere in
// its first and last children) can change the transfers in and out. At the root there is no outside.
bool Solver::bound_pruned(const CutOption& c, const std::vector<Point>& points, double pass_lb, double stage_lb,
                          bool root) const {
  const int a = c.bounds.front(), b = c.bounds.back();
  for (const auto& p : points) {
    if (p.stage > stage_lb || p.pass > pass_lb) continue;
    if (root) return true;
    const double margin = reach_margin(p.entry, c.rects.front(), a - 1) + reach_margin(p.exit, c.rects.back(), b - 1);
    if (p.pass + margin <= pass_lb) return true;
  }
  return false;
}

// A root option is hopeless if a schedule already found strictly dominates the best objectives it
// could reach: its lower bounds and the footprint's PEs. Safe, so pruning by incumbents never changes
// the front, only the work.
bool Solver::incumbent_beats(double pass_lb, double stage_lb, std::int64_t pes, const std::vector<Objectives>& incumbents) const {
  if (incumbents.empty() || opt_.exhaustive) return false;
  const Objectives best = ev_.objectives(pass_lb, stage_lb, pes);
  return std::any_of(incumbents.begin(), incumbents.end(), [&](const Objectives& o) { return dominates(o, best); });
}

// The most moving one end of the transfer of `after_block`'s output from region p to any region
// inside `region` can change its cost (see end_margin).
double Solver::reach_margin(const Rect& p, const Rect& region, int after_block) const {
  const std::size_t next = static_cast<std::size_t>(after_block) + 1;
  if (after_block < 0 || next >= ev_.blocks.size()) return 0.0;
  const std::int64_t cx = 2 * p.x + p.w, cy = 2 * p.y + p.h;
  const std::int64_t dx = std::max(std::llabs(cx - 2 * region.x), std::llabs(cx - 2 * (region.x + region.w))) / 2 + 1;
  const std::int64_t dy = std::max(std::llabs(cy - 2 * region.y), std::llabs(cy - 2 * (region.y + region.h))) / 2 + 1;
  const double narrow_p = static_cast<double>(std::min(p.w, p.h));
  const double narrow_r = static_cast<double>(std::min(region.w, region.h));
  const double links = std::max(1.0 - 1.0 / narrow_p, 1.0 / narrow_p - 1.0 / narrow_r);
  const double bytes = static_cast<double>(ev_.blocks[static_cast<std::size_t>(after_block)].output_bytes);
  return ev_.block_scale[next] * (ev_.params.alpha_cycles_per_hop * static_cast<double>(dx + dy) +
                                  bytes / static_cast<double>(ev_.wafer.link_bytes_per_cycle) * std::max(0.0, links));
}

// Largest change moving one end of the transfer of `after_block`'s output from region p to region q
// can make to its cost: alpha per hop the centre moves (one more per axis for rounding), and the link
// term through the narrowest side; scaled as the receiving block's steps.
double Solver::end_margin(const Rect& p, const Rect& q, int after_block) const {
  const std::size_t next = static_cast<std::size_t>(after_block) + 1;
  if (p == q || after_block < 0 || next >= ev_.blocks.size()) return 0.0;
  const std::int64_t moved = std::llabs((2 * p.x + p.w) - (2 * q.x + q.w)) / 2 + 1 +
                             std::llabs((2 * p.y + p.h) - (2 * q.y + q.h)) / 2 + 1;
  const double bytes = static_cast<double>(ev_.blocks[static_cast<std::size_t>(after_block)].output_bytes);
  const double narrow_p = static_cast<double>(std::min(p.w, p.h));
  const double narrow_q = static_cast<double>(std::min(q.w, q.h));
  return ev_.block_scale[next] *
         (ev_.params.alpha_cycles_per_hop * static_cast<double>(moved) +
          bytes / static_cast<double>(ev_.wafer.link_bytes_per_cycle) * std::abs(1.0 / narrow_p - 1.0 / narrow_q));
}

// p is at least as good as q wherever the sub-problem [a, b) is used: no more PEs, no slower stage,
// and a pass shorter by more than a different first and last region can add to the transfers.
bool Solver::dominates_everywhere(const Point& p, const Point& q, int a, int b) const {
  if (p.stage > q.stage || p.pes > q.pes) return false;
  return p.pass + end_margin(p.entry, q.entry, a - 1) + end_margin(p.exit, q.exit, b - 1) <= q.pass;
}

// Drops points dominated in every context (of mutually dominating points, the earlier stays). At the
// root there is no context and the PEs may be left out of the objectives.
std::vector<Point> Solver::filter(std::vector<Point> points, int a, int b, bool root) {
  std::vector<std::size_t> order(points.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
    return std::make_tuple(points[i].pass, points[i].stage, i) < std::make_tuple(points[j].pass, points[j].stage, j);
  });
  std::vector<Point> kept;
  for (std::size_t i : order) {
    const Point& q = points[i];
    const bool dominated = std::any_of(kept.begin(), kept.end(), [&](const Point& k) {
      if (root) return k.stage <= q.stage && k.pass <= q.pass && (k.pes <= q.pes || !opt_.objectives.pes);
      return dominates_everywhere(k, q, a, b);
    });
    if (dominated) {
      ++stats_->pruned_dominance;
    } else {
      kept.push_back(q);
    }
  }
  return kept;
}

void Solver::cut_points(const Rect& rect, int a, int b, int depth, std::vector<Point>& points, const RootSlice& slice) {
  const std::int64_t sram = ev_.wafer.sram_per_pe_bytes;
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
    points.insert(points.end(), chain.begin(), chain.end());
  }
}

}  // namespace wavel::search::detail
