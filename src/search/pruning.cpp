// Pruning of the CUT/TUNE solver: admissible lower bounds from the block-cost table, the bound and
// incumbent tests, and dominance of partial schedules in every context (see solver.hpp).
#include "wavel/search/detail/solver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace wavel::search::detail {

namespace {

using meshir::Rect;

constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

// The least a block of `type` can cost anywhere below a w x h sub-problem at `depth`: over the used
// sizes of the sub-problem as a leaf and of every region its CUTs can make, and every TUNE under which
// the block alone fits in SRAM (a leaf holding it needs at least that). Infinite: it fits nowhere.
double Solver::min_block(int type, std::int64_t w, std::int64_t h, int depth) {
  const auto key = std::make_tuple(type, w, h, depth);
  if (auto it = min_block_memo_.find(key); it != min_block_memo_.end()) return it->second;
  // Regions too small for the block's weights and KV cache (and every region inside them) cannot
  // hold it: no cost is computed there.
  const std::int64_t sram = ev_.wafer.sram_data_per_pe_bytes();
  const std::int64_t need = ev_.blocks[static_cast<std::size_t>(ev_.representative[static_cast<std::size_t>(type)])].resident_bytes;
  if (need > w * h * sram) return min_block_memo_.emplace(key, kInf).first->second;
  const std::vector<int>& tunes = ev_.own_placements[static_cast<std::size_t>(type)];  // the others share their costs
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
    for (const int t : tunes) wanted.emplace_back(type, uw, uh, t);
  }
  ev_.ensure(std::move(wanted));
  double best = kInf;
  for (const auto& [uw, uh] : sizes) {
    if (need > uw * uh * sram) continue;
    for (const int t : tunes) {
      const BlockCost& c = ev_.get(type, uw, uh, t);
      if (c.resident + c.buffers <= ev_.wafer.sram_data_per_pe_bytes()) best = std::min(best, c.cycles);
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
  // A pipeline part's own ends: its crossing's leg from (to) the I/O edge. Any rectangle inside the
  // region is no nearer the edge and no wider than the region, so its leg is no cheaper.
  const auto& x = ev_.crossings;
  if (after_block < 0) return std::max(0.0, x.in_leg(p, ev_.wafer, ev_.params) - x.in_leg(region, ev_.wafer, ev_.params));
  if (next >= ev_.blocks.size()) {
    return std::max(0.0, x.out_leg(p, ev_.wafer, ev_.params) - x.out_leg(region, ev_.wafer, ev_.params));
  }
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
  if (p == q) return 0.0;
  // A pipeline part's own ends: the legs of its crossings. Their difference is the same wherever
  // the sub-problem lies (hops to the edge change with both ends alike), so it is exact here.
  const auto& x = ev_.crossings;
  if (after_block < 0) return std::max(0.0, x.in_leg(p, ev_.wafer, ev_.params) - x.in_leg(q, ev_.wafer, ev_.params));
  if (next >= ev_.blocks.size()) return std::max(0.0, x.out_leg(p, ev_.wafer, ev_.params) - x.out_leg(q, ev_.wafer, ev_.params));
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

}  // namespace wavel::search::detail
